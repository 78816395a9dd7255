import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, DEFAULT_INHERITED_ENV_VARS } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { log } from '../../core/log';
import { fail, type ToolResult } from '../../core/results';
import type { DynamicTool } from '../tools';
import type { McpServerConfig, McpSetup } from './config';
import { bmadReference, describeTool, functionName, parametersOf } from './names';

/**
 * `idle`: not used yet (connections are made on first use); `connecting`; `ready`; `down`: the
 * last attempt or call failed, or the process ended (the next use connects again);
 * `unconfigured`: a variable it names is not set.
 */
export type McpServerState = 'idle' | 'connecting' | 'ready' | 'down' | 'unconfigured';

/** What /api/health and a project's settings show of a server: never its command, URL or variables. */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: McpServerState;
  /** Tools it offers, once listed. */
  tools: string[] | null;
  /** Why it is down or unconfigured, in words (no paths, no values). */
  problem?: string;
  /** Times it was (re)connected after the first. */
  restarts: number;
  projects?: string[];
}

/** One server's tool as a project's settings show it. */
export interface McpToolInfo {
  /** The function name (`<server>__<tool>`). */
  name: string;
  /** The server's own name for it. */
  tool: string;
  /** How BMAD's skills name it (`server:tool`). */
  reference: string;
}

/** A server a project's agents may use, with its tools (once listed). */
export interface McpProjectServer extends Omit<McpServerStatus, 'tools'> {
  tools: McpToolInfo[];
}

export interface McpHub {
  readonly file: string | null;
  servers(): readonly McpServerConfig[];
  status(): McpServerStatus[];
  /** Whether an agent of this project (undefined: a bundle agent) gets the server's tools. */
  allows(server: string, projectId: string | undefined): boolean;
  /**
   * The tools a turn of this project offers: every allowed server's, listed on first use (each
   * server waits at most its timeoutMs). A server that cannot be reached offers the tools it
   * listed before, if any: calling them is a tool error, and connects it again. A list is read
   * again when the server sends tools/list_changed, and in the background when it is used more
   * than RELIST_AFTER_MS after it was read (servers that change their tools without saying so).
   */
  toolsFor(projectId: string | undefined): Promise<DynamicTool[]>;
  /**
   * The servers this project's agents may use, with their states and the tools known so far;
   * `list`: reach each server not listed yet first (it is started if needed).
   */
  forProject(projectId: string | undefined, options?: { list?: boolean }): Promise<McpProjectServer[]>;
  /** The tool names a server offers, listing them if needed; null when it cannot be reached. */
  toolNames(server: string): Promise<string[] | null>;
  close(): Promise<void>;
}

/** OpenAI takes at most 128 tools a request: what one server may add, and all of them together. */
const MAX_TOOLS_PER_SERVER = 64;
const MAX_DYNAMIC_TOOLS = 100;
const MAX_LIST_PAGES = 10;
/** How long a turn waits for a server's first tool list before it starts without its tools. */
const TURN_LIST_WAIT_MS = 10_000;
/** A server whose connection failed is not tried again for a turn's tool list within this time (a call still tries). */
const RETRY_AFTER_MS = 15_000;
/**
 * A connected server's tool list is read again, in the background, when used this long after it
 * was last read: a server that changes its tools without sending tools/list_changed leaves each
 * instance of the app behind by at most this (and one turn).
 */
export const RELIST_AFTER_MS = 60_000;

export interface McpHubOptions {
  /** RELIST_AFTER_MS, shorter in tests. */
  relistAfterMs?: number;
}

// What an MCP server's child process may never inherit, even from the SDK's own defaults: only PATH and what `env` names.
const NOT_INHERITED = Object.fromEntries(DEFAULT_INHERITED_ENV_VARS.filter((k) => k !== 'PATH').map((k) => [k, undefined]));

/** An error in words a model and a browser may see: its code, never its text (which may hold paths or URLs). */
function reasonOf(e: unknown): string {
  const err = e as { code?: unknown; name?: string; message?: string } | undefined;
  const cause = (e as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof err?.code === 'string' ? err.code : typeof cause?.code === 'string' ? cause.code : undefined;
  if (code) return code;
  if (e instanceof StreamableHTTPError && typeof e.code === 'number') return `HTTP ${e.code}`;
  if (typeof err?.code === 'number') {
    if (err.code === -32000 || err.code === -32001) return err.code === -32001 ? 'request timed out' : 'connection closed';
    return `MCP error ${err.code}`;
  }
  if (err?.name === 'AbortError') return 'aborted';
  if (/ECONNREFUSED|fetch failed/i.test(err?.message ?? '')) return 'connection refused';
  if (/HTTP (\d{3})/.test(err?.message ?? '')) return `HTTP ${/HTTP (\d{3})/.exec(err!.message!)![1]}`;
  return 'not reachable';
}

/** An MCP tool result as the model gets it: its text, its structured content, and what else it held. */
export function toToolResult(server: string, tool: string, result: CallToolResult): ToolResult {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    if (item.type === 'text') parts.push(item.text);
    else if (item.type === 'image' || item.type === 'audio') parts.push(`[${item.type} ${item.mimeType}, ${Math.floor((item.data.length * 3) / 4)} bytes, not shown]`);
    else if (item.type === 'resource') parts.push('text' in item.resource && typeof item.resource.text === 'string' ? item.resource.text : `[resource ${item.resource.uri}]`);
    else if (item.type === 'resource_link') parts.push(`[resource ${item.uri}${item.name ? ` (${item.name})` : ''}]`);
  }
  const content = parts.join('\n');
  if (result.isError) {
    return fail('E_EXTERNAL_TOOL', `${bmadReference(server, tool)} answered with an error: ${content.slice(0, 2_000) || '(no message)'}`, { details: { server, tool } });
  }
  return {
    ok: true,
    server,
    tool,
    content,
    ...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}),
  };
}

class Connection {
  state: McpServerState;
  problem?: string;
  restarts = 0;
  tools: McpTool[] | null = null;
  /** When the last connection attempt failed (performance.now()), null after a success. */
  failedAt: number | null = null;
  /** When the tool list was last read, or an attempt to read it again started (performance.now()). */
  private listedAt = 0;
  private relisting: Promise<void> | null = null;
  /** A change was announced while a list was being read: that list may predate it. */
  private changedMeanwhile = false;
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private connectedOnce = false;
  private closed = false;

  constructor(readonly config: McpServerConfig) {
    this.state = config.problem ? 'unconfigured' : 'idle';
    if (config.problem) this.problem = config.problem;
  }

  private transport() {
    const c = this.config;
    if (c.transport === 'http') {
      return new StreamableHTTPClientTransport(new URL(c.url!), { requestInit: { headers: c.headers } });
    }
    return new StdioClientTransport({
      command: c.command!,
      args: c.args,
      ...(c.cwd ? { cwd: c.cwd } : {}),
      // undefined drops the SDK's inherited defaults (HOME, USER, ...): the child gets PATH and what `env` names.
      env: { ...NOT_INHERITED, PATH: process.env.PATH ?? '/usr/bin:/bin', ...c.env } as Record<string, string>,
      stderr: 'ignore',
    });
  }

  private markDown(reason: string) {
    if (this.closed) return;
    this.state = 'down';
    this.problem = reason;
  }

  /** Every page of the server's tools (at most MAX_LIST_PAGES), cut to MAX_TOOLS_PER_SERVER. */
  private async listTools(client: Client): Promise<McpTool[]> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.config.timeoutMs });
      tools.push(...listed.tools);
      cursor = listed.nextCursor;
      if (!cursor || tools.length >= MAX_TOOLS_PER_SERVER) break;
    }
    if (tools.length > MAX_TOOLS_PER_SERVER) log.warn('mcp.tools_cut', { server: this.config.name, offered: tools.length, kept: MAX_TOOLS_PER_SERVER });
    return tools.slice(0, MAX_TOOLS_PER_SERVER);
  }

  /**
   * Reads the tool list again on the live client. One read at a time; a change announced during
   * a read gets one more. A read that fails keeps the list the server gave before (a call to a
   * tool it dropped is the server's own error), and leaves the connection as it is.
   */
  relist(): Promise<void> {
    if (this.relisting) {
      this.changedMeanwhile = true;
      return this.relisting;
    }
    this.relisting = (async () => {
      do {
        this.changedMeanwhile = false;
        const client = this.client;
        if (!client || this.closed) return;
        this.listedAt = performance.now();
        try {
          const tools = await this.listTools(client);
          if (this.client !== client || this.closed) return;
          const before = new Set(this.tools?.map((t) => t.name));
          this.tools = tools;
          const added = tools.filter((t) => !before.has(t.name)).length;
          log.info('mcp.relisted', { server: this.config.name, tools: tools.length, added, removed: before.size - (tools.length - added) });
        } catch (e) {
          log.warn('mcp.relist_failed', { server: this.config.name, reason: reasonOf(e) });
          return;
        }
      } while (this.changedMeanwhile);
    })().finally(() => {
      this.relisting = null;
    });
    return this.relisting;
  }

  /** Starts a read of the list in the background when it is older than `afterMs` (a turn never waits for it). */
  relistIfStale(afterMs: number): void {
    if (this.client && !this.relisting && performance.now() - this.listedAt >= afterMs) void this.relist();
  }

  /** The live client, connecting (again) when there is none; each attempt waits at most timeoutMs. */
  connect(): Promise<Client> {
    if (this.config.problem) return Promise.reject(Object.assign(new Error(this.config.problem), { code: 'unconfigured' }));
    if (this.closed) return Promise.reject(Object.assign(new Error('closed'), { code: 'closed' }));
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      this.state = 'connecting';
      const started = performance.now();
      const client = new Client({ name: 'bmad-orchestrator', version: '1.0.0' }, { capabilities: {} });
      const transport = this.transport();
      // Handled whether or not the server advertises tools.listChanged (the SDK's listChanged option
      // would ignore a server that sends it without saying so), and read with every page.
      let changedWhileConnecting = false;
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        if (this.client === client) void this.relist();
        else changedWhileConnecting = true;
      });
      try {
        await client.connect(transport, { timeout: this.config.timeoutMs });
        const listedAt = performance.now();
        const tools = await this.listTools(client);
        if (this.closed) throw Object.assign(new Error('closed'), { code: 'closed' });
        this.tools = tools;
        this.listedAt = listedAt;
      } catch (e) {
        await client.close().catch(() => undefined);
        const reason = reasonOf(e);
        this.markDown(reason);
        this.failedAt = performance.now();
        log.warn('mcp.connect_failed', { server: this.config.name, reason, durationMs: Math.round(performance.now() - started) });
        throw e;
      }
      if (this.connectedOnce) this.restarts++;
      this.connectedOnce = true;
      // A process that ends (crash, kill) or a transport that closes: the next use connects again.
      client.onclose = () => {
        if (this.client === client) {
          this.client = null;
          this.markDown('connection closed');
          log.warn('mcp.closed', { server: this.config.name });
        }
      };
      this.client = client;
      this.failedAt = null;
      this.state = 'ready';
      delete this.problem;
      log.info('mcp.connected', { server: this.config.name, transport: this.config.transport, tools: this.tools?.length ?? 0, durationMs: Math.round(performance.now() - started) });
      if (changedWhileConnecting) void this.relist();
      return client;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /** Forgets a client that failed a call, so the next call starts (or reaches) the server again. */
  async drop(reason: string): Promise<void> {
    const client = this.client;
    this.client = null;
    this.markDown(reason);
    await client?.close().catch(() => undefined);
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal, retried = false): Promise<ToolResult> {
    const server = this.config.name;
    const again = this.config.transport === 'stdio' ? 'it is started again' : 'it is reached again';
    let client: Client;
    try {
      client = await this.connect();
    } catch (e) {
      if (signal.aborted) return fail('E_ABORTED', 'The call was stopped before the tool finished');
      return fail('E_UNAVAILABLE', `MCP server ${server} is not available (${this.problem ?? reasonOf(e)}); ${again} for the next call. Go on without ${bmadReference(server, tool)} or try again.`, {
        details: { server, tool },
      });
    }
    try {
      // The SDK's own limit is a little longer: the caller's time limit answers first, naming it.
      const result = await client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: this.config.timeoutMs + 1_000 });
      return toToolResult(server, tool, result as CallToolResult);
    } catch (e) {
      if (signal.aborted) return fail('E_ABORTED', 'The call was stopped before the tool finished');
      // A JSON-RPC error about the call itself (unknown tool, bad arguments) leaves the connection as it is.
      if (e instanceof McpError && e.code !== ErrorCode.ConnectionClosed && e.code !== ErrorCode.RequestTimeout) {
        return fail('E_EXTERNAL_TOOL', `${bmadReference(server, tool)} refused the call: ${e.message.replace(/^MCP error -?\d+: /, '').slice(0, 500)}`, { details: { server, tool } });
      }
      const reason = reasonOf(e);
      await this.drop(reason);
      // A session the server no longer knows (it restarted): refused before it ran (404 by the spec, 400 by some
      // servers), so the call is made once more on a new session.
      if (!retried && e instanceof StreamableHTTPError && (e.code === 404 || e.code === 400)) return this.call(tool, args, signal, true);
      return fail('E_UNAVAILABLE', `MCP server ${server} failed during the call (${reason}); ${again} for the next call.`, { details: { server, tool } });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = null;
    await client?.close().catch(() => undefined);
  }
}

/** The MCP servers of one process: connected on first use, kept, and connected again after a failure. */
export function createMcpHub(setup: McpSetup, options: McpHubOptions = {}): McpHub {
  const relistAfterMs = options.relistAfterMs ?? RELIST_AFTER_MS;
  const connections = new Map(setup.servers.map((s) => [s.name, new Connection(s)]));

  function allows(server: string, projectId: string | undefined): boolean {
    const c = connections.get(server)?.config;
    if (!c) return false;
    return !c.projects || (projectId !== undefined && c.projects.includes(projectId));
  }

  function dynamicTool(conn: Connection, tool: McpTool): DynamicTool {
    const server = conn.config.name;
    return {
      name: functionName(server, tool.name),
      description: describeTool(server, tool.name, tool.description),
      parameters: parametersOf(tool.inputSchema),
      timeoutMs: conn.config.timeoutMs,
      origin: { server, serverTool: tool.name.slice(0, 128) },
      run: (args, signal) => conn.call(tool.name, args, signal),
    };
  }

  /**
   * A server's tools: the ones it listed (kept while it is down: calling one is the tool error
   * that connects it again; read again in the background when the server announces a change or
   * the list is older than relistAfterMs), or listed now. A turn waits at most TURN_LIST_WAIT_MS for a first
   * list (the connection goes on and its tools join the next turn), and does not try a server
   * again within RETRY_AFTER_MS of a failed attempt.
   */
  async function listed(conn: Connection, waitMs = Number.POSITIVE_INFINITY): Promise<McpTool[] | null> {
    if (conn.tools) {
      conn.relistIfStale(relistAfterMs);
      return conn.tools;
    }
    if (conn.failedAt !== null && performance.now() - conn.failedAt < RETRY_AFTER_MS) return null;
    const attempt = conn.connect().then(() => undefined, () => undefined);
    if (Number.isFinite(waitMs)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([attempt, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]).finally(() => clearTimeout(timer));
    } else await attempt;
    return conn.tools;
  }

  const statusOf = (c: Connection): McpServerStatus => ({
    name: c.config.name,
    transport: c.config.transport,
    state: c.state,
    tools: c.tools ? c.tools.map((t) => t.name) : null,
    ...(c.problem ? { problem: c.problem } : {}),
    restarts: c.restarts,
    ...(c.config.projects ? { projects: c.config.projects } : {}),
  });

  return {
    file: setup.file,
    servers: () => setup.servers,
    status: () => [...connections.values()].map(statusOf),
    allows,
    async forProject(projectId, options = {}) {
      const mine = [...connections.values()].filter((c) => allows(c.config.name, projectId));
      if (options.list) await Promise.all(mine.filter((c) => !c.config.problem).map((c) => listed(c)));
      return mine.map((c) => {
        const { tools, ...status } = statusOf(c);
        const server = c.config.name;
        return { ...status, tools: (tools ?? []).map((tool) => ({ name: functionName(server, tool), tool, reference: bmadReference(server, tool) })) };
      });
    },
    async toolsFor(projectId) {
      const mine = [...connections.values()].filter((c) => allows(c.config.name, projectId) && !c.config.problem);
      const lists = await Promise.all(mine.map(async (c) => ({ c, tools: await listed(c, Math.min(c.config.timeoutMs, TURN_LIST_WAIT_MS)) })));
      const out: DynamicTool[] = [];
      const seen = new Set<string>();
      for (const { c, tools } of lists) {
        for (const t of tools ?? []) {
          if (out.length >= MAX_DYNAMIC_TOOLS) break;
          const tool = dynamicTool(c, t);
          if (seen.has(tool.name)) continue;
          seen.add(tool.name);
          out.push(tool);
        }
      }
      return out;
    },
    async toolNames(server) {
      const c = connections.get(server);
      if (!c || c.config.problem) return null;
      return (await listed(c))?.map((t) => t.name) ?? null;
    },
    async close() {
      await Promise.all([...connections.values()].map((c) => c.close()));
    },
  };
}

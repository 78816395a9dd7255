import { z } from 'zod';
import { appendAudit, buildAuditEntry } from '../../store/audit';
import { log } from '../../core/log';
import { redactPaths } from '../../core/paths';
import { withWorkspaceLock } from '../../sandbox/commands';
import type { Tool } from './define';
import { applyPatchTool } from './apply-patch';
import { editFileTool } from './edit-file';
import { executeWorkflowTool } from './execute-workflow';
import { listFilesTool } from './list-files';
import { readFileTool } from './read-file';
import { runCommandTool } from './run-command';
import { runScriptTool } from './run-script';
import { parseToolArguments, type ToolCall, type ToolDefinition } from '../../model/llm/types';
import { byteLength, fail, type ToolResult } from '../../core/results';
import { saveOutputTool } from './save-output';
import { searchFilesTool } from './search-files';
import { spawnSubagentTool } from './spawn-subagent';
import type { DynamicTool, ToolContext } from './types';

export type { CommandContext, DynamicTool, SubagentRequest, SubagentRunner, ToolContext } from './types';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const TOOLS: Tool<any>[] = [
  readFileTool,
  listFilesTool,
  searchFilesTool,
  saveOutputTool,
  editFileTool,
  applyPatchTool,
  executeWorkflowTool,
  spawnSubagentTool,
  runScriptTool,
  runCommandTool,
];
const BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

export const TOOL_NAMES = TOOLS.map((t) => t.name);

function parametersOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  // Zod's safe-integer bounds and propertyNames are noise to a model and trip strict servers.
  return JSON.parse(
    JSON.stringify(json, (k, v) => ((k === 'maximum' && v === Number.MAX_SAFE_INTEGER) || k === 'propertyNames' ? undefined : v)),
  );
}

let definitions: ToolDefinition[] | null = null;
let withoutCommands: ToolDefinition[] | null = null;

/** What a turn offers beyond the tools every turn has. */
export interface ToolOffer {
  /** The turn runs in a workspace of a project with build enabled (ToolContext.commands is set). */
  commands?: boolean;
}

/**
 * OpenAI function tools for chat completions `tools[]`: the static ones (built once), then the
 * conversation's dynamic ones (an MCP server's) in the order given. A dynamic tool never shadows
 * a static one. run_command is offered only when the offer says the turn can run commands.
 */
export function toolDefinitions(dynamic?: Iterable<DynamicTool>, offer: ToolOffer = {}): ToolDefinition[] {
  definitions ??= TOOLS.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: parametersOf(t.schema) },
  }));
  withoutCommands ??= definitions.filter((d) => d.function.name !== runCommandTool.name);
  const base = offer.commands ? definitions : withoutCommands;
  if (!dynamic) return base;
  const extra = [...dynamic].filter((t) => !BY_NAME.has(t.name)).map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
  return extra.length ? [...base, ...extra] : base;
}

/** A dynamic tool's result, kept under the read limit: long text is cut and says so. */
function capResult(result: ToolResult, maxBytes: number): ToolResult {
  if (!result.ok) return result;
  const size = byteLength(JSON.stringify(result));
  if (size <= maxBytes) return result;
  const text = typeof result.content === 'string' ? result.content : JSON.stringify(result);
  const { structuredContent: _dropped, ...rest } = result as Record<string, unknown>;
  void _dropped;
  // Cut by bytes, leaving room for the other fields; a cut inside a character drops that character.
  const room = Math.max(0, maxBytes - 512);
  const cut = Buffer.from(text, 'utf8').subarray(0, room).toString('utf8').replace(/\uFFFD$/, '');
  return { ...rest, ok: true, content: cut, truncated: true, totalBytes: size };
}

/** Runs a dynamic tool under its time limit; a stop or the limit aborts the signal it got. */
async function runDynamic(tool: DynamicTool, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
  const controller = new AbortController();
  const stop = () => controller.abort(ctx.signal?.reason);
  ctx.signal?.addEventListener('abort', stop, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<ToolResult>((resolve) => {
    timer = setTimeout(() => {
      resolve(fail('E_TIMEOUT', `${tool.name} did not answer within its time limit of ${tool.timeoutMs} ms (timeoutMs); the call was cancelled. Try again later, with a smaller request, or go on without it.`, { details: { timeoutMs: tool.timeoutMs } }));
      controller.abort();
    }, tool.timeoutMs);
  });
  const abort = whenAborted(ctx.signal);
  try {
    const result = await Promise.race([tool.run(args, controller.signal), timeout, abort.promise]);
    return capResult(result, ctx.limits.maxReadBytes);
  } finally {
    clearTimeout(timer);
    abort.dispose();
    ctx.signal?.removeEventListener('abort', stop);
  }
}

type Parsed = { ok: true; value: Record<string, unknown> } | { ok: false; result: ToolResult; raw: unknown };

function parseArguments(raw: unknown): Parsed {
  const parsed = parseToolArguments(raw);
  if (parsed.ok) return parsed;
  const result =
    parsed.reason === 'not-json'
      ? fail('E_INVALID_ARGS', `Tool arguments are not valid JSON (${parsed.detail}). Send one JSON object, e.g. {"file_path": "{output_folder}/plan.md"}.`)
      : fail('E_INVALID_ARGS', 'Tool arguments must be a JSON object with named fields');
  return { ok: false, raw: parsed.raw, result };
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}`)
    .join('; ');
}

function abortedResult(): ToolResult {
  return fail('E_ABORTED', 'The turn was stopped before the tool finished');
}

/** Resolves as soon as the signal aborts, so a stop never waits on slow IO. */
function whenAborted(signal: AbortSignal | undefined): { promise: Promise<ToolResult>; dispose: () => void } {
  if (!signal) return { promise: new Promise(() => undefined), dispose: () => undefined };
  let onAbort: () => void = () => undefined;
  const promise = new Promise<ToolResult>((resolve) => {
    onAbort = () => resolve(abortedResult());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/** What an audit line keeps of a dynamic tool's call: where it went and the argument names, never their values. */
function dynamicInput(tool: DynamicTool, parsed: Parsed): unknown {
  return { ...tool.origin, argumentNames: parsed.ok ? Object.keys(parsed.value).slice(0, 20).join(', ').slice(0, 200) : '' };
}

async function runTool(call: ToolCall, ctx: ToolContext): Promise<{ result: ToolResult; input: unknown }> {
  const parsed = parseArguments(call.arguments);
  let input = parsed.ok ? parsed.value : parsed.raw;
  const tool = BY_NAME.get(call.name);
  if (!tool) {
    const dynamic = typeof call.name === 'string' ? ctx.dynamicTools?.get(call.name) : undefined;
    if (dynamic) {
      input = dynamicInput(dynamic, parsed);
      if (!parsed.ok) return { input, result: parsed.result };
      if (ctx.signal?.aborted) return { input, result: abortedResult() };
      return { input, result: await runDynamic(dynamic, parsed.value, ctx) };
    }
    const available = [...TOOL_NAMES, ...(ctx.dynamicTools?.keys() ?? [])];
    return {
      input,
      result: fail('E_UNKNOWN_TOOL', `There is no tool named "${String(call.name).slice(0, 64)}". Available tools: ${available.join(', ')}.`, {
        details: { available },
      }),
    };
  }
  if (!parsed.ok) return { input, result: parsed.result };
  if (ctx.signal?.aborted) return { input, result: abortedResult() };
  const args = tool.normalize ? tool.normalize(parsed.value) : parsed.value;
  const checked = tool.schema.safeParse(args);
  if (!checked.success) {
    return { input, result: fail('E_INVALID_ARGS', `Invalid arguments for ${tool.name}: ${describeIssues(checked.error)}`) };
  }
  const abort = whenAborted(ctx.signal);
  try {
    const running = inWorkspace(tool, ctx) ? withWorkspaceLock(ctx.commands!.checkout, () => (ctx.signal?.aborted ? Promise.resolve(abortedResult()) : tool.run(checked.data, ctx)), ctx.signal, { readsOnly: READS_ONLY.has(tool.name) }).catch((e) => (ctx.signal?.aborted ? abortedResult() : Promise.reject(e))) : tool.run(checked.data, ctx);
    // A stop answers at once; the call itself goes on to its end (a write lands whole).
    ctx.track?.(running);
    const result = await Promise.race([running, abort.promise]);
    return { input, result };
  } finally {
    abort.dispose();
  }
}

/** Tools that only look at files: the git status the last command left still stands after them. */
const READS_ONLY = new Set([readFileTool.name, listFilesTool.name, searchFilesTool.name]);

/** Tools that look at or write the project's files on the host; run_command takes the lock itself, a subagent's calls each take it. */
const HOST_SIDE = new Set(TOOLS.filter((t) => t !== runCommandTool && t !== spawnSubagentTool).map((t) => t.name));

/**
 * In a workspace, a file tool waits for the workspace's lock: the server's checks and writes on
 * the checkout never overlap a command, which could swap a folder for a link between them.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function inWorkspace(tool: Tool<any>, ctx: ToolContext): boolean {
  return !!ctx.commands && HOST_SIDE.has(tool.name);
}

/**
 * Runs one tool call. Never throws: every problem comes back as `{ ok: false, error }`, and
 * every call (rejected and malformed ones included) leaves one audit line when ctx.auditDir is
 * set and one log line (names and outcome only). The duration is measured here, once.
 */
export async function runToolCall(call: ToolCall, ctx: ToolContext): Promise<{ result: ToolResult; durationMs: number }> {
  const started = performance.now();
  let result: ToolResult;
  let input: unknown = call?.arguments;
  try {
    const ran = await runTool(call, ctx);
    result = ran.result;
    input = ran.input;
  } catch (e) {
    log.error('tool.internal_error', {
      tool: typeof call?.name === 'string' ? call.name.slice(0, 64) : undefined,
      error: e instanceof Error ? e.name : 'unknown',
      code: (e as NodeJS.ErrnoException)?.code,
    });
    result = fail('E_INTERNAL', `The ${typeof call?.name === 'string' ? call.name.slice(0, 64) : 'tool'} tool failed unexpectedly; try again or use another approach.`);
  }
  if (!result.ok) {
    const message = redactPaths(result.error.message, ctx);
    if (message !== result.error.message) result = { ...result, error: { ...result.error, message } };
  }
  const durationMs = Math.round((performance.now() - started) * 100) / 100;
  if (ctx.auditDir) {
    try {
      const entry = buildAuditEntry({
        conversationId: ctx.conversationId,
        toolCallId: call?.id ?? '',
        toolName: call?.name ?? '',
        agentId: ctx.agentId,
        input,
        result,
        durationMs,
      });
      await (ctx.audit ? ctx.audit.append(entry) : appendAudit(ctx.auditDir, entry));
    } catch (e) {
      log.warn('audit.append_failed', { error: e instanceof Error ? e.name : 'unknown', code: (e as NodeJS.ErrnoException)?.code });
    }
  }
  const origin = typeof call?.name === 'string' ? ctx.dynamicTools?.get(call.name)?.origin : undefined;
  log.info('tool.call', {
    conversationId: ctx.conversationId,
    agent: ctx.agentId,
    tool: typeof call?.name === 'string' ? call.name.slice(0, 64) : undefined,
    ...origin,
    durationMs,
    outcome: result.ok ? 'ok' : result.error.code,
  });
  return { result, durationMs };
}

/** {@link runToolCall} for callers that only need the result. */
export async function executeTool(call: ToolCall, ctx: ToolContext): Promise<ToolResult> {
  return (await runToolCall(call, ctx)).result;
}

export { readFileTool, listFilesTool, searchFilesTool, saveOutputTool, editFileTool, applyPatchTool, executeWorkflowTool, spawnSubagentTool, runScriptTool, runCommandTool };
export type { Tool } from './define';

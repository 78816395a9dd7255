import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs, readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { POST as chat } from '@/app/api/chat/route';
import { GET as health } from '@/app/api/health/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { GET as projectMcp } from '@/app/api/projects/[id]/mcp/route';
import { MemoryConversationStore } from '@/lib/store/conversations';
import { loadMcpSetup } from '@/lib/engine/mcp';
import { createRuntime, setRuntime, type Runtime } from '@/lib/engine/runtime';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, REPO, startHarness, type Harness } from './harness';

/**
 * The MCP client against the registry's reference server (`@modelcontextprotocol/server-everything`),
 * over stdio (started by the app) and over Streamable HTTP (started here on a loopback port), with
 * the scripted model calling the tools through the real chat route.
 */
const EVERYTHING = path.join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

let h: Harness;
let rt: Runtime;
let projectsRoot: string;
let httpPort: number;
let httpServer: ChildProcess | null = null;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** server-everything over Streamable HTTP on the loopback port; resolves once it listens. */
async function startHttpServer(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { PATH: process.env.PATH, PORT: String(port) } as unknown as NodeJS.ProcessEnv, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`server-everything did not listen: ${err}`)), 20_000);
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('listening on port')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => reject(new Error(`server-everything exited (${code}): ${err}`)));
  });
  return child;
}

async function stopHttpServer(): Promise<void> {
  const child = httpServer;
  httpServer = null;
  if (!child || child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Children of this process running server-everything over stdio (the app's stdio servers). */
function stdioChildren(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd.includes(EVERYTHING) && cmd.includes('stdio')) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const send = async (body: Record<string, unknown>) => {
  const res = await chat(jsonRequest('/api/chat', body));
  return { status: res.status, body: await res.json() };
};
const lastTools = () => {
  const requests = h.model.chatRequests();
  return (requests[requests.length - 1]?.body?.tools ?? []) as Array<{ function: { name: string; description: string; parameters: Record<string, unknown> } }>;
};
const servers = async () => (await (await health(get('/api/health'))).json()).data.mcp.servers as Array<{ name: string; state: string; restarts: number; tools: string[] | null; problem?: string }>;

beforeAll(async () => {
  h = await startHarness();
  projectsRoot = await fs.mkdtemp(path.join(h.tmp, 'projects-'));
  const shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'other' });
  // The team's override of the PRD skill: one handoff to a configured tool, one to a server nobody configured, one to a tool the server lacks.
  await fs.writeFile(
    path.join(shop, '_bmad', 'custom', 'bmad-prd.toml'),
    [
      '[workflow]',
      'external_handoffs = [',
      '  "After finalize, echo the PRD title via everything:echo (message=\'PRD ready\').",',
      '  "Upload prd.md to Confluence via corp:confluence_upload (space_key=\'PROD\').",',
      '  "Then ping everything:no_such_tool with the URL.",',
      ']',
      '',
    ].join('\n'),
  );
  httpPort = await freePort();
  httpServer = await startHttpServer(httpPort);
  const file = path.join(h.tmp, 'mcp.yaml');
  await fs.writeFile(
    file,
    [
      'servers:',
      '  everything:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(EVERYTHING)}, stdio]`,
      '    env: { SHOWN_TO_SERVER: MCP_TEST_SHOWN }',
      '    timeoutMs: 20000',
      '  slow:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(EVERYTHING)}, stdio]`,
      '    timeoutMs: 2500',
      '    projects: [other]',
      '  web:',
      `    url: http://127.0.0.1:${httpPort}/mcp`,
      '    headers: { X-Team-Token: MCP_TEST_HEADER }',
      '    timeoutMs: 20000',
      '    projects: [shop]',
      '  broken:',
      '    command: /nonexistent/mcp-server',
      '    projects: [nowhere]',
      '  needs:',
      `    command: ${JSON.stringify(process.execPath)}`,
      '    env: { TOKEN: MCP_TEST_UNSET }',
      '    projects: [nowhere]',
      '',
    ].join('\n'),
  );
  // The app's environment holds secrets the stdio server must never see.
  process.env.MCP_TEST_SECRET_OF_THE_APP = 'app-secret-value';
  const setup = loadMcpSetup({ MCP_SERVERS_FILE: file, MCP_TEST_SHOWN: 'visible-value', MCP_TEST_HEADER: 'team-token', OPENAI_API_KEY: 'sk-never' }, h.tmp);
  const config = { ...h.config, projectsRoot };
  rt = createRuntime(config, new MemoryConversationStore(), { mcp: setup });
  await setRuntime(rt);
  h.model.setScript('call-tool');
}, 240_000);

afterAll(async () => {
  delete process.env.MCP_TEST_SECRET_OF_THE_APP;
  await stopHttpServer();
  await h.close();
});

describe('stdio: server-everything started by the app', () => {
  it('starts nothing before the first turn; health says idle', async () => {
    expect(stdioChildren()).toEqual([]);
    expect(await servers()).toEqual([
      expect.objectContaining({ name: 'everything', state: 'idle', tools: null }),
      expect.objectContaining({ name: 'slow', state: 'idle' }),
      expect.objectContaining({ name: 'web', state: 'idle' }),
      expect.objectContaining({ name: 'broken', state: 'idle' }),
      expect.objectContaining({ name: 'needs', state: 'unconfigured', problem: 'MCP_TEST_UNSET is not set' }),
    ]);
  });

  it('a server that cannot start is down with its reason; one missing a variable is never started', async () => {
    expect(await rt.mcp.toolNames('broken')).toBeNull();
    expect(await rt.mcp.toolNames('needs')).toBeNull();
    const [broken, needs] = (await servers()).slice(3);
    expect(broken).toMatchObject({ name: 'broken', state: 'down', problem: 'ENOENT', tools: null });
    expect(needs).toMatchObject({ name: 'needs', state: 'unconfigured' });
    expect(JSON.stringify(await servers())).not.toContain('/nonexistent');
    expect(stdioChildren()).toEqual([]);
  });

  it('offers its tools as everything__<tool> with their schemas, and the scripted model calls one through the tool path', async () => {
    const { status, body } = await send({ agentId: 'product-lead', message: 'call everything__echo {"message":"hello over mcp"}' });
    expect(status).toBe(200);
    const echo = lastTools().find((t) => t.function.name === 'everything__echo');
    expect(echo?.function.parameters).toMatchObject({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });
    expect(echo?.function.description).toContain('everything:echo');
    expect(lastTools().map((t) => t.function.name)).toEqual(expect.arrayContaining(['read_file', 'everything__get-env', 'everything__trigger-long-running-operation']));
    // A project-only server offers nothing to a bundle agent.
    expect(lastTools().some((t) => /^(slow|web)__/.test(t.function.name))).toBe(false);
    expect(body.data.message.functionCalls).toEqual([
      expect.objectContaining({ name: 'everything__echo', result: expect.objectContaining({ ok: true, server: 'everything', tool: 'echo', content: 'Echo: hello over mcp' }) }),
    ]);
    expect(body.data.message.content).toContain('everything__echo ok');
    // The audit line names the server and the tool, and the argument names only.
    const audit = await fs.readFile(path.join(rt.auditDir, `${body.data.conversationId}.jsonl`), 'utf8');
    const line = JSON.parse(audit.trim().split('\n').pop()!);
    expect(line).toMatchObject({ toolName: 'everything__echo', input: { server: 'everything', serverTool: 'echo', argumentNames: 'message' } });
    expect(JSON.stringify(line.input)).not.toContain('hello over mcp');
    expect((await servers())[0]).toMatchObject({ name: 'everything', state: 'ready', restarts: 0 });
    expect(stdioChildren()).toHaveLength(1);
  });

  it("its get-env tool sees only the variables its env names, and PATH: never the app's environment", async () => {
    const { body } = await send({ agentId: 'product-lead', message: 'call everything__get-env {}' });
    const result = body.data.message.functionCalls[0].result;
    expect(result.ok).toBe(true);
    const env = JSON.parse(result.content) as Record<string, string>;
    expect(Object.keys(env).sort()).toEqual(['PATH', 'SHOWN_TO_SERVER']);
    expect(env.SHOWN_TO_SERVER).toBe('visible-value');
    expect(result.content).not.toContain('app-secret-value');
  });

  it('a call past timeoutMs ends with a tool error naming the time limit, and the turn goes on', async () => {
    const started = performance.now();
    const { status, body } = await send({ projectId: 'other', agentId: 'pm', message: 'call slow__trigger-long-running-operation {"duration": 30, "steps": 3}' });
    const took = performance.now() - started;
    expect(status).toBe(200);
    const result = body.data.message.functionCalls[0].result;
    expect(result).toMatchObject({ ok: false, error: { code: 'E_TIMEOUT', details: { timeoutMs: 2500 } } });
    expect(result.error.message).toContain('2500 ms');
    expect(body.data.message.content).toContain('slow__trigger-long-running-operation failed (E_TIMEOUT)');
    expect(took).toBeLessThan(20_000);
  }, 60_000);

  it('a killed server gives a tool error at most once and is started again for the next call', async () => {
    await send({ agentId: 'product-lead', message: 'call everything__echo {"message":"warm"}' });
    const before = (await servers()).find((s) => s.name === 'everything')!;
    const pids = stdioChildren();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await h.model.waitFor(() => stdioChildren().length === 0, 10_000);
    const outcomes: boolean[] = [];
    for (let i = 0; i < 2; i++) {
      const { body } = await send({ agentId: 'product-lead', message: `call everything__echo {"message":"after kill ${i}"}` });
      outcomes.push(body.data.message.functionCalls[0].result.ok);
    }
    // The crash is seen before the next call (the process's end closes the connection): it is reached again at once.
    expect(outcomes[1]).toBe(true);
    const after = (await servers()).find((s) => s.name === 'everything')!;
    expect(after.state).toBe('ready');
    expect(after.restarts).toBeGreaterThan(before.restarts);
  }, 60_000);
});

describe('Streamable HTTP: server-everything on a loopback port', () => {
  it('offers and calls its tools in the projects it names, and only there', async () => {
    const { body } = await send({ projectId: 'shop', agentId: 'pm', message: 'call web__echo {"message":"over http"}' });
    expect(body.data.message.functionCalls[0].result).toMatchObject({ ok: true, server: 'web', tool: 'echo', content: 'Echo: over http' });
    expect(lastTools().some((t) => t.function.name === 'slow__echo')).toBe(false);

    const other = await send({ projectId: 'other', agentId: 'pm', message: 'call web__echo {"message":"not here"}' });
    expect(other.body.data.message.functionCalls).toEqual([]);
    expect(other.body.data.message.content).toContain('The web__echo tool is not offered');
    const names = lastTools().map((t) => t.function.name);
    expect(names).toEqual(expect.arrayContaining(['everything__echo', 'slow__echo']));
    expect(names.some((n) => n.startsWith('web__'))).toBe(false);
  }, 60_000);

  it('a server that went away is a tool error; once it is back the next call reaches it', async () => {
    await stopHttpServer();
    const down = await send({ projectId: 'shop', agentId: 'pm', message: 'call web__echo {"message":"while down"}' });
    expect(down.status).toBe(200);
    expect(down.body.data.message.functionCalls[0].result).toMatchObject({ ok: false, error: { code: 'E_UNAVAILABLE' } });
    expect(down.body.data.message.functionCalls[0].result.error.message).toContain('MCP server web');
    expect((await servers()).find((s) => s.name === 'web')).toMatchObject({ state: 'down' });

    httpServer = await startHttpServer(httpPort);
    const back = await send({ projectId: 'shop', agentId: 'pm', message: 'call web__echo {"message":"back again"}' });
    expect(back.body.data.message.functionCalls[0].result).toMatchObject({ ok: true, content: 'Echo: back again' });
    expect((await servers()).find((s) => s.name === 'web')).toMatchObject({ state: 'ready' });
  }, 60_000);

  it('a server restarted between two calls (its session gone) answers the next call on a new session', async () => {
    await stopHttpServer();
    httpServer = await startHttpServer(httpPort);
    const { body } = await send({ projectId: 'shop', agentId: 'pm', message: 'call web__echo {"message":"new session"}' });
    expect(body.data.message.functionCalls[0].result).toEqual({ ok: true, server: 'web', tool: 'echo', content: 'Echo: new session' });
  }, 60_000);
});

describe("BMAD's external tools", () => {
  it("a 6.12 skill whose external_handoffs names a configured tool: the tool is offered in its turn, and the skill's text names it", async () => {
    h.model.reset();
    const { status, body } = await send({ projectId: 'shop', agentId: 'pm', message: '*PRD' });
    expect(status).toBe(200);
    const run = body.data.message.functionCalls[0];
    expect(run).toMatchObject({ name: 'execute_workflow', arguments: { workflow_path: 'skill:bmad-prd' }, result: { ok: true } });
    expect(JSON.stringify(run.result)).toContain('everything:echo');
    const echo = lastTools().find((t) => t.function.name === 'everything__echo');
    expect(echo?.function.description).toContain('skills name it everything:echo');
  }, 60_000);

  it('references to a server or a tool not configured: the doctor lines in the project, and nothing offered for them', async () => {
    const detail = (await (await getProject(get('/api/projects/shop'), params({ id: 'shop' }))).json()).data as { problems: string[] };
    expect(detail.problems).toEqual(
      expect.arrayContaining([
        '_bmad/custom/bmad-prd.toml: warning: external tool corp:confluence_upload: no MCP server corp',
        '_bmad/custom/bmad-prd.toml: warning: external tool everything:no_such_tool: MCP server everything has no tool no_such_tool',
      ]),
    );
    expect(detail.problems.filter((p) => p.includes('external tool'))).toHaveLength(2);
    expect(lastTools().some((t) => t.function.name.startsWith('corp__'))).toBe(false);
  });

  it("GET /api/projects/:id/mcp lists the project's MCP tools and each server's state", async () => {
    const res = await projectMcp(get('/api/projects/shop/mcp?list=1'), params({ id: 'shop' }));
    const data = (await res.json()).data as { servers: Array<{ name: string; state: string; tools: Array<{ name: string; tool: string }> }> };
    expect(data.servers.map((s) => s.name)).toEqual(['everything', 'web']);
    expect(data.servers[0]!.tools).toEqual(expect.arrayContaining([{ name: 'everything__echo', tool: 'echo', reference: 'everything:echo' }]));
    expect(JSON.stringify(data)).not.toContain(EVERYTHING);
  });
});

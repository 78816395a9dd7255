import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DELETE, GET, POST } from '@/app/api/mcp/route';
import { GET as listProjects } from '@/app/api/projects/route';
import { createRuntime, setRuntime, type Runtime } from '@/lib/engine/runtime';
import { MemoryConversationStore } from '@/lib/store/conversations';
import { bmadProject } from '../bmad-installs';
import { startHarness, type Harness } from './harness';

/**
 * The app as an MCP server: the SDK's own client against the real /api/mcp route handler, served
 * over a real HTTP server on a loopback port (node:http requests adapted to Web Requests, as
 * Next.js does). An access policy hides one project from the caller.
 */
let h: Harness;
let rt: Runtime;
let server: http.Server;
let url: URL;
let client: Client;

const HANDLERS: Record<string, (r: Request) => Promise<Response>> = { GET, POST, DELETE };

function serveRoute(): Promise<http.Server> {
  const s = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      signal: controller.signal,
    });
    const handler = HANDLERS[req.method ?? ''];
    const response = handler ? await handler(request) : new Response(null, { status: 405 });
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    if (response.body) {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(value);
      }
    }
    res.end();
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

type TextResult = { isError?: boolean; content: Array<{ type: string; text: string }> };
const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as TextResult;
const data = (r: TextResult) => {
  expect(r.isError).toBeFalsy();
  return JSON.parse(r.content[0]!.text);
};

beforeAll(async () => {
  h = await startHarness();
  const projectsRoot = await fs.mkdtemp(path.join(h.tmp, 'projects-'));
  const shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  const hidden = await bmadProject('6.12.0', { parent: projectsRoot, name: 'hidden' });
  await fs.mkdir(path.join(shop, '_bmad-output', 'planning-artifacts'), { recursive: true });
  await fs.writeFile(path.join(shop, '_bmad-output', 'planning-artifacts', 'prd.md'), '# PRD\n\nThe planted product requirements.\n');
  await fs.mkdir(path.join(hidden, '_bmad-output'), { recursive: true });
  await fs.writeFile(path.join(hidden, '_bmad-output', 'secret.md'), '# Not yours\n');
  rt = createRuntime({ ...h.config, projectsRoot }, new MemoryConversationStore(), { mcp: { file: null, servers: [] } });
  // The caller may not see "hidden": it must look absent everywhere.
  rt.access = { projectRole: async (_caller, id) => (id === 'hidden' ? null : 'owner'), conversation: async () => true };
  await setRuntime(rt);
  h.model.setScript('call-tool');
  server = await serveRoute();
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/mcp`);
  client = new Client({ name: 'test-ide', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer test-token' } } }));
}, 240_000);

afterAll(async () => {
  await client?.close();
  await new Promise((r) => server?.close(r));
  await h.close();
});

it("asks for the REST API's credentials: a request without a token is answered as GET /api/projects answers it", async () => {
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'no-token', version: '1' } } };
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const bare = await fetch(url, { method: 'POST', headers, body: JSON.stringify(initialize) });
  const rest = await listProjects(new Request('http://localhost/api/projects'));
  expect(bare.status).toBe(rest.status);
  if (rest.status === 401) expect(await bare.json()).toMatchObject({ success: false, code: (await rest.json()).code });
  else expect((await bare.json()).result.serverInfo).toMatchObject({ name: 'bmad-orchestrator' });
});

it('refuses a body larger than the REST API takes (413) before reading it', async () => {
  const big = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'chat', arguments: { agentId: 'pm', message: 'x'.repeat(300 * 1024) } } };
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer test-token' }, body: JSON.stringify(big) });
  expect(res.status).toBe(413);
});

it('lists its tools, each with an input schema', async () => {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(['chat', 'get_run', 'journey', 'list_agents', 'list_documents', 'list_projects', 'read_document', 'start_run']);
  expect(tools.find((t) => t.name === 'read_document')?.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['projectId', 'path']) });
});

it('list_projects: only the projects the caller may see', async () => {
  const projects = data(await call('list_projects')) as Array<{ id: string; bmad: { version: string } }>;
  expect(projects.map((p) => p.id)).toEqual(['shop']);
  expect(projects[0]!.bmad.version).toBe('6.12.0');
});

it("list_agents: the project's agents; another project is not found", async () => {
  const agents = data(await call('list_agents', { projectId: 'shop' })) as Array<{ id: string }>;
  expect(agents.map((a) => a.id)).toEqual(expect.arrayContaining(['bmad-agent-pm', 'bmad-agent-architect']));
  const hidden = await call('list_agents', { projectId: 'hidden' });
  expect(hidden.isError).toBe(true);
  expect(hidden.content[0]!.text).toBe('E_PROJECT_NOT_FOUND: No project with id "hidden". GET /api/projects lists the projects.');
  expect((await call('list_agents', { projectId: 'nope' })).content[0]!.text).toContain('E_PROJECT_NOT_FOUND');
});

it('list_documents and read_document: a planted file, by its path or the project-root path; never outside, never another project', async () => {
  const docs = data(await call('list_documents', { projectId: 'shop' })) as Array<{ path: string; size: number }>;
  expect(docs).toEqual([expect.objectContaining({ path: 'planning-artifacts/prd.md', size: 41 })]);
  const doc = data(await call('read_document', { projectId: 'shop', path: 'planning-artifacts/prd.md' }));
  expect(doc).toEqual({ path: 'planning-artifacts/prd.md', contentType: expect.stringContaining('text/markdown'), bytes: 41, text: '# PRD\n\nThe planted product requirements.\n' });
  expect(data(await call('read_document', { projectId: 'shop', path: '_bmad-output/planning-artifacts/prd.md' })).text).toContain('planted');
  const escape = await call('read_document', { projectId: 'shop', path: '../../../etc/passwd' });
  expect(escape.isError).toBe(true);
  expect(escape.content[0]!.text).not.toContain('root:');
  const hidden = await call('read_document', { projectId: 'hidden', path: 'secret.md' });
  expect(hidden).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('E_PROJECT_NOT_FOUND') }] });
  const missing = await call('read_document', { projectId: 'shop', path: 'nope.md' });
  expect(missing.content[0]!.text).toContain('E_FILE_NOT_FOUND');
});

it('documents are resources bmad://<projectId>/<path>, of the projects the caller may see only', async () => {
  const { resources } = await client.listResources();
  expect(resources.map((r) => r.uri)).toEqual(['bmad://shop/planning-artifacts/prd.md']);
  const read = await client.readResource({ uri: 'bmad://shop/planning-artifacts/prd.md' });
  expect(read.contents[0]).toMatchObject({ uri: 'bmad://shop/planning-artifacts/prd.md', text: '# PRD\n\nThe planted product requirements.\n' });
  await expect(client.readResource({ uri: 'bmad://hidden/secret.md' })).rejects.toThrow(/No project with id "hidden"/);
});

it("chat: one turn with the project's agent, its answer and tool calls; the conversation goes on; another project is not found", async () => {
  const first = data(await call('chat', { projectId: 'shop', agentId: 'pm', message: 'call list_files {"path":"{output_folder}"}' }));
  expect(first.answer).toContain('list_files ok');
  expect(first.toolCalls).toEqual([expect.objectContaining({ name: 'list_files', arguments: { path: '{output_folder}' }, result: expect.objectContaining({ ok: true }) })]);
  const again = data(await call('chat', { projectId: 'shop', agentId: 'pm', message: 'call read_file {"file_path":"{output_folder}/planning-artifacts/prd.md"}', conversationId: first.conversationId }));
  expect(again.conversationId).toBe(first.conversationId);
  expect(again.answer).toContain('The planted product requirements.');
  expect((await rt.store.messages(first.conversationId)).filter((m) => m.role === 'user')).toHaveLength(2);

  const hidden = await call('chat', { projectId: 'hidden', agentId: 'pm', message: 'hello' });
  expect(hidden).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('E_PROJECT_NOT_FOUND') }] });
  const bad = await call('chat', { projectId: 'shop', agentId: 'nobody', message: 'hello' });
  expect(bad.content[0]!.text).toContain('E_AGENT_NOT_FOUND');
}, 60_000);

it("journey: the project's phases and next steps from its own catalog; another project is not found", async () => {
  const journey = data(await call('journey', { projectId: 'shop' })) as { phases: Array<{ id: string; status: string }>; next: Array<{ agentId: string; command: string }> };
  expect(journey.phases.map((p) => p.id)).toEqual(expect.arrayContaining(['plan']));
  expect(journey.next[0]).toMatchObject({ agentId: expect.any(String), command: expect.stringMatching(/^\*/) });
  const hidden = await call('journey', { projectId: 'hidden' });
  expect(hidden.isError).toBe(true);
  expect(hidden.content[0]!.text).toMatch(/No project with id "hidden"/);
});

it('start_run and get_run: a headless run of bmad-prd ends complete with its PRD; a skill without the contract and another project are refused', async () => {
  h.model.setScript('headless-complete');
  try {
    const started = data(await call('start_run', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop for busy people.' })) as { runId: string; status: string };
    expect(started).toMatchObject({ runId: expect.stringMatching(/^run_/), status: 'queued' });
    let run: { status: string; result?: { status?: string }; artifacts?: Array<{ path: string; version: string }> } = { status: 'queued' };
    for (let i = 0; i < 300 && ['queued', 'running'].includes(run.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      run = data(await call('get_run', { runId: started.runId }));
    }
    expect(run.status).toBe('complete');
    expect(run.result).toMatchObject({ status: 'complete' });
    expect(run.artifacts?.length).toBeGreaterThan(0);
    const badBudget = await call('start_run', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'x', budget: { tokens: -1 } });
    expect(badBudget.isError).toBe(true);
    expect(badBudget.content[0]!.text).toMatch(/^E_VALIDATION: .*budget\.tokens/);
    const notHeadless = await call('start_run', { projectId: 'shop', skill: 'bmad-code-review', inputs: 'x' });
    expect(notHeadless.isError).toBe(true);
    expect(notHeadless.content[0]!.text).toMatch(/no headless contract/);
    const hidden = await call('start_run', { projectId: 'hidden', skill: 'bmad-prd', inputs: 'x' });
    expect(hidden.isError).toBe(true);
    expect(hidden.content[0]!.text).toMatch(/No project with id "hidden"/);
    const unknown = await call('get_run', { runId: 'run_000000000000000000000000' });
    expect(unknown.isError).toBe(true);
  } finally {
    h.model.setScript('call-tool');
  }
}, 60_000);

it("chat asks of its caller what POST /api/chat asks: a project-limited token stays in its projects; a person's conversation is theirs", async () => {
  const { MCP_SERVER_TOOLS } = await import('@/app/api/mcp/tools');
  const chat = MCP_SERVER_TOOLS.find((t) => t.name === 'chat')!;
  const signal = new AbortController().signal;
  const limited = { kind: 'token' as const, id: 'u-limited', name: 'Lim', role: 'member' as const, projectIds: ['shop'] };
  await expect(chat.run({ agentId: 'product-lead', message: 'hello' }, { caller: limited, signal })).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
  h.model.setScript('plain');
  try {
    const person = { kind: 'session' as const, id: 'u-ada', name: 'Ada', role: 'member' as const };
    const answer = (await chat.run({ agentId: 'product-lead', message: 'hello' }, { caller: person, signal })) as { conversationId: string };
    expect((await rt.store.get(answer.conversationId))?.ownerId).toBe('u-ada');
  } finally {
    h.model.setScript('call-tool');
  }
});

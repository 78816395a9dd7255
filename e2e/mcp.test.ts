import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { appEnv, freePort, makeFolders, postChat, REPO, startApp, type AppServer, type Folders } from './support';

/**
 * MCP both ways in the production build: `next start` refuses a bad servers file; with a good one
 * an agent calls server-everything's tools over stdio, and the SDK's client reaches /api/mcp.
 */
const EVERYTHING = path.join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

let folders: Folders;
let model: ScriptedModel;
let app: AppServer | undefined;

beforeAll(async () => {
  folders = await makeFolders('mcp');
  model = await startScriptedModel({ scenario: 'call-tool' });
});
afterAll(async () => {
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

it('next start refuses a bad MCP servers file, naming the file, the line and the field', async () => {
  const file = path.join(folders.root, 'bad-mcp.yaml');
  await fs.writeFile(file, 'servers:\n  corp:\n    command: node\n    timeoutMs: soon\n');
  const port = await freePort();
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
    let output = '';
    const proc = spawn(process.execPath, [path.join(REPO, 'node_modules/next/dist/bin/next'), 'start', '-p', String(port), '-H', '127.0.0.1'], {
      cwd: REPO,
      env: appEnv(folders, { MCP_SERVERS_FILE: file }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.on('data', (d) => (output += d));
    proc.stderr!.on('data', (d) => (output += d));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
    proc.once('exit', (c) => {
      clearTimeout(timer);
      resolve({ code: c, output });
    });
  });
  expect(code).not.toBe(0);
  expect(code).not.toBeNull();
  expect(output).toContain(`refusing to start: MCP_SERVERS_FILE ${file} (line 4, servers.corp.timeoutMs): must be a number`);
});

it("an agent calls a stdio server's tool; health shows its state; an IDE reaches the projects over /api/mcp", async () => {
  const projectsRoot = path.join(folders.root, 'projects');
  const shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  await fs.mkdir(path.join(shop, '_bmad-output'), { recursive: true });
  await fs.writeFile(path.join(shop, '_bmad-output', 'brief.md'), '# Brief\n\nPlanted for the IDE.\n');
  const file = path.join(folders.root, 'mcp.yaml');
  await fs.writeFile(file, `servers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING)}, stdio]\n    timeoutMs: 20000\n`);
  app = await startApp(folders, { MCP_SERVERS_FILE: file, OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted-e2e', PROJECTS_ROOT: projectsRoot });

  let health = await (await fetch(`${app.url}/api/health`)).json();
  expect(health.data.mcp.servers).toEqual([expect.objectContaining({ name: 'everything', state: 'idle' })]);

  const res = await postChat(app.url, { agentId: 'product-lead', message: 'call everything__echo {"message":"from next start"}' });
  const body = await res.json();
  expect(body.data.message.functionCalls).toEqual([expect.objectContaining({ name: 'everything__echo', result: expect.objectContaining({ ok: true, content: 'Echo: from next start' }) })]);
  health = await (await fetch(`${app.url}/api/health`)).json();
  expect(health.data.mcp.servers).toEqual([expect.objectContaining({ name: 'everything', state: 'ready', tools: expect.arrayContaining(['echo', 'get-env']) })]);

  const client = new Client({ name: 'e2e-ide', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/api/mcp`), { requestInit: { headers: { Authorization: 'Bearer e2e' } } }));
  try {
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['chat', 'get_run', 'journey', 'list_agents', 'list_documents', 'list_projects', 'read_document', 'start_run']);
    const projects = (await client.callTool({ name: 'list_projects', arguments: {} })) as { content: Array<{ text: string }> };
    expect(JSON.parse(projects.content[0]!.text)).toEqual([expect.objectContaining({ id: 'shop' })]);
    const doc = (await client.callTool({ name: 'read_document', arguments: { projectId: 'shop', path: 'brief.md' } })) as { content: Array<{ text: string }> };
    expect(JSON.parse(doc.content[0]!.text)).toMatchObject({ path: 'brief.md', text: '# Brief\n\nPlanted for the IDE.\n' });
    const turn = (await client.callTool({ name: 'chat', arguments: { projectId: 'shop', agentId: 'pm', message: 'call everything__echo {"message":"via the IDE"}' } })) as { content: Array<{ text: string }> };
    const answer = JSON.parse(turn.content[0]!.text);
    expect(answer.toolCalls).toEqual([expect.objectContaining({ name: 'everything__echo', result: expect.objectContaining({ content: 'Echo: via the IDE' }) })]);
    expect((await client.readResource({ uri: 'bmad://shop/brief.md' })).contents[0]).toMatchObject({ text: '# Brief\n\nPlanted for the IDE.\n' });
  } finally {
    await client.close();
  }
}, 240_000);

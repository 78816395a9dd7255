import fs from 'node:fs/promises';
import path from 'node:path';
import { startScriptedModel, reply, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { makeFolders, postChat, startApp, type AppServer, type Folders } from './support';

let model: ScriptedModel;
let folders: Folders;
let projectsRoot: string;
let app: AppServer;

beforeAll(async () => {
  model = await startScriptedModel({});
  folders = await makeFolders('projects');
  projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  // A project installed with BMAD's own CLI before the server starts, as users bring theirs.
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'brought' });
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'm', PROJECTS_ROOT: projectsRoot });
}, 180_000);
afterAll(async () => {
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

const getJson = async (url: string) => {
  const res = await fetch(`${app.url}${url}`);
  return { status: res.status, body: await res.json() };
};
const postJson = async (url: string, body: unknown) => {
  const res = await fetch(`${app.url}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
};

it('creates a project with BMAD installer through the API and lists both projects with their agents', async () => {
  const created = await postJson('/api/projects', { name: 'fresh', userName: 'Ada', bmadVersion: '6.0.4' });
  expect(created.status).toBe(201);
  expect(created.body.data).toMatchObject({ id: 'fresh', bmad: { version: '6.0.4', folder: '_bmad' } });
  expect((await postJson('/api/projects', { name: 'fresh' })).status).toBe(409);
  expect((await postJson('/api/projects', { name: '../evil' })).body).toMatchObject({ code: 'E_VALIDATION' });

  const list = await getJson('/api/projects');
  expect(list.body.data.map((p: { id: string }) => p.id)).toEqual(['brought', 'fresh']);
  for (const id of ['brought', 'fresh']) {
    const agents = await getJson(`/api/agents?projectId=${id}`);
    expect(agents.body.data.map((a: { id: string }) => a.id)).toEqual(expect.arrayContaining(['analyst', 'pm', 'architect', 'sm', 'dev']));
  }
  // A project that appears while the server runs is found without a restart.
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'later' });
  await new Promise((r) => setTimeout(r, 300));
  expect((await getJson('/api/projects')).body.data.map((p: { id: string }) => p.id)).toContain('later');
  expect(JSON.stringify(list.body)).not.toContain(folders.root);
}, 120_000);

it("lets the PM read the analyst's brief from the shared output folder", async () => {
  model.setScript([
    reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{planning_artifacts}/product-brief.md', content: '# Brief\n\nPlants, delivered.\n' } }]),
    reply.text('Brief saved.'),
  ]);
  const analyst = await (await postChat(app.url, { projectId: 'brought', agentId: 'analyst', message: 'Write the brief' })).json();
  expect(analyst.data.message.functionCalls[0].result).toMatchObject({ ok: true, path: '{output_folder}/planning-artifacts/product-brief.md' });

  model.setScript([
    reply.toolCalls([{ name: 'read_file', arguments: { file_path: '{planning_artifacts}/product-brief.md' } }]),
    reply.text('I read the brief.'),
  ]);
  const pm = await (await postChat(app.url, { projectId: 'brought', agentId: 'pm', message: 'Read the brief' })).json();
  expect(pm.data.conversationId).not.toBe(analyst.data.conversationId);
  expect(pm.data.message.functionCalls[0].result).toMatchObject({ ok: true, content: expect.stringContaining('Plants, delivered.') });
  const conversations = await getJson('/api/conversations?projectId=brought');
  expect(conversations.body.data.items.map((c: { agentId: string }) => c.agentId).sort()).toEqual(['analyst', 'pm']);
});

it('answers an unknown project with a JSON 404 on every route', async () => {
  for (const url of ['/api/projects/nope', '/api/agents?projectId=nope', '/api/conversations?projectId=nope']) {
    const res = await getJson(url);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('E_PROJECT_NOT_FOUND');
  }
  const chat = await postChat(app.url, { projectId: 'nope', agentId: 'pm', message: 'hi' });
  expect(chat.status).toBe(404);
});

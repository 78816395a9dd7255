import fs from 'node:fs/promises';
import path from 'node:path';
import { startScriptedModel, reply, type ScriptedModel } from '../test/scripted-model';
import { makeFolders, postChat, startApp, type AppServer, type Folders } from './support';

let model: ScriptedModel;
let folders: Folders;
let app: AppServer;

beforeAll(async () => {
  model = await startScriptedModel({});
  folders = await makeFolders();
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'm' });
});
afterAll(async () => {
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

it.each(['/api/conversations/%ZZ', '/api/conversations/%E0%A4%A', '/api/conversations/abc/files/%'])('answers %s with a JSON 400', async (url) => {
  const res = await fetch(`${app.url}${url}`);
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ success: false, code: 'E_VALIDATION' });
});

it('answers unknown API paths with a JSON 404', async () => {
  for (const method of ['GET', 'POST']) {
    const res = await fetch(`${app.url}/api/no-such-thing`, { method });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ success: false, code: 'E_NOT_FOUND' });
  }
});

it('never serves a conversation folder that was replaced by a link', async () => {
  model.setScript([reply.text('ok')]);
  const body = await (await postChat(app.url, { agentId: 'product-lead', message: 'hi' })).json();
  const id = body.data.conversationId as string;
  const root = path.join(folders.outputPath, id);
  await fs.rm(root, { recursive: true, force: true });
  await fs.mkdir(folders.outputPath, { recursive: true });
  await fs.symlink(folders.dataDir, root);
  const list = await (await fetch(`${app.url}/api/conversations/${id}/files`)).json();
  expect(list.data.files).toEqual([]);
  const db = await fetch(`${app.url}/api/conversations/${id}/files/conversations.db`);
  expect(db.status).toBe(400);
  expect(JSON.stringify(await db.json())).not.toContain(folders.root);
});

/**
 * Many instances: two `next start` servers on one fresh Postgres database and one shared
 * DATA_DIR / PROJECTS_ROOT, behind nginx (round robin, no sticky sessions). Conversations, turn
 * locks, Stop and project documents hold across them; an instance killed mid-turn loses its turn
 * after the lease, and the other one goes on.
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { startScriptedModel, reply, lastUserText, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { createTestDatabase, type TestDatabase } from '../test/postgres';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { startNginx, type Nginx } from './nginx';
import { api, chatJson, chatStream, sleep, type LiveStream } from './durability-helpers';
import { launchBrowser, openTab, pickAgent, sendMessage, until, waitForText } from './browser-helpers';

jest.setTimeout(180_000);

const AGENT = 'product-lead';
const LEASE_MS = 3000;
let model: ScriptedModel;
let database: TestDatabase;
let folders: Folders;
let a: AppServer;
let b: AppServer;
let proxy: Nginx;

async function sql<T = Record<string, unknown>>(text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}

const conversation = async (url: string, id: string) => {
  const r = await api(url, `/api/conversations/${id}`);
  expect(r.status).toBe(200);
  return r.body.data;
};
const shownText = (s: LiveStream) =>
  s.events
    .filter((e) => e.type === 'text-delta')
    .map((e) => e.delta as string)
    .join('');

beforeAll(async () => {
  model = await startScriptedModel({});
  // Project documents are written by a script (each save names its conversation); the other turns
  // stream the slow scenario, one word every 40 ms.
  // A write refused as stale (the other instance's conversation wrote the document first) is
  // followed by a read and the write again, as the tool error tells a model to.
  model.setScript(({ body }) => {
    const messages = body.messages ?? [];
    const last = messages.at(-1);
    const save = reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{planning_artifacts}/prd.md', content: `# PRD\n\n${lastUserText(body)}\n` } }]);
    if (last?.role !== 'tool') return save;
    if (String(last.content).includes('E_STALE')) return reply.toolCalls([{ name: 'read_file', arguments: { file_path: '{planning_artifacts}/prd.md' } }]);
    const called = (messages.at(-2) as { tool_calls?: Array<{ function: { name: string } }> } | undefined)?.tool_calls?.[0]?.function.name;
    return called === 'read_file' ? save : reply.text('Saved.');
  });
  database = await createTestDatabase('instances');
  folders = await makeFolders('instances');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'shared' });
  const modelsFile = path.join(folders.root, 'models.yaml');
  await fs.writeFile(
    modelsFile,
    `default: slow\nprofiles:\n  slow: { baseURL: ${model.url}, model: "scripted:slow", contextWindow: 1000000, maxOutputTokens: 4096 }\n  writer: { baseURL: ${model.url}, model: scripted-writer, contextWindow: 1000000, maxOutputTokens: 4096 }\n`,
  );
  const env = {
    DATABASE_URL: database.url,
    TURN_LEASE_MS: String(LEASE_MS),
    AUTH: 'off',
    PROJECTS_ROOT: projectsRoot,
    MODELS_FILE: modelsFile,
    LOG_LEVEL: 'info',
    // As an operator runs them behind nginx: the name people use, and one proxy that names the client.
    ALLOWED_HOSTS: 'orchestrator.test',
    TRUST_PROXY: '1',
  };
  // Both at once, on an empty database.
  [a, b] = await Promise.all([startApp(folders, env), startApp(folders, env)]);
  proxy = await startNginx(path.join(folders.root, 'nginx'), [a.port, b.port]);
}, 300_000);

afterAll(async () => {
  await proxy?.stop();
  await Promise.all([a, b].filter(Boolean).map((s) => s.kill9()));
  await model?.close();
  await database?.drop();
  await folders?.cleanup();
});

it('two instances started at once on an empty database both come up; one of them migrated it', async () => {
  const migrated = [a, b].map((s) => s.logs().split('\n').filter((l) => l.includes('"event":"db.migrated"')).length);
  expect(migrated.sort()).toEqual([0, 1]);
  const names = await sql<{ name: string }>('SELECT name FROM app_migrations ORDER BY name');
  expect(names.length).toBeGreaterThan(0);
  for (const s of [a, b]) {
    const h = await api(s.url, '/api/health');
    expect(h.status).toBe(200);
    expect(h.body.data.store).toEqual({ kind: 'postgres', ok: true, migrations: { applied: names.length, latest: names.length, current: true } });
  }
});

it('through nginx, the name in ALLOWED_HOSTS is served on both instances and any other name is refused', async () => {
  const port = Number(new URL(proxy.url).port);
  const get = (host: string) =>
    new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/api/projects', headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
  // Round robin: four requests reach both instances.
  for (let i = 0; i < 4; i++) {
    expect(await get('orchestrator.test')).toBe(200);
    expect(await get(`orchestrator.test:${port}`)).toBe(200);
    expect(await get('evil.example.com')).toBe(403);
  }
});

it('a conversation created through one instance is read through the other, and through nginx on both', async () => {
  const turn = await chatStream(a.url, { agentId: AGENT, message: 'Hello from A' });
  const id = await turn.conversationId();
  await turn.until((e) => e.type === 'text-delta');
  // While the turn runs, the other instance sees it running, with the messages stored so far.
  const running = await conversation(b.url, id);
  expect(running.status).toBe('running');
  expect(running.messages.map((m: { content: string }) => m.content)).toContain('Hello from A');
  await api(a.url, `/api/conversations/${id}/stop`, { method: 'POST' });
  await turn.ended;

  const fromA = await conversation(a.url, id);
  const fromB = await conversation(b.url, id);
  expect(fromB).toEqual(fromA);
  expect(fromB.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
  const listed = await api(b.url, '/api/conversations?q=hello');
  expect(listed.body.data.items.map((c: { id: string }) => c.id)).toEqual([id]);

  // No sticky sessions: requests through nginx alternate between the instances and all see it.
  const before = (await fs.readFile(proxy.accessLog, 'utf8')).split('\n').length - 1;
  for (let i = 0; i < 6; i++) expect((await conversation(proxy.url, id)).messages).toEqual(fromA.messages);
  const lines = (await fs.readFile(proxy.accessLog, 'utf8')).split('\n').slice(before).filter((l) => l.includes(`/api/conversations/${id}`));
  const upstreams = new Set(lines.map((l) => l.split(' ')[0]));
  expect(upstreams).toEqual(new Set([`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`]));
});

it('a turn on A stopped through B ends stopped within 2 s, with the partial answer stored', async () => {
  const turn = await chatStream(a.url, { agentId: AGENT, message: 'Tell me a long story' });
  const id = await turn.conversationId();
  await turn.until(() => turn.events.filter((x) => x.type === 'text-delta').length >= 5);
  const asked = Date.now();
  const stop = await api(b.url, `/api/conversations/${id}/stop`, { method: 'POST' });
  expect(stop.status).toBe(200);
  expect(stop.body.data).toEqual({ conversationId: id, stopping: true });
  await turn.until((e) => e.type === '[DONE]', 2000);
  let stored = await conversation(b.url, id);
  while (stored.status === 'running' && Date.now() - asked < 2000) {
    await sleep(50);
    stored = await conversation(b.url, id);
  }
  expect(Date.now() - asked).toBeLessThan(2000);
  expect(stored).toMatchObject({ status: 'stopped', lastTurn: { status: 'stopped' } });
  await turn.ended;
  const shown = shownText(turn);
  expect(shown.length).toBeGreaterThan(0);
  expect(stored.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
  expect(stored.messages[1].content).toBe(shown);
  // The slow answer is far longer: it was cut, not finished.
  expect(shown.split(' ').length).toBeLessThan(100);
});

it('a second turn on B while A runs one is 409', async () => {
  const turn = await chatStream(a.url, { agentId: AGENT, message: 'First turn' });
  const id = await turn.conversationId();
  await turn.until((e) => e.type === 'text-delta');
  const busy = await chatJson(b.url, { agentId: AGENT, conversationId: id, message: 'Second turn' });
  expect(busy.status).toBe(409);
  expect(busy.body.code).toBe('E_CONVERSATION_BUSY');
  const alsoBusy = await chatJson(proxy.url, { agentId: AGENT, conversationId: id, regenerate: true });
  expect(alsoBusy.status).toBe(409);
  await api(proxy.url, `/api/conversations/${id}/stop`, { method: 'POST' });
  await turn.ended;
  expect((await conversation(b.url, id)).messages.map((m: { content: string }) => m.content)).not.toContain('Second turn');
});

it('two instances writing one project document at once keep both versions', async () => {
  const send = (url: string, who: string) => chatJson(url, { agentId: 'pm', projectId: 'shared', model: 'writer', message: `Written through ${who}` });
  const [fromA, fromB] = await Promise.all([send(a.url, 'A'), send(b.url, 'B')]);
  expect([fromA.status, fromB.status]).toEqual([200, 200]);
  const file = 'planning-artifacts/prd.md';
  const versions = (await api(proxy.url, `/api/projects/shared/files/${file}?versions`)).body.data.versions as Array<{ version: string; conversationId: string }>;
  expect(versions.map((v) => v.conversationId).sort()).toEqual([fromA.body.data.conversationId, fromB.body.data.conversationId].sort());
  const contents = await Promise.all(versions.map(async (v) => (await fetch(`${proxy.url}/api/projects/shared/files/${file}?version=${v.version}`)).text()));
  expect(contents.sort()).toEqual(['# PRD\n\nWritten through A\n', '# PRD\n\nWritten through B\n']);
  const current = await (await fetch(`${proxy.url}/api/projects/shared/files/${file}`)).text();
  expect(current).toBe(contents.find((c) => c === current));
});

it("the browser's main flow through nginx, its requests alternating between the instances: answer, Stop, reload", async () => {
  const before = (await fs.readFile(proxy.accessLog, 'utf8')).split('\n').length - 1;
  const browser = await launchBrowser();
  try {
    const tab = await openTab(browser, proxy.url);
    const { page } = tab;
    await pickAgent(page, AGENT);
    await sendMessage(page, 'Hello through nginx');
    const answer = page.getByTestId('message-assistant').first();
    // More than the 20 characters compared below: the stored answer may hold a word the screen had not yet shown at the Stop.
    await waitForText(answer, 'This is a long streamed answer');
    const id: string = await until(() => new URL(page.url()).searchParams.get('c') ?? '', 'the conversation in the URL');
    await page.getByTestId('stop-button').click();
    await page.getByTestId('stopped-notice').waitFor({ timeout: 5000 });
    const shown = await answer.innerText();

    // Stored stopped on both instances, as far as the screen showed.
    let stored = await conversation(b.url, id);
    for (let i = 0; i < 40 && stored.status === 'running'; i++) {
      await sleep(50);
      stored = await conversation(b.url, id);
    }
    expect(stored.status).toBe('stopped');
    expect((await conversation(a.url, id)).status).toBe('stopped');
    expect(stored.messages[1].content.length).toBeGreaterThan(0);
    expect(shown.replace(/\s+/g, ' ')).toContain(stored.messages[1].content.replace(/\s+/g, ' ').trim().slice(0, 20));

    await page.reload();
    await waitForText(page.getByTestId('message-user').first(), 'Hello through nginx');
    expect(tab.pageErrors).toEqual([]);
    await tab.close();

    const lines = (await fs.readFile(proxy.accessLog, 'utf8')).split('\n').slice(before).filter(Boolean);
    // The UI's Stop asked the server too, besides closing its stream.
    expect(lines.some((l) => l.includes(`POST /api/conversations/${id}/stop`))).toBe(true);
    expect(new Set(lines.filter((l) => l.includes('/api/')).map((l) => l.split(' ')[0]))).toEqual(new Set([`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`]));
  } finally {
    await browser.close();
  }
});

it('kill -9 of A mid-turn: after the lease the conversation is interrupted, and B runs the next turn', async () => {
  const turn = await chatStream(a.url, { agentId: AGENT, message: 'A long answer, please' });
  const id = await turn.conversationId();
  await turn.until((e) => e.type === 'text-delta');
  await a.kill9();
  const killed = Date.now();
  expect((await conversation(b.url, id)).status).toBe('running');
  expect((await chatJson(b.url, { agentId: AGENT, conversationId: id, message: 'Too early' })).status).toBe(409);
  let status = 'running';
  while (status === 'running' && Date.now() - killed < LEASE_MS + 5000) {
    await sleep(100);
    status = (await conversation(b.url, id)).status;
  }
  expect(status).toBe('interrupted');
  expect(Date.now() - killed).toBeGreaterThanOrEqual(LEASE_MS - 1000);
  expect(await conversation(proxy.url, id)).toMatchObject({ status: 'interrupted', lastTurn: { status: 'interrupted' } });

  // Through nginx, which finds A gone and sends everything to B.
  const next = await chatStream(proxy.url, { agentId: AGENT, conversationId: id, message: 'Go on' });
  expect(next.status).toBe(200);
  await next.until((e) => e.type === 'text-delta');
  expect((await conversation(b.url, id)).status).toBe('running');
  await api(proxy.url, `/api/conversations/${id}/stop`, { method: 'POST' });
  await next.ended;
  const after = await conversation(b.url, id);
  expect(after.status).toBe('stopped');
  expect(after.messages.filter((m: { role: string }) => m.role === 'user').map((m: { content: string }) => m.content)).toEqual(['A long answer, please', 'Go on']);
});

it('SIGTERM on the last instance mid-turn: the turn is stored interrupted and its lease released at once, and the process exits', async () => {
  const turn = await chatStream(b.url, { agentId: AGENT, message: 'One more long answer' });
  const id = await turn.conversationId();
  await turn.until((e) => e.type === 'text-delta');
  const asked = Date.now();
  await b.stop();
  expect(Date.now() - asked).toBeLessThan(10_000);
  await turn.ended;
  const [row] = await sql<{ status: string; last_turn: string }>(`SELECT status, last_turn FROM conversations WHERE id = '${id.replace(/'/g, "''")}'`);
  expect(row!.status).toBe('interrupted');
  expect(JSON.parse(row!.last_turn)).toMatchObject({ status: 'interrupted' });
  expect(await sql(`SELECT 1 FROM turn_leases WHERE conversation_id = '${id.replace(/'/g, "''")}'`)).toEqual([]);
});

/**
 * Durable conversations, against the production build (`next start`) and the scripted model:
 * restart, `kill -9` mid-turn (model streaming text, model streaming a big save_output, tools
 * writing, next model call hanging after a write), the turn lock under concurrency, and the
 * conversation list / rename / delete.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { startScriptedModel, reply, lastUserText, currentTurn, type ScriptedModel, type ChatMessage } from '../test/scripted-model';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import {
  api,
  bigDocument,
  chatJson,
  chatStream,
  checkDatabase,
  filesOnDisk,
  messagesOf,
  sleep,
  TEMP_NAME,
  textOf,
  toolPairingProblems,
  treePaths,
} from './durability-helpers';

jest.setTimeout(120_000);

const AGENT = 'product-lead';
let model: ScriptedModel;
const running: AppServer[] = [];
const folderSets: Folders[] = [];

beforeAll(async () => {
  model = await startScriptedModel({});
});
afterAll(async () => {
  await model.close();
  await Promise.all(folderSets.map((f) => f.cleanup()));
});
afterEach(async () => {
  // Whatever a failed test left running.
  await Promise.all(running.splice(0).map((a) => a.kill9()));
});

async function folders(): Promise<Folders> {
  const f = await makeFolders();
  folderSets.push(f);
  return f;
}

async function boot(f: Folders): Promise<AppServer> {
  // A window no test here fills: these tests check that the whole history survives, not its compaction.
  const app = await startApp(f, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted-e2e', OPENAI_CONTEXT_WINDOW: '1000000' });
  running.push(app);
  return app;
}

async function stop(app: AppServer, how: 'stop' | 'kill9') {
  await (how === 'stop' ? app.stop() : app.kill9());
  running.splice(running.indexOf(app), 1);
  // Nothing of the old server may survive (no orphaned worker still holding the database or the turn).
  await expect(fetch(`${app.url}/api/health`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
}

const dbFile = (f: Folders) => path.join(f.dataDir, 'conversations.db');
const outputRoot = (f: Folders, id: string) => path.join(f.outputPath, id);

/** Chat requests the model received from index `from` on. */
const requestsSince = (from: number) => model.chatRequests().slice(from);

/** GET /api/conversations/:id, asserting success. */
async function conversation(url: string, id: string) {
  const r = await api(url, `/api/conversations/${id}`);
  expect(r.status).toBe(200);
  return r.body.data;
}

/** Files API paths, asserting none is a temp file of an atomic write. */
async function listedFiles(url: string, id: string): Promise<string[]> {
  const r = await api(url, `/api/conversations/${id}/files`);
  expect(r.status).toBe(200);
  const paths = treePaths(r.body.data.files);
  expect(paths.filter((p) => TEMP_NAME.test(p) || p.split('/').some((s) => s.startsWith('.')))).toEqual([]);
  return paths;
}

/**
 * After a crash: continue the conversation with one more turn and check the model got a valid
 * history (every tool call answered) that still holds what was said before the crash.
 */
async function continueAfterCrash(url: string, id: string, mustContain: string[]) {
  const from = model.chatRequests().length;
  model.setScript([reply.text('Picking up where we left off.')]);
  const r = await chatJson(url, { agentId: AGENT, message: 'Are you still there?', conversationId: id });
  expect(r.status).toBe(200);
  expect(r.body.data).toMatchObject({ conversationId: id, stopReason: 'stop', message: { content: 'Picking up where we left off.' } });
  const sent = requestsSince(from);
  expect(sent).toHaveLength(1);
  const messages = messagesOf(sent[0]);
  expect(toolPairingProblems(messages)).toEqual([]);
  expect(messages[0].role).toBe('system');
  expect(messages[messages.length - 1]).toMatchObject({ role: 'user', content: 'Are you still there?' });
  const texts = messages.map((m) => textOf(m.content));
  for (const s of mustContain) expect(texts).toContain(s);
  expect((await conversation(url, id)).status).toBe('idle');
  return messages;
}

describe('restart', () => {
  it('keeps the conversation across a restart and sends the model the full history', async () => {
    const f = await folders();
    let app = await boot(f);
    const from = model.chatRequests().length;
    model.setScript([reply.text('Noted: the codeword is PELICAN.')]);
    const r1 = await chatJson(app.url, { agentId: AGENT, message: 'Remember the codeword PELICAN.' });
    expect(r1.status).toBe(200);
    const id = r1.body.data.conversationId as string;
    const firstSystem = textOf(messagesOf(requestsSince(from)[0])[0].content);

    await stop(app, 'stop');
    app = await boot(f);

    model.setScript([reply.text('The codeword was PELICAN.')]);
    const r2 = await chatJson(app.url, { agentId: AGENT, message: 'What was the codeword?', conversationId: id });
    expect(r2.status).toBe(200);
    expect(r2.body.data).toMatchObject({ conversationId: id, stopReason: 'stop', message: { content: 'The codeword was PELICAN.' } });

    const sent = requestsSince(from);
    expect(sent).toHaveLength(2);
    const messages = messagesOf(sent[1]);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    // Same system prompt (critical context loaded in the first process included), then the history.
    expect(textOf(messages[0].content)).toBe(firstSystem);
    expect(messages.slice(1).map((m) => textOf(m.content))).toEqual([
      'Remember the codeword PELICAN.',
      'Noted: the codeword is PELICAN.',
      'What was the codeword?',
    ]);

    const detail = await conversation(app.url, id);
    expect(detail.status).toBe('idle');
    expect(detail.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'Remember the codeword PELICAN.'],
      ['assistant', 'Noted: the codeword is PELICAN.'],
      ['user', 'What was the codeword?'],
      ['assistant', 'The codeword was PELICAN.'],
    ]);
    await stop(app, 'stop');
    expect(checkDatabase(dbFile(f))).toMatchObject({ integrity: 'ok', foreignKeyProblems: 0, journalMode: 'wal' });
  });
});

describe('kill -9 mid-turn', () => {
  it('while the model streams its answer: interrupted, then continues', async () => {
    const f = await folders();
    let app = await boot(f);
    model.setScript([reply.text('Once upon a time. '.repeat(300), { tokenDelayMs: 15, chunkSize: 8 })]);
    const s = await chatStream(app.url, { agentId: AGENT, message: 'Tell me a long story.' });
    expect(s.status).toBe(200);
    const id = await s.conversationId();
    await s.until((e) => e.type === 'text-delta' && s.events.filter((x) => x.type === 'text-delta').length >= 5);
    await stop(app, 'kill9');
    await s.ended;

    app = await boot(f);
    const detail = await conversation(app.url, id);
    expect(detail.status).toBe('interrupted');
    expect(detail.messages[0]).toMatchObject({ role: 'user', content: 'Tell me a long story.' });
    expect(await listedFiles(app.url, id)).toEqual([]);
    expect((await api(app.url, '/api/conversations?limit=5')).body.data.items).toEqual([expect.objectContaining({ id, status: 'interrupted' })]);

    await continueAfterCrash(app.url, id, ['Tell me a long story.']);
    await stop(app, 'stop');
    expect(checkDatabase(dbFile(f))).toMatchObject({ integrity: 'ok', foreignKeyProblems: 0 });
  });

  it('while the model streams the arguments of a big save_output: no file, no temp file', async () => {
    const f = await folders();
    let app = await boot(f);
    const doc = bigDocument('spec.md', 90_000);
    model.setScript([
      reply.toolCalls([{ id: 'call_spec', name: 'save_output', arguments: { file_path: 'spec.md', content: doc } }], { argumentChunks: 300, tokenDelayMs: 15 }),
    ]);
    const from = model.chatRequests().length;
    const s = await chatStream(app.url, { agentId: AGENT, message: 'Write the spec.' });
    const id = await s.conversationId();
    await model.waitFor(() => requestsSince(from).length === 1, 10_000);
    await sleep(1000);
    expect(requestsSince(from)[0].done).toBe(false); // still streaming the arguments
    await stop(app, 'kill9');

    app = await boot(f);
    expect((await conversation(app.url, id)).status).toBe('interrupted');
    expect(await listedFiles(app.url, id)).toEqual([]);
    expect(await filesOnDisk(outputRoot(f, id))).toEqual([]);

    await continueAfterCrash(app.url, id, ['Write the spec.']);
    await stop(app, 'stop');
    expect(checkDatabase(dbFile(f)).integrity).toBe('ok');
  });

  it('after a save_output while the next model call hangs: file complete, tool call answered, continues', async () => {
    const f = await folders();
    let app = await boot(f);
    const doc = bigDocument('plan.md', 60_000);
    model.setScript([reply.toolCalls([{ id: 'call_plan', name: 'save_output', arguments: { file_path: 'docs/plan.md', content: doc } }]), reply.hang()]);
    const from = model.chatRequests().length;
    const s = await chatStream(app.url, { agentId: AGENT, message: 'Save the plan.' });
    const id = await s.conversationId();
    await s.until((e) => e.type === 'tool-output-available');
    await model.waitFor(() => requestsSince(from).length === 2, 10_000);
    await stop(app, 'kill9');
    // What a kill between the temp file's creation and its rename leaves (the write is temp+rename):
    // a half-written hidden temp file next to the target. It must never surface.
    const planted = `docs/.plan.md.tmp-0123456789ab`;
    await fs.writeFile(path.join(outputRoot(f, id), planted), doc.slice(0, 1000));

    app = await boot(f);
    const detail = await conversation(app.url, id);
    expect(detail.status).toBe('interrupted');
    const calls = detail.messages.flatMap((m: { functionCalls?: unknown[] }) => m.functionCalls ?? []);
    expect(calls).toEqual([expect.objectContaining({ id: 'call_plan', name: 'save_output', result: expect.objectContaining({ ok: true }) })]);
    expect(await listedFiles(app.url, id)).toEqual(['docs', 'docs/plan.md']);
    expect(await filesOnDisk(outputRoot(f, id))).toEqual([planted, 'docs/plan.md'].sort());
    expect(await fs.readFile(path.join(outputRoot(f, id), 'docs/plan.md'), 'utf8')).toBe(doc);
    const file = await fetch(`${app.url}/api/conversations/${id}/files/docs/plan.md`);
    expect(file.status).toBe(200);
    expect(await file.text()).toBe(doc);
    const audit = await api(app.url, `/api/conversations/${id}/audit`);
    expect(audit.status).toBe(200);
    expect(audit.body.data.map((e: { toolName: string }) => e.toolName)).toContain('save_output');

    const messages = await continueAfterCrash(app.url, id, ['Save the plan.']);
    // The next turn on the interrupted conversation sweeps the crash's leftovers.
    expect(await filesOnDisk(outputRoot(f, id))).toEqual(['docs/plan.md']);
    const call = messages.findIndex((m) => m.tool_calls?.some((c) => c.id === 'call_plan'));
    expect(call).toBeGreaterThan(0);
    expect(messages[call + 1]).toMatchObject({ role: 'tool', tool_call_id: 'call_plan' });
    expect(String(messages[call + 1].content)).toContain('"ok":true');

    // The model's own file tools do not show the temp file either.
    model.setScript([reply.toolCalls([{ id: 'call_ls', name: 'list_files', arguments: { path: '{output_folder}', recursive: true } }]), reply.text('Listed.')]);
    const from2 = model.chatRequests().length;
    expect((await chatJson(app.url, { agentId: AGENT, message: 'What files are there?', conversationId: id })).status).toBe(200);
    const listing = messagesOf(requestsSince(from2)[1]).find((m) => m.role === 'tool' && m.tool_call_id === 'call_ls');
    expect(String(listing?.content)).toContain('plan.md');
    expect(String(listing?.content)).not.toContain('.tmp');
    await stop(app, 'stop');
    expect(checkDatabase(dbFile(f)).integrity).toBe('ok');
  });

  it('while tools write many files: every file absent or complete, never a visible temp file, history repaired', async () => {
    const f = await folders();
    const BATCH = 8;
    const SIZE = 95_000;
    const expected = new Map<string, string>();
    // Every model call asks for BATCH more big files, until the turn dies.
    const writer = (req: { body: Parameters<typeof currentTurn>[0] }) => {
      const round = currentTurn(req.body).filter((m: ChatMessage) => m.role === 'assistant').length;
      const tag = lastUserText(req.body).replace(/\W+/g, '-');
      const calls = Array.from({ length: BATCH }, (_, i) => {
        const file = `${tag}/r${round}/file-${i}.md`;
        if (!expected.has(file)) expected.set(file, bigDocument(file, SIZE));
        return { name: 'save_output', arguments: { file_path: file, content: expected.get(file)! } };
      });
      return reply.toolCalls(calls);
    };
    model.setScript(writer);

    let app = await boot(f);
    let id: string | undefined;
    // Kill at different moments: right as the first calls are announced (writes starting), after a
    // few results (writes of the batch still running), and a couple of rounds in.
    const triggers: Array<[string, (events: { type?: string }[]) => boolean]> = [
      ['first tool call announced', (ev) => ev.some((e) => e.type === 'tool-input-available')],
      ['first result in', (ev) => ev.some((e) => e.type === 'tool-output-available')],
      ['third model call', (ev) => ev.filter((e) => e.type === 'start-step').length >= 3],
    ];
    const said: string[] = [];
    let leftoverTemps = 0;
    for (const [name, trigger] of triggers) {
      const message = `write batch ${name}`;
      said.push(message);
      const s = await chatStream(app.url, { agentId: AGENT, message, ...(id ? { conversationId: id } : {}) });
      expect(s.status).toBe(200);
      id ??= await s.conversationId();
      await s.until(() => trigger(s.events));
      await stop(app, 'kill9');

      app = await boot(f);
      expect((await conversation(app.url, id)).status).toBe('interrupted');
      const listed = await listedFiles(app.url, id);
      const onDisk = await filesOnDisk(outputRoot(f, id));
      for (const rel of onDisk.filter((p) => !p.split('/').some((seg) => seg.startsWith('.')))) {
        const want = expected.get(rel);
        expect(want).toBeDefined();
        const got = await fs.readFile(path.join(outputRoot(f, id), rel), 'utf8');
        if (got !== want) throw new Error(`${rel} is half-written after kill -9 (${got.length} of ${want!.length} chars)`);
        expect(listed).toContain(rel);
      }
      leftoverTemps += onDisk.filter((p) => TEMP_NAME.test(p)).length;
      if (process.env.E2E_VERBOSE) console.log(`kill at "${name}": ${onDisk.length} entries on disk`, onDisk.filter((p) => TEMP_NAME.test(p)));
      // Each crash is followed by a valid continuation that still has every message said so far.
      await continueAfterCrash(app.url, id, said);
      said.push('Are you still there?');
      model.setScript(writer); // back to writing for the next round
    }
    if (leftoverTemps) console.warn(`note: ${leftoverTemps} hidden temp file(s) of interrupted writes stay on disk (not listed by the API)`);
    await stop(app, 'stop');
    expect(checkDatabase(dbFile(f))).toMatchObject({ integrity: 'ok', foreignKeyProblems: 0 });
  });
});

describe('concurrency', () => {
  it('two simultaneous turns on one conversation: exactly one 409 E_CONVERSATION_BUSY', async () => {
    const f = await folders();
    const app = await boot(f);
    model.setScript((req) => (lastUserText(req.body) === 'slow' ? reply.text('slow done', { latencyMs: 1500 }) : reply.text('ok')));
    const first = await chatJson(app.url, { agentId: AGENT, message: 'hello' });
    expect(first.status).toBe(200);
    const id = first.body.data.conversationId;

    const answers = await Promise.all([1, 2].map(() => chatJson(app.url, { agentId: AGENT, message: 'slow', conversationId: id })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const busy = answers.find((a) => a.status === 409)!;
    expect(busy.body).toMatchObject({ success: false, code: 'E_CONVERSATION_BUSY' });
    expect(answers.find((a) => a.status === 200)!.body.data).toMatchObject({ stopReason: 'stop', message: { content: 'slow done' } });

    // The rejected turn left no trace; the history is not interleaved.
    const detail = await conversation(app.url, id);
    expect(detail.status).toBe('idle');
    expect(detail.messages.map((m: { content: string }) => m.content)).toEqual(['hello', 'ok', 'slow', 'slow done']);

    // A streaming turn holds the lock too; delete is refused while it runs; afterwards all is free.
    const s = await chatStream(app.url, { agentId: AGENT, message: 'slow', conversationId: id });
    await s.conversationId();
    const during = await chatJson(app.url, { agentId: AGENT, message: 'hello', conversationId: id });
    expect(during).toMatchObject({ status: 409, body: { code: 'E_CONVERSATION_BUSY' } });
    expect((await api(app.url, `/api/conversations/${id}`, { method: 'DELETE' })).status).toBe(409);
    expect((await conversation(app.url, id)).status).toBe('running');
    await s.ended;
    expect(s.events.map((e) => e.type)).toContain('finish');
    expect((await chatJson(app.url, { agentId: AGENT, message: 'hello', conversationId: id })).status).toBe(200);
    await stop(app, 'stop');
  });

  it('50 conversations in parallel all complete, without cross-talk', async () => {
    const f = await folders();
    const app = await boot(f);
    model.setScript((req) => reply.text(`echo: ${lastUserText(req.body)}`, { latencyMs: 200, tokenDelayMs: 2, chunkSize: 4 }));
    const N = 50;
    const from = model.chatRequests().length;
    const t0 = Date.now();
    const results = await Promise.all(Array.from({ length: N }, (_, i) => chatJson(app.url, { agentId: AGENT, message: `parallel #${i}` })));
    const elapsed = Date.now() - t0;
    expect(results.map((r) => r.status)).toEqual(Array(N).fill(200));
    results.forEach((r, i) => expect(r.body.data).toMatchObject({ stopReason: 'stop', message: { content: `echo: parallel #${i}` } }));
    const ids = results.map((r) => r.body.data.conversationId as string);
    expect(new Set(ids).size).toBe(N);
    expect(requestsSince(from)).toHaveLength(N);
    // Not serialised behind one another (each model call takes ≥ 200 ms).
    expect(elapsed).toBeLessThan(N * 200);

    // A second round on the same 50, in parallel: each model call sees only its own history.
    const from2 = model.chatRequests().length;
    const again = await Promise.all(ids.map((id, i) => chatJson(app.url, { agentId: AGENT, message: `again #${i}`, conversationId: id })));
    expect(again.map((r) => r.status)).toEqual(Array(N).fill(200));
    for (const req of requestsSince(from2)) {
      const texts = messagesOf(req).slice(1).map((m) => textOf(m.content));
      const i = Number(/again #(\d+)/.exec(texts[texts.length - 1])![1]);
      expect(texts).toEqual([`parallel #${i}`, `echo: parallel #${i}`, `again #${i}`]);
    }
    const list = await api(app.url, '/api/conversations?limit=100');
    expect(list.body.data.items).toHaveLength(N);
    expect(list.body.data.items.every((c: { status: string; messageCount: number }) => c.status === 'idle')).toBe(true);
    await stop(app, 'stop');
    expect(checkDatabase(dbFile(f)).integrity).toBe('ok');
  });
});

describe('list, rename, delete', () => {
  it('pages newest first, renames, and deletes a conversation with its outputs and audit log', async () => {
    const f = await folders();
    let app = await boot(f);
    model.setScript((req) => {
      const said = lastUserText(req.body);
      if (said.startsWith('save') && currentTurn(req.body).length === 0) {
        return reply.toolCalls([{ name: 'save_output', arguments: { file_path: 'notes/notes.md', content: '# Notes\n' } }]);
      }
      return reply.text(`ok: ${said}`);
    });
    const make = async (message: string) => {
      const r = await chatJson(app.url, { agentId: AGENT, message });
      expect(r.status).toBe(200);
      return r.body.data.conversationId as string;
    };
    const a = await make('first conversation');
    const b = await make('second conversation');
    const c = await make('third conversation');

    const page1 = await api(app.url, '/api/conversations?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body.data.items.map((x: { id: string }) => x.id)).toEqual([c, b]);
    expect(typeof page1.body.data.nextCursor).toBe('string');
    const page2 = await api(app.url, `/api/conversations?limit=2&cursor=${encodeURIComponent(page1.body.data.nextCursor)}`);
    expect(page2.body.data.items.map((x: { id: string }) => x.id)).toEqual([a]);
    expect(page2.body.data.nextCursor).toBeUndefined();

    // Activity moves a conversation to the top.
    expect((await chatJson(app.url, { agentId: AGENT, message: 'more', conversationId: a })).status).toBe(200);
    expect((await api(app.url, '/api/conversations?limit=2')).body.data.items.map((x: { id: string }) => x.id)).toEqual([a, c]);

    // Rename.
    const renamed = await api(app.url, `/api/conversations/${b}`, { method: 'PATCH', json: { title: 'Launch plan' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: b, title: 'Launch plan' });
    expect((await conversation(app.url, b)).title).toBe('Launch plan');
    expect((await api(app.url, `/api/conversations/${b}`, { method: 'PATCH', json: { title: '   ' } })).body).toMatchObject({ success: false, code: 'E_VALIDATION' });
    expect((await api(app.url, '/api/conversations/00000000-0000-4000-8000-000000000000', { method: 'PATCH', json: { title: 'x' } })).status).toBe(404);

    // A conversation with an output file and audit entries.
    const d = await make('save some notes');
    expect(await listedFiles(app.url, d)).toEqual(['notes', 'notes/notes.md']);
    expect((await api(app.url, `/api/conversations/${d}/audit`)).body.data.length).toBeGreaterThan(0);
    const auditFile = path.join(f.dataDir, 'audit', `${d}.jsonl`);
    await expect(fs.stat(auditFile)).resolves.toBeTruthy();
    await expect(fs.stat(outputRoot(f, d))).resolves.toBeTruthy();

    const del = await api(app.url, `/api/conversations/${d}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(del.body.success).toBe(true);
    for (const route of [`/api/conversations/${d}`, `/api/conversations/${d}/audit`, `/api/conversations/${d}/files`, `/api/conversations/${d}/files/notes/notes.md`]) {
      expect([route, (await api(app.url, route)).status]).toEqual([route, 404]);
    }
    await expect(fs.stat(outputRoot(f, d))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.stat(auditFile)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await api(app.url, `/api/conversations/${d}`, { method: 'DELETE' })).status).toBe(404);
    expect(await chatJson(app.url, { agentId: AGENT, message: 'hello?', conversationId: d })).toMatchObject({ status: 404, body: { code: 'E_CONVERSATION_NOT_FOUND' } });

    // All of it holds after a restart.
    await stop(app, 'stop');
    app = await boot(f);
    expect((await api(app.url, `/api/conversations/${d}`)).status).toBe(404);
    const all = await api(app.url, '/api/conversations?limit=10');
    expect(all.body.data.items.map((x: { id: string; title: string }) => [x.id, x.id === b ? x.title : '-'])).toEqual([
      [a, '-'],
      [c, '-'],
      [b, 'Launch plan'],
    ]);
    await stop(app, 'stop');
  });
});

describe('shutdown and stale locks', () => {
  // SIGTERM (what `docker stop` / Kubernetes send) while a turn waits on a slow or hung model:
  // Next's graceful shutdown waits for every open request, so running turns must be aborted or
  // the process would linger up to TURN_TIMEOUT_MS until the orchestrator SIGKILLs it.
  it('a graceful stop during a turn exits promptly and leaves the turn interrupted', async () => {
    const f = await folders();
    let app = await boot(f);
    model.setScript([reply.hang()]);
    const from = model.chatRequests().length;
    const s = await chatStream(app.url, { agentId: AGENT, message: 'Think hard.' });
    const id = await s.conversationId();
    await model.waitFor(() => requestsSince(from).length === 1, 10_000);

    const t0 = Date.now();
    const fallback = setTimeout(() => app.proc.kill('SIGKILL'), 5000);
    await app.stop();
    clearTimeout(fallback);
    running.splice(running.indexOf(app), 1);
    const took = Date.now() - t0;
    const killed = app.proc.signalCode === 'SIGKILL';

    app = await boot(f);
    expect((await conversation(app.url, id)).status).toBe('interrupted');
    await stop(app, 'stop');
    expect({ stoppedBySigterm: !killed, tookUnder5s: took < 5000 }).toEqual({ stoppedBySigterm: true, tookUnder5s: true });
  });

  // After a kill -9 and a restart where the old pid now belongs to another process (pid reuse:
  // containers with stable hostnames, npm/sh wrappers), a lock checked by pid alone would keep
  // the conversation `running` and answering 409 forever.
  it('a kill -9 leaves no conversation locked when the dead server\'s pid is reused', async () => {
    const f = await folders();
    let app = await boot(f);
    model.setScript([reply.hang()]);
    const from = model.chatRequests().length;
    const s = await chatStream(app.url, { agentId: AGENT, message: 'Think hard.' });
    const id = await s.conversationId();
    await model.waitFor(() => requestsSince(from).length === 1, 10_000);
    const deadPid = app.proc.pid;
    await stop(app, 'kill9');

    // Simulate pid reuse: the lease row stays exactly as the dead server wrote it, except that its
    // pid is now one of a live, unrelated process on this host.
    const stranger = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const db = new Database(dbFile(f));
      const row = db.prepare('SELECT turn_owner, status FROM conversations WHERE id = ?').get(id) as { turn_owner: string; status: string };
      const [host, pid, nonce, ...rest] = JSON.parse(row.turn_owner) as [string, number, string, ...unknown[]];
      expect([host, pid, row.status]).toEqual([os.hostname(), deadPid, 'running']);
      db.prepare('UPDATE conversations SET turn_owner = ? WHERE id = ?').run(JSON.stringify([host, stranger.pid, nonce, ...rest]), id);
      db.close();

      app = await boot(f);
      expect((await conversation(app.url, id)).status).toBe('interrupted');
      model.setScript([reply.text('Back.')]);
      expect((await chatJson(app.url, { agentId: AGENT, message: 'Hello again', conversationId: id })).status).toBe(200);
    } finally {
      stranger.kill('SIGKILL');
    }
    await stop(app, 'stop');
  });
});

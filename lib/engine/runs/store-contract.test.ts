import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { conversationDatabase } from '../../store/conversations/database';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { MemoryRunStore } from './memory-store';
import { SqlRunStore } from './sql-store';
import type { NewRun, RunStore } from './types';

// The same queue semantics for every store: the API must not behave differently in memory, in
// DATA_DIR's SQLite file or on Postgres. `a` and `b` are two handles on one database, as two
// processes or instances have.
interface Pair {
  a: RunStore;
  b: RunStore;
}

const tmpDirs: string[] = [];
let pgDatabase: Promise<TestDatabase> | null = null;
afterAll(async () => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
  if (pgDatabase) await (await pgDatabase).drop();
});

/**
 * Two stores over one database, emptied of runs first. Each handle is ready before the case
 * runs: an SQLite handle migrating in a transaction while another handle of this same process
 * writes would hold the write lock that handle waits for, blocking (see the report on lib/store/db).
 */
async function sqlPair(target: { file: string } | { url: string }): Promise<Pair> {
  const first = conversationDatabase(target).open();
  await first.ready();
  const second = conversationDatabase(target).open();
  await second.ready();
  await sql`DELETE FROM runs`.execute(first.db);
  return { a: new SqlRunStore(first), b: new SqlRunStore(second) };
}

const factories: [string, () => Promise<Pair>][] = [
  [
    'MemoryRunStore',
    async () => {
      const store = new MemoryRunStore();
      return { a: store, b: store };
    },
  ],
  [
    'SqlRunStore on SQLite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'runs-contract-'));
      tmpDirs.push(dir);
      return sqlPair({ file: path.join(dir, 'conversations.db') });
    },
  ],
  [
    'SqlRunStore on Postgres',
    async () => {
      pgDatabase ??= createTestDatabase('runs_contract');
      return sqlPair({ url: (await pgDatabase).url });
    },
  ],
];

const contract = { skill: 'bmad-prd', flag: 'headless: true', intentRequired: true, files: ['_bmad/bmm/prd/workflow.md'] };

function newRun(n: number, over: Partial<NewRun> = {}): NewRun {
  return {
    id: `run_${String(n).padStart(3, '0')}`,
    projectId: 'p1',
    ownerId: 'u1',
    skill: 'bmad-prd',
    agentId: 'bmad-agent-pm',
    message: `Run ${n}: "quoted" ✨\nsecond line`,
    contract,
    ...over,
  };
}

const later = (ms: number) => new Date(Date.now() + ms).toISOString();
const ended = { status: 'complete' as const, result: { status: 'complete' }, artifacts: [] };

describe.each(factories)('%s', (_name, open) => {
  let a: RunStore;
  let b: RunStore;
  beforeEach(async () => {
    ({ a, b } = await open());
  });
  afterEach(async () => {
    await a.close();
    await b.close();
  });

  it('creates a queued run and reads it back the same from another handle', async () => {
    const created = await a.create(newRun(1, { intent: 'create', model: 'fast', webhook: { url: 'https://example.com/hook', secret: 's3' } }));
    expect(created).toMatchObject({
      id: 'run_001',
      status: 'queued',
      intent: 'create',
      model: 'fast',
      contract,
      result: null,
      artifacts: [],
      usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
      answers: 0,
      cancelRequested: false,
      webhook: { url: 'https://example.com/hook', secret: 's3' },
    });
    expect(created).not.toHaveProperty('webhookOutcome');
    expect(created).not.toHaveProperty('startedAt');
    expect(await b.get('run_001')).toEqual(created);
    const plain = await a.create(newRun(2));
    expect(plain).not.toHaveProperty('intent');
    expect(plain).not.toHaveProperty('model');
    expect(plain).not.toHaveProperty('webhook');
    expect(await a.get('run_nope')).toBeNull();
  });

  it("lists a project's story runs newest first, with their story and workspace, and no other run", async () => {
    await a.create(newRun(1, { storyKey: '1-1-login', workspaceId: 'ws_a' }));
    await a.create(newRun(2));
    await a.create(newRun(3, { storyKey: '1-2-logout' }));
    await a.create(newRun(4, { storyKey: '1-1-login', projectId: 'p2' }));
    const runs = await b.storyRuns('p1');
    expect(runs.map((r) => [r.id, r.storyKey, r.workspaceId ?? null])).toEqual([
      ['run_003', '1-2-logout', null],
      ['run_001', '1-1-login', 'ws_a'],
    ]);
    expect((await b.get('run_002'))!).not.toHaveProperty('storyKey');
    expect(await b.storyRuns('p3')).toEqual([]);
  });

  it('takes a message and intent holding NUL (a pasted binary), kept readable', async () => {
    const run = await a.create(newRun(1, { message: 'before\u0000after', intent: 'cre\u0000ate' }));
    expect(run.message).toMatch(/^before.after$/);
    expect((await b.get(run.id))?.message).toBe(run.message);
    expect((await b.get(run.id))?.intent).toBe(run.intent);
  });

  it('lists a project newest first, to the limit', async () => {
    for (let i = 1; i <= 5; i++) await a.create(newRun(i, i === 3 ? { projectId: 'p2' } : {}));
    expect((await b.list({ projectId: 'p1' })).map((r) => r.id)).toEqual(['run_005', 'run_004', 'run_002', 'run_001']);
    expect((await b.list({ projectId: 'p1', limit: 2 })).map((r) => r.id)).toEqual(['run_005', 'run_004']);
    expect((await b.list({ projectId: 'p1', limit: 0 })).map((r) => r.id)).toEqual(['run_005']);
    expect((await b.list({ projectId: 'p2' })).map((r) => r.id)).toEqual(['run_003']);
    expect(await b.list({ projectId: 'p3' })).toEqual([]);
  });

  it('claims the oldest queued run first, and nothing once none waits', async () => {
    expect(await a.claim('h1', later(60_000))).toBeNull();
    for (let i = 1; i <= 3; i++) await a.create(newRun(i));
    const first = await a.claim('h1', later(60_000));
    expect(first?.run).toMatchObject({ id: 'run_001', status: 'running', startedAt: expect.any(String) });
    expect(first?.lease).toEqual({ runId: 'run_001', token: expect.any(String) });
    expect((await b.claim('h2', later(60_000)))?.run.id).toBe('run_002');
    expect((await a.claim('h1', later(60_000)))?.run.id).toBe('run_003');
    expect(await b.claim('h2', later(60_000))).toBeNull();
    expect((await a.get('run_002'))?.status).toBe('running');
  });

  it('gives each run to exactly one of two handles claiming at once', async () => {
    const n = 40;
    for (let i = 1; i <= n; i++) await a.create(newRun(i));
    const taken: { store: string; id: string }[] = [];
    async function drain(store: RunStore, name: string) {
      for (;;) {
        const got = await store.claim(name, later(60_000));
        if (!got) return;
        taken.push({ store: name, id: got.run.id });
      }
    }
    // Several claimers per handle, so Postgres's pool really runs the claims side by side.
    await Promise.all([drain(a, 'a'), drain(b, 'b'), drain(a, 'a'), drain(b, 'b'), drain(a, 'a'), drain(b, 'b')]);
    const ids = taken.map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(Array.from({ length: n }, (_, i) => newRun(i + 1).id));
  });

  it('heartbeat, conversation, answers and finish do nothing with a wrong token', async () => {
    await a.create(newRun(1));
    const { lease } = (await a.claim('h1', later(60_000)))!;
    const wrong = { runId: lease.runId, token: 'not-the-token' };
    expect(await b.heartbeat(wrong, later(60_000))).toBe(false);
    await b.setConversation(wrong, 'c_wrong');
    await b.addAnswer(wrong);
    expect(await b.finish(wrong, ended)).toBe(false);
    const untouched = await b.get(lease.runId);
    expect(untouched).toMatchObject({ status: 'running', result: null, answers: 0 });
    expect(untouched).not.toHaveProperty('conversationId');
    expect(untouched).not.toHaveProperty('endedAt');

    expect(await b.heartbeat(lease, later(60_000))).toBe(true);
    await b.setConversation(lease, 'c_1');
    await b.addAnswer(lease);
    await b.addAnswer(lease);
    expect(await a.get(lease.runId)).toMatchObject({ conversationId: 'c_1', answers: 2 });
    expect(await b.finish(lease, ended)).toBe(true);
    // The lease ends with the run: a second finish or a beat finds nothing to hold.
    expect(await a.finish(lease, { status: 'failed', result: null, artifacts: [] })).toBe(false);
    expect(await a.heartbeat(lease, later(60_000))).toBe(false);
    expect(await a.get(lease.runId)).toMatchObject({ status: 'complete', result: { status: 'complete' }, endedAt: expect.any(String) });
  });

  it('keeps what finish writes, numbers as numbers', async () => {
    await a.create(newRun(1));
    const { lease } = (await a.claim('h1', later(60_000)))!;
    const usage = { promptTokens: 5_000_000_123, completionTokens: 42, cachedTokens: 7 };
    const artifacts = [{ path: 'docs/prd.md', version: 'a'.repeat(40) }];
    expect(await a.finish(lease, { status: 'partial', result: { status: 'partial', n: 1 }, error: { code: 'E_X', message: 'half' }, artifacts, usage, cost: 0.125 })).toBe(true);
    const run = (await b.get(lease.runId))!;
    expect(run).toMatchObject({ status: 'partial', result: { status: 'partial', n: 1 }, error: { code: 'E_X', message: 'half' }, artifacts, usage, cost: 0.125 });
    expect(typeof run.usage.promptTokens).toBe('number');
    expect(typeof run.cost).toBe('number');
    expect(typeof run.answers).toBe('number');
    expect(typeof run.cancelRequested).toBe('boolean');
    // A finish without usage keeps what the row had.
    await a.create(newRun(2));
    const second = (await a.claim('h1', later(60_000)))!;
    expect(await a.finish(second.lease, { status: 'failed', result: null, artifacts: [] })).toBe(true);
    const failed = (await b.get('run_002'))!;
    expect(failed.usage).toEqual({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 });
    expect(failed).not.toHaveProperty('cost');
    expect(failed).not.toHaveProperty('error');
  });

  it('recovers runs whose lease expired or whose holder is gone, and only those', async () => {
    for (let i = 1; i <= 4; i++) await a.create(newRun(i));
    const expired = (await a.claim('alive', later(-1000)))!;
    const gone = (await a.claim('dead', later(60_000)))!;
    const live = (await a.claim('alive', later(60_000)))!;
    const recovered = await b.recover(new Date().toISOString(), (h) => h === 'dead');
    expect(recovered.map((r) => r.id).sort()).toEqual([expired.run.id, gone.run.id]);
    for (const r of recovered) expect(r).toMatchObject({ status: 'interrupted', error: { code: 'E_INTERRUPTED' }, endedAt: expect.any(String) });
    expect((await a.get(live.run.id))?.status).toBe('running');
    expect((await a.get('run_004'))?.status).toBe('queued');
    // The old holders' leases are no longer theirs.
    expect(await a.finish(expired.lease, ended)).toBe(false);
    expect(await a.heartbeat(gone.lease, later(60_000))).toBe(false);
    expect((await a.get(expired.run.id))?.status).toBe('interrupted');
    // A second recovery finds nothing more.
    expect(await a.recover(new Date().toISOString(), (h) => h === 'dead')).toEqual([]);
    expect(await a.finish(live.lease, ended)).toBe(true);
  });

  it('cancels a queued run at once and marks a running one for its holder', async () => {
    await a.create(newRun(1));
    await a.create(newRun(2));
    const running = (await a.claim('h1', later(60_000)))!;
    const queued = await b.cancel('run_002');
    expect(queued).toMatchObject({ id: 'run_002', status: 'cancelled', cancelRequested: true, endedAt: expect.any(String) });
    expect(await a.claim('h1', later(60_000))).toBeNull();
    const marked = await b.cancel(running.run.id);
    expect(marked).toMatchObject({ status: 'running', cancelRequested: true });
    expect(marked).not.toHaveProperty('endedAt');
    expect((await a.get(running.run.id))?.cancelRequested).toBe(true);
    // The holder ends it; a cancel of an ended run changes nothing.
    expect(await a.finish(running.lease, { status: 'cancelled', result: null, artifacts: [] })).toBe(true);
    const after = await b.cancel(running.run.id);
    expect(after).toMatchObject({ status: 'cancelled' });
    expect(await b.cancel('run_nope')).toBeNull();
  });

  it("keeps a run's budget, and queues a blocked run again with an answer once, from either handle", async () => {
    await a.create(newRun(1, { budget: { tokens: 1000, usd: 2.5 }, webhook: { url: 'https://example.com/hook', secret: 's3' } }));
    expect((await b.get('run_001'))?.budget).toEqual({ tokens: 1000, usd: 2.5 });
    expect(await a.resume('run_001', { text: 'Go on.' })).toBeNull();
    const taken = (await a.claim('h1', later(60_000)))!;
    await a.setConversation(taken.lease, 'c1');
    await a.finish(taken.lease, { status: 'blocked', result: { status: 'blocked', reason: 'Who?' }, error: { code: 'E_X', message: 'x' }, artifacts: [] });
    const { claim } = (await a.claimWebhook('run_001', 'h1', later(60_000), new Date().toISOString(), () => false))!;
    await a.setWebhookOutcome(claim, { delivered: true, attempts: 1, status: 200, at: new Date().toISOString() });
    const answers = await Promise.all([a.resume('run_001', { text: 'Parents.', by: { id: 'u2', name: 'Eve' } }), b.resume('run_001', { text: 'Teachers.' })]);
    expect(answers.filter(Boolean)).toHaveLength(1);
    const queued = (await b.get('run_001'))!;
    expect(queued).toMatchObject({ status: 'queued', result: null, conversationId: 'c1', budget: { tokens: 1000, usd: 2.5 } });
    expect(queued.resume).toEqual(answers[0] ? { text: 'Parents.', by: { id: 'u2', name: 'Eve' } } : { text: 'Teachers.' });
    for (const gone of ['error', 'endedAt', 'webhookOutcome'] as const) expect(queued).not.toHaveProperty(gone);
    expect((await b.claim('h2', later(60_000)))?.run.id).toBe('run_001');
  });

  it('records a webhook outcome from the delivery that holds the claim, never from one taken over', async () => {
    await a.create(newRun(1, { webhook: { url: 'https://example.com/h', secret: 's' } }));
    const { lease } = (await a.claim('h', later(60_000)))!;
    await a.finish(lease, ended);
    const now = new Date().toISOString();
    const first = (await a.claimWebhook('run_001', 'h1', later(60_000), now, () => false))!;
    // The first holder's time ran out; another took the delivery over and finished it.
    const second = (await b.claimWebhook('run_001', 'h2', later(60_000), later(120_000), () => false))!;
    expect(second).not.toBeNull();
    const outcome = { delivered: false, attempts: 3, status: 502, error: 'HTTP 502', at: now };
    await b.setWebhookOutcome(second.claim, outcome);
    // The late first holder's outcome changes nothing.
    await a.setWebhookOutcome(first.claim, { delivered: true, attempts: 1, status: 204, at: now });
    expect((await b.get('run_001'))?.webhookOutcome).toEqual(outcome);
  });

  it('gives an ended run webhook delivery to one holder at a time', async () => {
    const hook = { webhook: { url: 'https://example.com/h', secret: 's' } };
    await a.create(newRun(1, hook));
    await a.create(newRun(2));
    await a.create(newRun(3, hook));
    const since = later(-60_000);
    const now = () => new Date().toISOString();
    const never = () => false;
    // Not before the run ended.
    expect(await a.claimWebhook('run_001', 'h1', later(60_000), now(), never)).toBeNull();
    for (let i = 0; i < 3; i++) {
      const { lease } = (await a.claim('h', later(60_000)))!;
      await a.finish(lease, ended);
    }
    expect(await b.awaitingWebhook(since)).toEqual(['run_001', 'run_003']);
    expect(await b.awaitingWebhook(later(60_000))).toEqual([]);
    // No webhook, nothing to deliver.
    expect(await a.claimWebhook('run_002', 'h1', later(60_000), now(), never)).toBeNull();

    const both = await Promise.all([a.claimWebhook('run_001', 'h1', later(60_000), now(), never), b.claimWebhook('run_001', 'h2', later(60_000), now(), never)]);
    expect(both.filter(Boolean)).toHaveLength(1);
    const won = both.find(Boolean)!;
    expect(won.run).toMatchObject({ id: 'run_001', status: 'complete', webhook: hook.webhook });
    expect(won.run).not.toHaveProperty('webhookOutcome');
    // Under way: not taken again while its holder lives and its time runs, still awaiting.
    expect(await a.claimWebhook('run_001', 'h3', later(60_000), now(), never)).toBeNull();
    expect((await b.get('run_001'))?.webhookOutcome).toBeUndefined();
    expect(await b.awaitingWebhook(since)).toEqual(['run_001', 'run_003']);

    // A holder gone, or a time passed: another takes it over, and the first's release is void.
    const holder = both[0] ? 'h1' : 'h2';
    const over = await b.claimWebhook('run_001', 'h3', later(60_000), now(), (h) => h === holder);
    expect(over).not.toBeNull();
    await a.releaseWebhook(won.claim);
    expect(await a.claimWebhook('run_001', 'h4', later(60_000), now(), never)).toBeNull();
    const late = await a.claimWebhook('run_001', 'h4', later(60_000), later(120_000), never);
    expect(late).not.toBeNull();
    // Released by its holder: free again.
    await b.releaseWebhook(late!.claim);
    const again = await a.claimWebhook('run_001', 'h5', later(60_000), now(), never);
    expect(again).not.toBeNull();

    const outcome = { delivered: true, attempts: 1, status: 204, at: now() };
    await a.setWebhookOutcome(again!.claim, outcome);
    expect((await b.get('run_001'))?.webhookOutcome).toEqual(outcome);
    expect(await b.claimWebhook('run_001', 'h6', later(60_000), later(600_000), () => true)).toBeNull();
    expect(await b.awaitingWebhook(since)).toEqual(['run_003']);
  });
});

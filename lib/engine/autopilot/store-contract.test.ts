import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { conversationDatabase } from '../../store/conversations/database';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { MemoryAutopilotStore, SqlAutopilotStore } from './store';
import { DEFAULT_SETTINGS, type AutopilotStore, type PipelineRow } from './types';

// The same behaviour in memory, in DATA_DIR's SQLite file and on Postgres. `a` and `b` are two
// handles on one database, as two instances have.
interface Pair {
  a: AutopilotStore;
  b: AutopilotStore;
}

const tmpDirs: string[] = [];
const opened: AutopilotStore[] = [];
let pgDatabase: Promise<TestDatabase> | null = null;
afterAll(async () => {
  for (const s of opened) await s.close();
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
  if (pgDatabase) await (await pgDatabase).drop();
});

async function sqlPair(target: { file: string } | { url: string }): Promise<Pair> {
  const first = conversationDatabase(target).open();
  await first.ready();
  const second = conversationDatabase(target).open();
  await second.ready();
  for (const t of ['autopilot_settings', 'autopilot_stories', 'autopilot_decisions']) await sql`DELETE FROM ${sql.table(t)}`.execute(first.db);
  const pair = { a: new SqlAutopilotStore(first), b: new SqlAutopilotStore(second) };
  opened.push(pair.a, pair.b);
  return pair;
}

const factories: [string, () => Promise<Pair>][] = [
  ['memory', async () => {
    const store = new MemoryAutopilotStore();
    return { a: store, b: store };
  }],
  ['SQLite', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-contract-'));
    tmpDirs.push(dir);
    return sqlPair({ file: path.join(dir, 'conversations.db') });
  }],
  ['Postgres', async () => {
    pgDatabase ??= createTestDatabase('ap_contract');
    return sqlPair({ url: (await pgDatabase).url });
  }],
];

const row = (key: string): Omit<PipelineRow, 'version'> => ({ projectId: 'p1', storyKey: key, step: 'starting', round: 1, since: new Date().toISOString(), note: null, workspaceId: null, runId: null, runKind: null, skipGate: false });

describe.each(factories)('the autopilot store on %s', (_label, make) => {
  let s: Pair;
  beforeEach(async () => {
    s = await make();
  });

  it('keeps settings and who enabled them; a project is listed while on or while it has stories under way', async () => {
    expect(await s.a.get('p1')).toBeNull();
    const on = await s.a.putSettings('p1', { ...DEFAULT_SETTINGS, enabled: true, maxParallel: 3, merge: { onRed: 'rebuild' } }, { id: 'u1', name: 'Ada' });
    expect(on).toMatchObject({ settings: { enabled: true, maxParallel: 3, merge: { onRed: 'rebuild' } }, enabledBy: { id: 'u1', name: 'Ada' }, paused: null });
    const off = await s.b.putSettings('p1', { ...on.settings, enabled: false }, undefined);
    expect(off.enabledBy).toEqual({ id: 'u1', name: 'Ada' });
    expect(await s.a.projects()).toEqual([]);
    await s.a.insertStory(row('1-1-a'));
    expect(await s.b.projects()).toEqual(['p1']);
    await s.b.setPaused('p1', { reason: 'spent', since: 'now' });
    expect((await s.a.get('p1'))!.paused).toEqual({ reason: 'spent', since: 'now' });
  });

  it('gives a project to one holder at a time, until its lease runs out or its holder is gone', async () => {
    await s.a.putSettings('p1', DEFAULT_SETTINGS, null);
    const alive = () => false;
    expect(await s.a.lease('p1', 'h1', '2030-01-01T00:00:00Z', '2026-01-01T00:00:00Z', alive)).toBe(true);
    expect(await s.b.lease('p1', 'h2', '2030-01-01T00:00:00Z', '2026-01-01T00:00:00Z', alive)).toBe(false);
    expect(await s.a.lease('p1', 'h1', '2030-01-02T00:00:00Z', '2026-01-01T00:00:00Z', alive)).toBe(true);
    expect(await s.b.lease('p1', 'h2', '2031-01-01T00:00:00Z', '2030-06-01T00:00:00Z', alive)).toBe(true);
    expect(await s.a.lease('p1', 'h1', '2031-01-01T00:00:00Z', '2030-06-01T00:00:00Z', (h) => h === 'h2')).toBe(true);
    await s.a.release('p1', 'h1');
    expect(await s.b.lease('p1', 'h2', '2031-01-01T00:00:00Z', '2030-06-01T00:00:00Z', alive)).toBe(true);
  });

  it('takes a story once and moves it only from the version read', async () => {
    expect(await s.a.insertStory(row('1-1-a'))).toBe(true);
    expect(await s.b.insertStory(row('1-1-a'))).toBe(false);
    const [r] = await s.b.stories('p1');
    const moved = await s.a.updateStory('p1', '1-1-a', r!.version, { step: 'building', runId: 'run_1', runKind: 'build', workspaceId: 'ws_1' });
    expect(moved).toMatchObject({ step: 'building', runId: 'run_1', runKind: 'build', workspaceId: 'ws_1', version: r!.version + 1 });
    expect(await s.b.updateStory('p1', '1-1-a', r!.version, { step: 'stopped' })).toBeNull();
    expect(await s.b.updateStory('p1', '1-1-a', moved!.version, { skipGate: true, round: 2 })).toMatchObject({ step: 'building', skipGate: true, round: 2 });
    await s.a.removeStory('p1', '1-1-a');
    expect(await s.b.stories('p1')).toEqual([]);
  });

  it('resolves a decision once', async () => {
    await s.a.addDecision({ id: 'dec_1', projectId: 'p1', storyKey: '1-1-a', kind: 'test-gate', text: 'red', detail: 'out', runId: null, actions: ['retry', 'skip'], since: '2026-01-01T00:00:00Z' });
    expect(await s.b.decisions('p1', { open: true })).toEqual([expect.objectContaining({ id: 'dec_1', actions: ['retry', 'skip'], resolvedAt: null })]);
    expect(await s.a.resolveDecision('p2', 'dec_1', 'now')).toBe(false);
    const [x, y] = await Promise.all([s.a.resolveDecision('p1', 'dec_1', 'now'), s.b.resolveDecision('p1', 'dec_1', 'now')]);
    expect([x, y].filter(Boolean)).toHaveLength(1);
    expect(await s.b.decisions('p1', { open: true })).toEqual([]);
    expect(await s.b.decisions('p1')).toHaveLength(1);
  });
});

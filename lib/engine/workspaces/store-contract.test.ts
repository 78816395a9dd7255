import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { conversationDatabase } from '../../store/conversations/database';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { MemoryWorkspaceStore } from './memory-store';
import { SqlWorkspaceStore } from './sql-store';
import { NameTakenError, type NewWorkspace, type WorkspaceStore } from './types';

// The same behaviour in memory, in DATA_DIR's SQLite file and on Postgres. `a` and `b` are two
// handles on one database, as two processes or instances have.
interface Pair {
  a: WorkspaceStore;
  b: WorkspaceStore;
}

const tmpDirs: string[] = [];
const opened: WorkspaceStore[] = [];
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
  await sql`DELETE FROM workspaces`.execute(first.db);
  await sql`DELETE FROM build_settings`.execute(first.db);
  const pair = { a: new SqlWorkspaceStore(first), b: new SqlWorkspaceStore(second) };
  opened.push(pair.a, pair.b);
  return pair;
}

const factories: [string, () => Promise<Pair>][] = [
  [
    'MemoryWorkspaceStore',
    async () => {
      const store = new MemoryWorkspaceStore();
      return { a: store, b: store };
    },
  ],
  [
    'SqlWorkspaceStore on SQLite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-contract-'));
      tmpDirs.push(dir);
      return sqlPair({ file: path.join(dir, 'conversations.db') });
    },
  ],
  [
    'SqlWorkspaceStore on Postgres',
    async () => {
      pgDatabase ??= createTestDatabase('ws_contract');
      return sqlPair({ url: (await pgDatabase).url });
    },
  ],
];

function row(n: number, over: Partial<NewWorkspace> = {}): NewWorkspace {
  return { id: `ws_${String(n).padStart(3, '0')}`, projectId: 'p1', name: `story-${n}`, branch: `bmad/story-${n}`, base: 'main', baseCommit: 'a'.repeat(40), createdBy: 'u1', ...over };
}

describe.each(factories)('%s', (_label, make) => {
  let s: Pair;
  beforeEach(async () => {
    s = await make();
  });

  it('keeps build settings per project, off by default, fields left out keeping their values', async () => {
    expect(await s.a.getBuild('p1')).toBeNull();
    const none = { test: null, appendOnly: [] };
    expect(await s.a.putBuild('p1', { setup: 'npm ci' })).toEqual({ enabled: false, baseBranch: null, setup: 'npm ci', env: {}, ...none });
    expect(await s.b.putBuild('p1', { enabled: true, env: { A: 'x "y"' } })).toEqual({ enabled: true, baseBranch: null, setup: 'npm ci', env: { A: 'x "y"' }, ...none });
    expect(await s.a.putBuild('p1', { baseBranch: 'develop', setup: null })).toEqual({ enabled: true, baseBranch: 'develop', setup: null, env: { A: 'x "y"' }, ...none });
    expect(await s.b.getBuild('p1')).toEqual({ enabled: true, baseBranch: 'develop', setup: null, env: { A: 'x "y"' }, ...none });
    expect(await s.b.getBuild('p2')).toBeNull();
    expect(await s.b.putBuild('p1', { test: 'npm test', appendOnly: ['docs/log.md', 'notes/ideas.md'] })).toMatchObject({ setup: null, test: 'npm test', appendOnly: ['docs/log.md', 'notes/ideas.md'] });
    expect(await s.a.putBuild('p1', { setup: 'uv sync' })).toMatchObject({ setup: 'uv sync', test: 'npm test', appendOnly: ['docs/log.md', 'notes/ideas.md'] });
    expect(await s.a.getBuild('p1')).toMatchObject({ test: 'npm test', appendOnly: ['docs/log.md', 'notes/ideas.md'] });
    expect(await s.b.putBuild('p3', { appendOnly: ['x.md'] })).toEqual({ enabled: false, baseBranch: null, setup: null, env: {}, test: null, appendOnly: ['x.md'] });

  });

  it('inserts, gets, lists newest first and updates rows', async () => {
    const first = await s.a.insert(row(1));
    expect(first).toMatchObject({ id: 'ws_001', projectId: 'p1', name: 'story-1', branch: 'bmad/story-1', base: 'main', status: 'open', createdBy: 'u1', setup: null });
    expect(first.mergedCommit).toBeUndefined();
    await new Promise((r) => setTimeout(r, 5));
    await s.a.insert(row(2));
    await s.a.insert(row(3, { projectId: 'p2' }));
    expect((await s.b.list('p1')).map((w) => w.id)).toEqual(['ws_002', 'ws_001']);
    expect(await s.b.get('ws_001')).toEqual(first);
    expect(await s.b.get('ws_nope')).toBeNull();
    const setup = { status: 'failed' as const, exitCode: 1, output: 'npm ERR! ✨', durationMs: 5, at: new Date().toISOString() };
    expect((await s.b.update('ws_001', { setup }))!.setup).toEqual(setup);
    const merged = await s.a.update('ws_001', { status: 'merged', mergedCommit: 'b'.repeat(40) }, 'open');
    expect(merged).toMatchObject({ status: 'merged', mergedCommit: 'b'.repeat(40) });
    // Only from the status named: a second merge or a stale discard changes nothing.
    expect(await s.b.update('ws_001', { status: 'merged' }, 'open')).toBeNull();
    expect(await s.b.update('ws_001', { status: 'discarded' }, 'open')).toBeNull();
    expect((await s.b.get('ws_001'))!.status).toBe('merged');
  });

  it('keeps where a workspace was merged and by whom, and what its last sync took from the clone', async () => {
    await s.a.insert(row(1));
    const at = new Date().toISOString();
    const synced = await s.b.update('ws_001', { syncedFrom: 'c'.repeat(40), syncRefused: 'over the quota' });
    expect(synced).toMatchObject({ syncedFrom: 'c'.repeat(40), syncRefused: 'over the quota' });
    expect(await s.a.get('ws_001')).toMatchObject({ syncedFrom: 'c'.repeat(40), syncRefused: 'over the quota' });
    // null clears the refusal; fields left out keep their values.
    const cleared = await s.a.update('ws_001', { syncedFrom: 'd'.repeat(40), syncRefused: null, syncDropped: ['e'.repeat(40), 'f'.repeat(40)] });
    expect(cleared!.syncedFrom).toBe('d'.repeat(40));
    expect(cleared!.syncDropped).toEqual(['e'.repeat(40), 'f'.repeat(40)]);
    expect(cleared!.syncRefused).toBeUndefined();
    const merged = await s.b.update('ws_001', { status: 'merged', mergedCommit: 'b'.repeat(40), mergedInto: 'main', mergedAt: at, mergedBy: 'Ada Lovelace' }, 'open');
    expect(merged).toMatchObject({ status: 'merged', mergedInto: 'main', mergedAt: at, mergedBy: 'Ada Lovelace', syncedFrom: 'd'.repeat(40) });
    expect(await s.a.get('ws_001')).toEqual(merged);
    const fresh = await s.a.insert(row(2));
    for (const k of ['mergedInto', 'mergedAt', 'mergedBy', 'syncedFrom', 'syncRefused', 'syncDropped'] as const) expect(fresh[k]).toBeUndefined();
  });

  it('keeps a name unique among a project\'s live workspaces, one winner when two insert at once', async () => {
    const results = await Promise.allSettled([s.a.insert(row(1)), s.b.insert(row(2, { name: 'story-1' }))]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(NameTakenError);
    // Another project may use it; once discarded, the name is free again.
    await s.a.insert(row(3, { name: 'story-1', projectId: 'p2' }));
    const winner = (await s.a.list('p1'))[0]!;
    await s.a.update(winner.id, { status: 'discarded' });
    await s.b.insert(row(4, { name: 'story-1' }));
    expect((await s.b.list('p1')).map((w) => w.id)).toEqual(['ws_004']);
    expect((await s.b.list('p1', { includeDiscarded: true })).map((w) => w.id).sort()).toEqual([winner.id, 'ws_004'].sort());
    await s.a.remove('ws_004');
    expect(await s.b.get('ws_004')).toBeNull();
  });
});

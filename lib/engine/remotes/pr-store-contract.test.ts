import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { conversationDatabase } from '../../store/conversations/database';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { MemoryPullRequestStore, SqlPullRequestStore, type PullRequestStore } from './pr-store';

// Pull requests, deliveries and the poll lease: the same behaviour in memory, in DATA_DIR's
// SQLite file and on Postgres, with two handles on one database as two instances have; and a
// workspace's `closed` status, which the migration lets the workspaces table hold.
interface Pair {
  a: PullRequestStore;
  b: PullRequestStore;
  /** A workspace row moved to `status` from `from` by a conditional UPDATE (SQL only): whether it moved. */
  workspaceStatus?: (status: string, from: string) => Promise<boolean>;
  /** A new workspace row with `status` (SQL only). */
  insertWorkspace?: (id: string, status: string) => Promise<void>;
}

const tmpDirs: string[] = [];
const opened: { close(): Promise<void> }[] = [];
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
  for (const t of ['workspace_pull_requests', 'forge_deliveries', 'forge_leases', 'workspaces']) await sql.raw(`DELETE FROM ${t}`).execute(first.db);
  const insertWorkspace = async (id: string, status: string) => {
    await sql`INSERT INTO workspaces (id, project_id, name, branch, base, base_commit, status, created_by, created_at, updated_at) VALUES (${id}, 'p1', ${id}, ${`bmad/${id}`}, 'main', ${'c'.repeat(40)}, ${status}, 'Ed', '2026-01-01', '2026-01-01')`.execute(first.db);
  };
  const workspaceStatus = async (status: string, from: string) => {
    const r = await sql`UPDATE workspaces SET status = ${status} WHERE id = 'w9' AND status = ${from}`.execute(first.db);
    return Number(r.numAffectedRows ?? 0) === 1;
  };
  const pair = { a: new SqlPullRequestStore(first), b: new SqlPullRequestStore(second), workspaceStatus, insertWorkspace };
  opened.push(pair.a, pair.b);
  return pair;
}

const factories: [string, () => Promise<Pair>][] = [
  [
    'in memory',
    async () => {
      const store = new MemoryPullRequestStore();
      return { a: store, b: store };
    },
  ],
  [
    'on SQLite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pr-contract-'));
      tmpDirs.push(dir);
      return sqlPair({ file: path.join(dir, 'conversations.db') });
    },
  ],
  [
    'on Postgres',
    async () => {
      pgDatabase ??= createTestDatabase('pr_contract');
      return sqlPair({ url: (await pgDatabase).url });
    },
  ],
];

const row = (over: Partial<Parameters<PullRequestStore['put']>[0]> = {}) => ({
  workspaceId: 'w1',
  projectId: 'p1',
  branch: 'bmad/login',
  base: 'main',
  number: 7,
  url: 'https://github.com/team/app/pull/7',
  state: 'open' as const,
  draft: false,
  headSha: 'a'.repeat(40),
  etag: null,
  checks: null,
  note: null,
  pushedHead: 'a'.repeat(40),
  ...over,
});

describe.each(factories)('pull requests %s', (_label, make) => {
  let s: Pair;
  beforeEach(async () => {
    s = await make();
  });

  it('keeps one per workspace, found by number; a state change happens once, from the state it leaves', async () => {
    expect(await s.a.get('w1')).toBeNull();
    const made = await s.a.put(row());
    expect(made).toMatchObject({ workspaceId: 'w1', number: 7, state: 'open', draft: false, checks: null });
    expect(await s.b.byNumber('p1', 7)).toMatchObject({ workspaceId: 'w1' });
    expect(await s.b.byNumber('p2', 7)).toBeNull();
    const checks = { state: 'success' as const, checks: [{ name: 'ci', state: 'success' as const, url: 'https://ci/1' }] };
    expect(await s.b.update('w1', { checks, etag: '"e1"', draft: true })).toMatchObject({ checks, etag: '"e1"', draft: true, state: 'open' });
    // Two instances learn the merge at once: one moves it.
    const moved = await Promise.all([s.a.update('w1', { state: 'merged', note: 'merged' }, 'open'), s.b.update('w1', { state: 'merged', note: 'merged' }, 'open')]);
    expect(moved.filter(Boolean)).toHaveLength(1);
    expect(await s.a.get('w1')).toMatchObject({ state: 'merged', note: 'merged', checks });
    await s.a.put(row({ workspaceId: 'w2', number: 8 }));
    expect((await s.b.listOpen()).map((r) => r.workspaceId)).toEqual(['w2']);
    expect((await s.b.list('p1')).map((r) => r.workspaceId).sort()).toEqual(['w1', 'w2']);
    // Put replaces the row (a publish again), keeping its creation time.
    const again = await s.b.put(row({ workspaceId: 'w2', number: 9, pushedHead: 'b'.repeat(40) }));
    expect(again).toMatchObject({ number: 9, pushedHead: 'b'.repeat(40) });
  });

  it('claims a delivery once; a released one can be claimed again', async () => {
    const claims = await Promise.all([s.a.claimDelivery('p1', 'd1'), s.b.claimDelivery('p1', 'd1')]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await s.a.claimDelivery('p2', 'd1')).toBe(true);
    await s.b.releaseDelivery('p1', 'd1');
    expect(await s.a.claimDelivery('p1', 'd1')).toBe(true);
  });

  it('gives the poll lease to one holder until it expires; its holder renews it', async () => {
    expect(await s.a.takeLease('poll', 'h1', 60_000)).toBe(true);
    expect(await s.b.takeLease('poll', 'h2', 60_000)).toBe(false);
    expect(await s.b.takeLease('poll', 'h1', 60_000)).toBe(true);
    expect(await s.a.takeLease('other', 'h2', 60_000)).toBe(true);
    expect(await s.a.takeLease('short', 'h1', -1)).toBe(true);
    expect(await s.b.takeLease('short', 'h2', 60_000)).toBe(true);
  });

  it('the workspaces table holds a closed workspace (its pull request closed upstream)', async () => {
    if (!s.workspaceStatus || !s.insertWorkspace) return;
    await s.insertWorkspace('w9', 'open');
    expect(await s.workspaceStatus('closed', 'open')).toBe(true);
    expect(await s.workspaceStatus('closed', 'open')).toBe(false);
    expect(await s.workspaceStatus('open', 'closed')).toBe(true);
    await expect(s.insertWorkspace('w10', 'closed')).resolves.toBeUndefined();
  });
});

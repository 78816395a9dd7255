import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { conversationDatabase } from '../../store/conversations/database';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';
import { MemoryRemoteStore } from './memory-store';
import { SqlRemoteStore } from './sql-store';
import type { RemoteStore } from './types';

// The same behaviour in memory, in DATA_DIR's SQLite file and on Postgres. `a` and `b` are two
// handles on one database, as two processes or instances have.
interface Pair {
  a: RemoteStore;
  b: RemoteStore;
}

const tmpDirs: string[] = [];
const opened: RemoteStore[] = [];
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
  await sql`DELETE FROM project_remotes`.execute(first.db);
  await sql`DELETE FROM project_clones`.execute(first.db);
  const pair = { a: new SqlRemoteStore(first), b: new SqlRemoteStore(second) };
  opened.push(pair.a, pair.b);
  return pair;
}

const factories: [string, () => Promise<Pair>][] = [
  [
    'MemoryRemoteStore',
    async () => {
      const store = new MemoryRemoteStore();
      return { a: store, b: store };
    },
  ],
  [
    'SqlRemoteStore on SQLite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'remote-contract-'));
      tmpDirs.push(dir);
      return sqlPair({ file: path.join(dir, 'conversations.db') });
    },
  ],
  [
    'SqlRemoteStore on Postgres',
    async () => {
      pgDatabase ??= createTestDatabase('remote_contract');
      return sqlPair({ url: (await pgDatabase).url });
    },
  ],
];

describe.each(factories)('%s', (_label, make) => {
  let s: Pair;
  beforeEach(async () => {
    s = await make();
  });

  it('keeps a remote per project: created with a url, changed field by field, null clearing one, removed', async () => {
    expect(await s.a.get('p1')).toBeNull();
    await expect(s.a.put('p1', { mode: 'push' }, 'u1')).rejects.toThrow('needs a url');
    const made = await s.a.put('p1', { url: 'https://github.com/team/app.git', forge: 'github', token: 'v1.sealed' }, 'u1');
    expect(made).toMatchObject({ projectId: 'p1', url: 'https://github.com/team/app.git', forge: 'github', apiUrl: null, mode: 'pull-request', token: 'v1.sealed', webhookSecret: null, statusBranch: null, lastFetch: null, updatedBy: 'u1' });
    const fetch = { at: new Date().toISOString(), ok: true, branch: 'main', head: 'a'.repeat(40) };
    const changed = await s.b.put('p1', { mode: 'push', lastFetch: fetch, webhookSecret: 'v1.other' }, 'u2');
    expect(changed).toMatchObject({ url: 'https://github.com/team/app.git', forge: 'github', mode: 'push', token: 'v1.sealed', webhookSecret: 'v1.other', lastFetch: fetch, updatedBy: 'u2' });
    expect(await s.a.put('p1', { token: null, statusBranch: 'bmad/sprint-status' }, 'u1')).toMatchObject({ token: null, webhookSecret: 'v1.other', statusBranch: 'bmad/sprint-status', mode: 'push' });
    expect((await s.b.list()).map((r) => r.projectId)).toEqual(['p1']);
    await s.b.remove('p1');
    expect(await s.a.get('p1')).toBeNull();
  });

  it('claims a clone once: a second claim fails while it runs or is ready; a failed or interrupted one is taken over', async () => {
    const old = new Date(Date.now() - 120_000).toISOString();
    const row = { projectId: 'p1', url: 'https://git.example.com/a.git', branch: 'main', createdBy: 'u1' };
    const claims = await Promise.all([s.a.claimClone(row, old), s.b.claimClone(row, old)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await s.a.getClone('p1')).toMatchObject({ status: 'running', phase: 'connecting', percent: null, url: row.url, branch: 'main', createdBy: 'u1', installed: null });
    expect(await s.b.updateClone('p1', { phase: 'receiving objects', percent: 40 }, 'running')).toMatchObject({ phase: 'receiving objects', percent: 40 });
    expect(await s.a.updateClone('p1', { status: 'ready', installed: false, percent: 100 }, 'running')).toMatchObject({ status: 'ready', installed: false });
    // Only from the status named.
    expect(await s.b.updateClone('p1', { status: 'failed' }, 'running')).toBeNull();
    expect(await s.a.claimClone(row, new Date().toISOString())).toBe(false);
    await s.a.updateClone('p1', { status: 'failed', message: 'git said no' });
    expect(await s.b.claimClone({ ...row, branch: 'dev' }, old)).toBe(true);
    expect(await s.a.getClone('p1')).toMatchObject({ status: 'running', branch: 'dev', message: null });
    // A running clone whose heartbeat stopped before `staleBefore` is taken over; a live one is not.
    expect(await s.a.claimClone(row, old)).toBe(false);
    await s.a.updateClone('p1', { heartbeatAt: new Date(Date.now() - 300_000).toISOString() });
    expect(await s.b.claimClone(row, old)).toBe(true);
    await s.b.removeClone('p1');
    expect(await s.a.getClone('p1')).toBeNull();
  });
});

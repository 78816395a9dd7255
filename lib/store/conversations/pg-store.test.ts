import { spawn } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { PgConversationStore, indexWords, prefixQuery } from './pg-store';
import { MemoryConversationStore } from './memory-store';
import { searchTerms } from './internal';
import type { ConversationStore } from './types';
import { POSTGRES_MIGRATIONS } from '../db/migrations';
import { MIGRATION_TABLE } from '../db/migrate';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';

// What only a network store has to prove: several instances on one database (migrations, turn
// leases, a holder that dies), and search that agrees with the other stores word for word.
const REPO_ROOT = path.resolve(__dirname, '../../..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let database: TestDatabase;
const open: ConversationStore[] = [];
const store = (options: ConstructorParameters<typeof PgConversationStore>[1] = {}) => {
  const s = new PgConversationStore(database.url, options);
  open.push(s);
  return s;
};

beforeAll(async () => {
  database = await createTestDatabase('pgstore');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await database.drop();
});

async function query<T>(sqlText: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query(sqlText, values)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('migrations', () => {
  it('four instances starting at once on an empty database all come up, and each migration runs once', async () => {
    const fresh = await createTestDatabase('migrate');
    const stores = Array.from({ length: 4 }, () => new PgConversationStore(fresh.url));
    try {
      await Promise.all(stores.map((s) => s.ready));
      for (const s of stores) expect(await s.health()).toEqual({ kind: 'postgres', ok: true, migrations: { applied: Object.keys(POSTGRES_MIGRATIONS).length, latest: Object.keys(POSTGRES_MIGRATIONS).length, current: true } });
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      const rows = (await client.query(`SELECT name FROM ${MIGRATION_TABLE} ORDER BY name`)).rows.map((r) => r.name);
      await client.end();
      expect(rows).toEqual(Object.keys(POSTGRES_MIGRATIONS).sort());
      // Every instance works on the one schema.
      const c = await stores[0]!.create({ agentId: 'pm', bundleName: 'bmm' });
      expect((await stores[3]!.get(c.id))?.id).toBe(c.id);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await fresh.drop();
    }
  });

  it('says so in health when the database is unreachable', async () => {
    const s = new PgConversationStore('postgres://postgres@127.0.0.1:1/nowhere');
    await expect(s.ready).rejects.toThrow();
    expect(await s.health()).toMatchObject({ kind: 'postgres', ok: false, migrations: { current: false } });
    await expect(s.get('x')).rejects.toThrow();
    await s.close();
  });

  it('works once a database that was missing at start is there', async () => {
    const name = `bmad_late_${process.pid}_${Date.now()}`;
    const url = new URL(database.url);
    url.pathname = `/${name}`;
    const s = new PgConversationStore(url.toString());
    try {
      await expect(s.ready).rejects.toThrow();
      await query(`CREATE DATABASE "${name}"`);
      // A failed migration is tried again at most once a second.
      await sleep(1100);
      const c = await s.create({ agentId: 'pm', bundleName: 'bmm' });
      expect(await s.get(c.id)).toMatchObject({ id: c.id, status: 'idle' });
      expect(await s.health()).toMatchObject({ ok: true, migrations: { current: true } });
    } finally {
      await s.close();
      await query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  });
});

describe('turn leases across instances', () => {
  it('one turn at a time across instances; the holder heartbeats past the lease length; ending it frees the conversation', async () => {
    const a = store({ leaseMs: 600 });
    const b = store({ leaseMs: 600 });
    const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
    const lease = (await a.beginTurn(c.id))!;
    expect(lease).not.toBeNull();
    const both = await Promise.all([b.beginTurn(c.id), b.beginTurn(c.id)]);
    expect(both).toEqual([null, null]);
    await sleep(1500);
    expect(await b.beginTurn(c.id)).toBeNull();
    expect((await b.get(c.id))?.status).toBe('running');
    await a.endTurn(lease, 'done');
    const next = await b.beginTurn(c.id);
    expect(next).not.toBeNull();
    expect((await a.get(c.id))?.status).toBe('running');
    await b.endTurn(next!, 'stopped');
    expect(await a.get(c.id)).toMatchObject({ status: 'stopped', lastTurn: { status: 'stopped' } });
  });

  it('a holder killed with SIGKILL loses its turn after the lease: interrupted until another instance takes it', async () => {
    const leaseMs = 1500;
    const b = store({ leaseMs });
    const c = await b.create({ agentId: 'pm', bundleName: 'bmm' });
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '__fixtures__', 'pg-turn-holder.ts'), database.url, c.id, String(leaseMs)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    for (let i = 0; i < 300 && !out.includes('locked') && child.exitCode === null; i++) await sleep(50);
    expect({ out, err }).toEqual({ out: 'locked\n', err: '' });

    // Alive (heartbeating) well past one lease length: still its turn.
    await sleep(leaseMs * 2);
    expect(await b.beginTurn(c.id)).toBeNull();
    expect((await b.get(c.id))?.status).toBe('running');

    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const killed = Date.now();
    expect((await b.get(c.id))?.status).toBe('running');
    let status = 'running';
    while (status === 'running' && Date.now() - killed < leaseMs * 3) {
      await sleep(100);
      status = (await b.get(c.id))!.status;
    }
    expect(status).toBe('interrupted');
    expect(Date.now() - killed).toBeLessThan(leaseMs + 1000);
    const got = (await b.get(c.id))!;
    expect(got.lastTurn).toEqual({ status: 'interrupted', at: expect.any(String) });
    expect((await b.list()).items.find((x) => x.id === c.id)).toMatchObject({ status: 'interrupted' });
    // Nothing runs, so a Stop has nothing to stop; the partial answer stays.
    expect(await b.requestStop(c.id)).toBe(false);
    expect((await b.messages(c.id)).map((m) => ('content' in m ? m.content : m.role))).toEqual(['half an answer']);

    const lease = (await b.beginTurn(c.id))!;
    expect(lease).not.toBeNull();
    expect(await b.get(c.id)).toMatchObject({ status: 'running' });
    expect(await b.get(c.id)).not.toHaveProperty('lastTurn');
    await b.endTurn(lease, 'done');
    expect((await b.get(c.id))?.status).toBe('idle');
  });

  it('a holder that stalled past its lease and lost the conversation hears "lost", and its late end changes nothing', async () => {
    const a = store({ leaseMs: 300 });
    const b = store({ leaseMs: 300 });
    const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
    const lease = (await a.beginTurn(c.id))!;
    const heard: string[] = [];
    a.watchTurn(lease, (s) => heard.push(s));
    // As if a stalled for longer than its lease: the row expires and b takes the conversation. a's
    // heartbeat still runs here and may renew the row between the two statements (a holder that
    // lost nothing yet keeps its turn), so expire and take again until b has it.
    let taken = null as Awaited<ReturnType<typeof b.beginTurn>>;
    for (let i = 0; i < 20 && !taken; i++) {
      await query(`UPDATE turn_leases SET expires_at = now() - interval '1 second' WHERE token = $1`, [lease.token]);
      taken = await b.beginTurn(c.id);
    }
    expect(taken).not.toBeNull();
    for (let i = 0; i < 40 && !heard.length; i++) await sleep(25);
    expect(heard).toEqual(['lost']);
    await a.endTurn(lease, 'interrupted');
    expect((await b.get(c.id))?.status).toBe('running');
    await b.endTurn(taken!, 'done');
  });

  it('keeps renewing a lease taken in a transaction longer than a heartbeat', async () => {
    const a = store({ leaseMs: 300, pollMs: 20, listen: false });
    const b = store({ leaseMs: 300, pollMs: 20, listen: false });
    const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
    // Enough messages with the lock that the transaction outlasts several beats.
    const messages = Array.from({ length: 300 }, (_, i) => ({ id: `m${i}`, role: 'user' as const, content: `hello ${i}`, timestamp: 't' }));
    const lease = (await a.beginTurn(c.id, messages))!;
    expect(lease).not.toBeNull();
    await sleep(1000);
    expect((await b.get(c.id))?.status).toBe('running');
    expect(await b.beginTurn(c.id)).toBeNull();
    expect(await b.requestStop(c.id)).toBe(true);
    await a.endTurn(lease, 'stopped');
  });

  it('close() ends its own turns as interrupted', async () => {
    const a = new PgConversationStore(database.url);
    const b = store();
    const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
    await a.beginTurn(c.id);
    await a.close();
    expect(await b.get(c.id)).toMatchObject({ status: 'interrupted', lastTurn: { status: 'interrupted' } });
    expect(await b.beginTurn(c.id)).not.toBeNull();
  });
});

describe('search', () => {
  it('indexes words as the other stores split them, and builds a prefix query from letters and digits only', () => {
    expect(indexWords('Open a CAFÉ — near the café, station_42!')).toEqual(['open', 'a', 'cafe', 'near', 'the', 'station', '42']);
    expect(indexWords('  !!! ')).toBeNull();
    expect(indexWords('x'.repeat(5000))![0]).toHaveLength(200);
    expect(prefixQuery(searchTerms(`it's "a" 'quote'\\ & | ! <-> :*`))).toBe(`'it':* & 's':* & 'a':* & 'quote':*`);
  });

  it('gives the memory store\'s results on a mixed corpus, hostile text included', async () => {
    const pgStore = store();
    const memory = new MemoryConversationStore();
    const texts = [
      'Plan a launch party with balloons',
      'Überprüfung der Straße — naïve café',
      "l'été dernier, 2024-05-01: version 3.5.1",
      'file_path=/etc/passwd; DROP TABLE conversations; --',
      "quotes ' \" \\ and : * & | ! < > ( ) tsquery syntax",
      'NUL \u0000 inside and \u200b zero width',
      '日本語のテキスト and 中文 mixed',
      'emoji 🎉 party 🎈 balloons',
      'x'.repeat(3000),
      'CamelCaseWords and snake_case_words and kebab-case-words',
    ];
    const pairs: [string, string][] = [];
    for (const [i, t] of texts.entries()) {
      const title = i % 3 === 0 ? { title: `Title ${t.slice(0, 40).replace(/\u0000/g, '')}` } : {};
      const p = await pgStore.create({ agentId: 'pm', bundleName: 'bmm', ...title });
      const m = await memory.create({ agentId: 'pm', bundleName: 'bmm', id: p.id, ...title });
      for (const s of [pgStore, memory] as ConversationStore[]) {
        await s.append(p.id, { id: 'u', role: 'user', content: t, timestamp: 't' });
        await s.append(p.id, { id: 'a', role: 'assistant', content: `answer ${i}`, timestamp: 't' });
        await s.append(p.id, { id: 's', role: 'system', content: `hidden${i}`, timestamp: 't' });
      }
      pairs.push([p.id, m.id]);
    }
    const queries = [
      'plan', 'PLAN LAUNCH', 'ballo', 'party balloons', 'uberpru', 'strasse', 'straße', 'naive cafe', 'ete', "l'été", '2024', '3 5 1', '05 01',
      'drop table', 'passwd', "'", '"', '\\', ':*', '& |', '!', 'tsquery', 'nul inside', 'zero', '日本語', '中文', '🎉', 'emoji party',
      'x', 'xx', 'x'.repeat(250), 'camelcase', 'snake', 'case words', 'kebab case', 'answer 3', 'hidden1', 'title', 'nothing here', '',
    ];
    for (const q of queries) {
      const fromPg = (await pgStore.list({ q, limit: 100 })).items.map((x) => x.id).sort();
      const fromMemory = (await memory.list({ q, limit: 100 })).items.map((x) => x.id).sort();
      expect({ q, ids: fromPg }).toEqual({ q, ids: fromMemory });
    }
    // NUL does not reach Postgres text: the message comes back whole (JSON keeps it), the preview without it.
    const nul = pairs[5]![0];
    expect((await pgStore.messages(nul))[0]).toEqual({ id: 'u', role: 'user', content: texts[5], timestamp: 't' });
  });
});

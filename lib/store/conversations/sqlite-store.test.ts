import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteConversationStore } from './sqlite-store';
import { MemoryConversationStore } from './memory-store';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations';
import { openConversationStore } from './index';
import type { StoredMessage } from './types';

const REPO_ROOT = path.resolve(__dirname, '../../..');
let dir: string;
let file: string;
const open: SqliteConversationStore[] = [];

function openStore(): SqliteConversationStore {
  const s = new SqliteConversationStore(file);
  open.push(s);
  return s;
}

/** Makes a conversation's lock look like it belongs to a process that is gone. */
function orphanLock(id: string): void {
  const raw = new Database(file);
  raw.prepare("UPDATE conversations SET turn_owner = ? WHERE id = ?").run(JSON.stringify(['a-host-that-is-gone', 1, 'x']), id);
  raw.close();
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conv-sqlite-'));
  file = path.join(dir, 'conversations.db');
});

afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SqliteConversationStore', () => {
  it('sets up WAL, NORMAL sync, foreign keys and the schema version', async () => {
    await openStore().close();
    const raw = new Database(file);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    raw.close();
    const s = openStore();
    const db = s.raw;
    expect(db.pragma('synchronous', { simple: true })).toBe(1);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
  });

  it('refuses a database from a newer schema', () => {
    const raw = new Database(file);
    raw.pragma('user_version = 999');
    raw.close();
    expect(() => new SqliteConversationStore(file)).toThrow(/schema version 999/);
  });

  it('keeps everything across a reopen', async () => {
    const a = openStore();
    const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
    const msgs: StoredMessage[] = [
      { id: 'u', role: 'user', content: 'Draft a brief', timestamp: '2025-01-01T00:00:00.000Z' },
      { id: 'a', role: 'assistant', content: 'Done', usage: { promptTokens: 3, completionTokens: 4 }, timestamp: '2025-01-01T00:00:01.000Z' },
    ];
    for (const m of msgs) await a.append(c.id, m);
    await a.setVariables(c.id, { user_name: 'Ada' });
    await a.addUsage(c.id, { promptTokens: 3, completionTokens: 4 });
    const before = { conv: await a.get(c.id), list: await a.list() };
    await a.close();

    const b = openStore();
    expect(await b.get(c.id)).toEqual(before.conv);
    expect(await b.list()).toEqual(before.list);
    expect(await b.messages(c.id)).toStrictEqual(msgs);
    expect(await b.get(c.id)).toMatchObject({ title: 'Draft a brief', status: 'idle', variables: { user_name: 'Ada' } });
  });

  it('removes messages through the foreign-key cascade', async () => {
    const s = openStore();
    const c = await s.create({ agentId: 'pm', bundleName: 'bmm' });
    await s.append(c.id, { id: 'u', role: 'user', content: 'x', timestamp: 't' });
    await s.delete(c.id);
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare('SELECT count(*) AS n FROM messages').get()).toEqual({ n: 0 });
    raw.close();
  });

  describe('turn lock across store instances', () => {
    it('lets only one of two stores on the same file hold a turn', async () => {
      const a = openStore();
      const b = openStore();
      const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
      const lease = (await a.beginTurn(c.id))!;
      expect(lease).not.toBeNull();
      expect(await b.beginTurn(c.id)).toBeNull();
      await b.endTurn({ conversationId: c.id, token: 'guess' }, 'done');
      expect(await a.beginTurn(c.id)).toBeNull();
      await b.endTurn(lease, 'done'); // the token, not the instance, owns the lock
      expect((await b.get(c.id))?.status).toBe('idle');
      expect(await a.beginTurn(c.id)).not.toBeNull();
      const third = openStore(); // opening must not clear a live holder's lock
      expect((await third.get(c.id))?.status).toBe('running');
      expect(await third.beginTurn(c.id)).toBeNull();
    });

    it('marks a turn whose process is gone as interrupted on open, and the conversation goes on', async () => {
      const a = openStore();
      const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
      await a.beginTurn(c.id);
      orphanLock(c.id);
      const b = openStore();
      expect((await b.get(c.id))?.status).toBe('interrupted');
      const lease = (await b.beginTurn(c.id))!;
      expect(lease).not.toBeNull();
      expect((await b.get(c.id))?.status).toBe('running');
      await b.endTurn(lease, 'done');
      expect((await b.get(c.id))?.status).toBe('idle');
    });

    it('takes over the lock of a dead holder without waiting for a restart', async () => {
      const a = openStore();
      const b = openStore();
      const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
      const stale = (await a.beginTurn(c.id))!;
      orphanLock(c.id);
      const lease = (await b.beginTurn(c.id))!;
      expect(lease).not.toBeNull();
      await a.endTurn(stale, 'done'); // the old holder's late release must not free the new turn
      expect((await b.get(c.id))?.status).toBe('running');
      expect(await a.beginTurn(c.id)).toBeNull();
    });

    it('ends its own turns as interrupted when closed', async () => {
      const a = openStore();
      const c = await a.create({ agentId: 'pm', bundleName: 'bmm' });
      await a.beginTurn(c.id);
      await a.close();
      await a.close();
      const b = openStore();
      expect((await b.get(c.id))?.status).toBe('interrupted');
      expect(await b.beginTurn(c.id)).not.toBeNull();
    });
  });

  it('survives kill -9 in the middle of a turn', async () => {
    const setup = openStore();
    const c = await setup.create({ agentId: 'pm', bundleName: 'bmm' });
    await setup.append(c.id, { id: 'u0', role: 'user', content: 'go', timestamp: 't' });
    await setup.close();

    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '__fixtures__', 'crash-child.ts'), file, c.id], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let committed = 0;
    let stderr = '';
    let buffered = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const m = /^committed (\d+)$/.exec(line);
        if (m) committed = Number(m[1]);
      }
      if (committed >= 300 && child.exitCode === null && !child.killed) child.kill('SIGKILL');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    const signal = await exited;
    clearTimeout(timer);
    expect({ signal, stderr }).toEqual({ signal: 'SIGKILL', stderr: '' });
    expect(committed).toBeGreaterThanOrEqual(300);

    const raw = new Database(file);
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(raw.pragma('foreign_key_check')).toEqual([]);
    raw.close();

    const s = openStore();
    expect((await s.get(c.id))?.status).toBe('interrupted');
    const messages = await s.messages(c.id);
    expect(messages.length - 1).toBeGreaterThanOrEqual(committed);
    expect((await s.list()).items[0]!.messageCount).toBe(messages.length);
    messages.slice(1).forEach((m, n) => {
      const i = Math.floor(n / 2);
      if (n % 2 === 0) {
        expect(m).toMatchObject({ id: `a_${i}`, role: 'assistant', content: `step ${i}`, usage: { promptTokens: i, completionTokens: 1 } });
      } else {
        expect(m).toMatchObject({ id: `t_${i}`, role: 'tool', toolCallId: `call_${i}`, result: { ok: true, content: expect.stringMatching(new RegExp(`^${i}:lorem`)) } });
      }
    });

    const lease = (await s.beginTurn(c.id))!;
    expect(lease).not.toBeNull();
    await s.append(c.id, { id: 'u1', role: 'user', content: 'continue', timestamp: 't' });
    await s.endTurn(lease, 'done');
    expect((await s.get(c.id))?.status).toBe('idle');
    expect((await s.messages(c.id)).at(-1)).toMatchObject({ id: 'u1' });
  });

  it('lists and reads messages through indexes with 10,000 conversations stored', async () => {
    const s = openStore();
    const db = s.raw;
    // The store runs on this connection, so all 10,000 inserts share this one transaction.
    await s.ready;
    db.exec('BEGIN');
    const created: Promise<unknown>[] = [];
    for (let i = 0; i < 10_000; i++) {
      // A third are bundle conversations, the rest spread over five projects.
      const projectId = i % 3 === 0 ? undefined : `p${i % 5}`;
      created.push(s.create({ agentId: i % 10 === 0 ? 'architect' : 'pm', bundleName: 'bmm', ...(projectId ? { projectId } : {}) }));
    }
    await Promise.all(created);
    db.exec('COMMIT');

    const noFullScan = (plan: string[], index: RegExp = /conversations_by_(updated|agent)/) => {
      expect(plan.join(' | ')).toMatch(new RegExp(`USING (COVERING )?INDEX ${index.source}`));
      expect(plan.join(' | ')).not.toMatch(/TEMP B-TREE/);
      for (const d of plan) expect(d).not.toMatch(/^SCAN conversations$/);
    };
    noFullScan(s.explainList());
    noFullScan(s.explainList({ withCursor: true }));
    noFullScan(s.explainList({ agentId: 'architect' }));
    noFullScan(s.explainList({ agentId: 'architect', withCursor: true }));
    noFullScan(s.explainList({ projectId: 'p0' }), /conversations_by_project \(project_id=\?/);
    noFullScan(s.explainList({ projectId: 'p0', withCursor: true }), /conversations_by_project \(project_id=\?/);
    // Seeks on both, rather than walking the whole project and dropping other agents.
    noFullScan(s.explainList({ projectId: 'p0', agentId: 'architect' }), /conversations_by_project_agent \(project_id=\? AND agent_id=\?/);
    noFullScan(s.explainList({ projectId: 'p0', agentId: 'architect', withCursor: true }), /conversations_by_project_agent \(project_id=\? AND agent_id=\?/);
    expect(s.explainMessages().join(' | ')).toMatch(/SEARCH messages USING (INDEX|PRIMARY KEY)/);

    const first = await s.list({ limit: 20 });
    expect(first.items).toHaveLength(20);
    const second = await s.list({ limit: 20, cursor: first.nextCursor });
    expect(second.items).toHaveLength(20);
    expect(second.items[0]!.updatedAt <= first.items[19]!.updatedAt).toBe(true);
    const architect = await s.list({ agentId: 'architect', limit: 100 });
    expect(architect.items).toHaveLength(100);
    expect(architect.items.every((x) => x.agentId === 'architect')).toBe(true);
    const p0Architect = await s.list({ projectId: 'p0', agentId: 'architect', limit: 100 });
    expect(p0Architect.items).toHaveLength(100);
    expect(p0Architect.items.every((x) => x.projectId === 'p0' && x.agentId === 'architect')).toBe(true);
  });

  it('migrates a schema-version-1 database on open, keeping its rows as bundle conversations', async () => {
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    old.exec(MIGRATIONS[0] as string);
    old.pragma('user_version = 1');
    const insert = old.prepare(
      `INSERT INTO conversations (id, agent_id, bundle_name, title, title_state, created_at, updated_at, message_count, last_preview)
       VALUES (?, ?, 'bmm', ?, 0, ?, ?, ?, ?)`,
    );
    insert.run('old_a', 'pm', 'Brief', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:02.000Z', 1, 'Draft a brief');
    insert.run('old_b', 'architect', 'Design', '2025-01-01T00:00:01.000Z', '2025-01-01T00:00:01.000Z', 0, null);
    old.prepare(`INSERT INTO messages (conversation_id, seq, id, role, content, timestamp) VALUES ('old_a', 1, 'u', 'user', 'Draft a brief', 't')`).run();
    old.close();

    const s = openStore();
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    const indexes = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'conversations'").pluck().all();
    raw.close();
    expect(indexes).toEqual(expect.arrayContaining(['conversations_by_project', 'conversations_by_project_agent']));

    const page = await s.list();
    expect(page.items.map((x) => x.id)).toEqual(['old_a', 'old_b']);
    expect(page.items[0]).toMatchObject({ agentId: 'pm', bundleName: 'bmm', title: 'Brief', messageCount: 1, lastMessagePreview: 'Draft a brief' });
    for (const item of page.items) expect(item).not.toHaveProperty('projectId');
    expect(await s.messages('old_a')).toEqual([{ id: 'u', role: 'user', content: 'Draft a brief', timestamp: 't' }]);
    expect((await s.list({ agentId: 'architect' })).items.map((x) => x.id)).toEqual(['old_b']);

    const fresh = await s.create({ agentId: 'pm', bundleName: 'acme', projectId: 'acme' });
    expect((await s.list({ projectId: 'acme' })).items.map((x) => x.id)).toEqual([fresh.id]);
    expect((await s.list({ agentId: 'pm' })).items.map((x) => x.id)).toEqual([fresh.id, 'old_a']);
    await s.close();
    // A second open finds the schema current and leaves it alone.
    expect((await openStore().list()).items.map((x) => x.id)).toEqual([fresh.id, 'old_a', 'old_b']);
  });
});

describe('schema version 2 → current', () => {
  /** A database as the app before stopped/failed statuses and search left it, with rows. */
  function versionTwoDatabase(change: (sql: string) => string = (x) => x): void {
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    old.pragma('foreign_keys = ON');
    old.exec(change(MIGRATIONS[0] as string));
    old.exec(MIGRATIONS[1] as string);
    old.pragma('user_version = 2');
    const conv = old.prepare(
      `INSERT INTO conversations (id, agent_id, bundle_name, project_id, title, title_state, created_at, updated_at, status, message_count, last_preview)
       VALUES (@id, 'pm', 'bmm', @project, @title, 0, @at, @at, @status, @count, @preview)`,
    );
    const msg = old.prepare(
      `INSERT INTO messages (conversation_id, seq, id, role, content, tool_call_id, name, result, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 't')`,
    );
    // Titled by the store from its first message.
    conv.run({ id: 'auto', project: null, title: 'Plan a launch', at: '2025-01-01T00:00:01.000Z', status: 'idle', count: 2, preview: 'Rocket science' });
    msg.run('auto', 1, 'u1', 'user', 'Plan a launch', null, null, null);
    msg.run('auto', 2, 'a1', 'assistant', 'Rocket science', null, null, null);
    // Renamed by its user; its last turn was interrupted.
    conv.run({ id: 'renamed', project: 'acme', title: 'My own title', at: '2025-01-01T00:00:02.000Z', status: 'interrupted', count: 1, preview: 'Draft a brief' });
    msg.run('renamed', 1, 'u1', 'user', 'Draft a brief', null, null, null);
    // Named after the workflow its command ran.
    conv.run({ id: 'command', project: null, title: 'product-brief', at: '2025-01-01T00:00:03.000Z', status: 'idle', count: 3, preview: '*plan' });
    msg.run('command', 1, 'u1', 'user', '*plan', null, null, null);
    msg.run('command', 2, 'a1', 'assistant', '', null, null, null);
    msg.run('command', 3, 't1', 'tool', null, 'w', 'execute_workflow', JSON.stringify({ ok: true, workflow: { name: 'product-brief' } }));
    old.close();
  }

  it('migrates with every row and message kept, statuses widened, titles told apart and a search index built', async () => {
    versionTwoDatabase();
    const s = openStore();
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    const indexes = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'conversations'").pluck().all();
    expect(indexes).toEqual(
      expect.arrayContaining(['conversations_by_updated', 'conversations_by_agent', 'conversations_with_turn', 'conversations_by_project', 'conversations_by_project_agent']),
    );
    expect(raw.prepare('SELECT count(*) FROM messages').pluck().get()).toBe(6);
    raw.close();
    const db = s.raw;
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);

    expect((await s.list()).items.map((x) => [x.id, x.status, x.messageCount, x.title])).toEqual([
      ['command', 'idle', 3, 'product-brief'],
      ['renamed', 'interrupted', 1, 'My own title'],
      ['auto', 'idle', 2, 'Plan a launch'],
    ]);
    expect((await s.get('renamed'))!.lastTurn).toEqual({ status: 'interrupted', at: '2025-01-01T00:00:02.000Z' });
    expect(await s.get('auto')).not.toHaveProperty('lastTurn');
    expect(await s.messages('command')).toHaveLength(3);

    expect((await s.list({ q: 'rocket' })).items.map((x) => x.id)).toEqual(['auto']);
    expect((await s.list({ q: 'own title' })).items.map((x) => x.id)).toEqual(['renamed']);
    expect((await s.list({ q: 'brief', projectId: 'acme' })).items.map((x) => x.id)).toEqual(['renamed']);

    // A title the store gave follows an edit of its message; a renamed one does not.
    await s.truncateFrom('auto', 'u1');
    await s.append('auto', { id: 'u2', role: 'user', content: 'Plan a wedding', timestamp: 't' });
    expect((await s.get('auto'))!.title).toBe('Plan a wedding');
    await s.truncateFrom('renamed', 'u1');
    await s.append('renamed', { id: 'u2', role: 'user', content: 'Something else', timestamp: 't' });
    expect((await s.get('renamed'))!.title).toBe('My own title');
    await s.truncateFrom('command', 'a1');
    expect((await s.get('command'))!.title).toBe('*plan');

    // The new statuses are allowed, anything else still is not; deletes still cascade.
    await s.endTurn((await s.beginTurn('auto'))!, 'stopped');
    expect((await s.get('auto'))!.status).toBe('stopped');
    expect(() => db.prepare("UPDATE conversations SET status = 'bogus' WHERE id = 'auto'").run()).toThrow(/CHECK/);
    await s.delete('command');
    expect(db.prepare("SELECT count(*) FROM messages WHERE conversation_id = 'command'").pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM search_docs WHERE conversation_id = ?').pluck().get('command')).toBe(0);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  });

  it('changes nothing when the schema is not the one it expects', async () => {
    versionTwoDatabase((sql) => sql.replace("CHECK (status IN ('idle', 'running', 'interrupted'))", "CHECK (status IN ('idle','running','interrupted'))"));
    expect(() => new SqliteConversationStore(file)).toThrow(/does not read as expected/);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(2);
    expect(raw.prepare('SELECT count(*) FROM messages').pluck().get()).toBe(6);
    expect(raw.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('search_docs', 'conversations_rebuild')").pluck().get()).toBe(0);
    expect(raw.prepare('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get('conversations')).not.toContain('last_turn');
    raw.close();
  });

  it('keeps the search index right after VACUUM renumbers rows', async () => {
    const s = openStore();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const c = await s.create({ agentId: 'pm', bundleName: 'bmm' });
      await s.append(c.id, { id: 'u', role: 'user', content: `topic${i}z alpha`, timestamp: 't' });
      ids.push(c.id);
    }
    for (const id of ids.filter((_, i) => i % 2 === 0)) await s.delete(id);
    const db = s.raw;
    db.exec('VACUUM');
    expect((await s.list({ q: 'alpha', limit: 100 })).items).toHaveLength(15);
    await s.delete(ids[1]!);
    await s.truncateFrom(ids[3]!, 'u');
    expect((await s.list({ q: 'topic1z' })).items).toEqual([]);
    expect((await s.list({ q: 'topic3z' })).items).toEqual([]);
    expect((await s.list({ q: 'topic5z' })).items.map((x) => x.id)).toEqual([ids[5]]);
    expect((await s.list({ q: 'alpha', limit: 100 })).items).toHaveLength(13);
  });
});

describe('openConversationStore', () => {
  it('creates the data folder and conversations.db for sqlite', () => {
    const dataDir = path.join(dir, 'nested', 'data');
    const s = openConversationStore({ store: 'sqlite', dataDir });
    expect(s).toBeInstanceOf(SqliteConversationStore);
    open.push(s as SqliteConversationStore);
    expect(fs.existsSync(path.join(dataDir, 'conversations.db'))).toBe(true);
  });

  it('gives a memory store without touching the disk', () => {
    const dataDir = path.join(dir, 'unused');
    expect(openConversationStore({ store: 'memory', dataDir })).toBeInstanceOf(MemoryConversationStore);
    expect(fs.existsSync(dataDir)).toBe(false);
  });
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql, type Migration } from 'kysely';
import pg from 'pg';
import { MIGRATIONS as FIRST_HISTORY } from '../conversations/migrations';
import { PgConversationStore } from '../conversations/pg-store';
import { SqliteConversationStore } from '../conversations/sqlite-store';
import type { ConversationStore } from '../conversations/types';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE } from '../db/migrate';
import { POSTGRES_MIGRATIONS } from '../db/migrations';
import { createTestDatabase, type TestDatabase } from '../../../test/postgres';

/**
 * The usage ledger starts with the usage the stores kept before it: a database of the schema
 * before budgets, with a project's model calls in it, is migrated and its month's spend read.
 */

const before = (all: Readonly<Record<string, Migration>>, first: string) => ({
  getMigrations: async () => Object.fromEntries(Object.entries(all).filter(([name]) => name < first)),
});

async function migrateBefore(db: Kysely<any>, all: Readonly<Record<string, Migration>>, first: string) {
  const { error } = await new Migrator({ db, provider: before(all, first), migrationTableName: MIGRATION_TABLE, migrationLockTableName: MIGRATION_LOCK_TABLE }).migrateToLatest();
  if (error) throw error;
}

const NUL = '\u0000';

async function expectBackfilled(store: ConversationStore) {
  expect(await store.spend({ projectId: 'shop', since: '2026-11-01T00:00:00.000Z', until: '2026-12-01T00:00:00.000Z' })).toEqual({
    promptTokens: 15,
    completionTokens: 3,
    cachedTokens: 4,
    cost: 0.5,
    calls: 2,
    unpriced: 1,
  });
  // October's call, and the bundle conversation's, are not November's spend of the project.
  expect((await store.spend({ projectId: 'shop', since: '2026-10-01T00:00:00.000Z', until: '2026-11-01T00:00:00.000Z' })).calls).toBe(1);
}

it('SQLite: the ledger is filled from the messages kept before it', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-sqlite-'));
  try {
    const file = path.join(dir, 'conversations.db');
    const raw = new Database(file);
    // The first history up to the step that brings the ledger.
    const steps = FIRST_HISTORY.slice(0, -1);
    raw.pragma('foreign_keys = OFF');
    raw.transaction(() => {
      for (const step of steps) {
        if (typeof step === 'string') raw.exec(step);
        else step(raw);
      }
      raw.pragma(`user_version = ${steps.length}`);
    })();
    raw.exec(`INSERT INTO conversations (id, agent_id, bundle_name, project_id, title, created_at, updated_at) VALUES
      ('c1', 'pm', 'shop', 'shop', 't', '2026-10-30', '2026-11-03'), ('c2', 'pm', 'bmm', NULL, 't', '2026-11-01', '2026-11-01')`);
    const add = raw.prepare('INSERT INTO messages (conversation_id, seq, id, role, content, prompt_tokens, completion_tokens, cached_tokens, cost, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    add.run('c1', 1, 'u1', 'user', `hi${NUL}`, null, null, null, null, '2026-10-30T00:00:00.000Z');
    add.run('c1', 2, 'a0', 'assistant', 'old', 100, 10, 0, null, '2026-10-30T00:00:01.000Z');
    add.run('c1', 3, 'a1', 'assistant', 'x', 10, 2, 4, 0.5, '2026-11-02T00:00:01.000Z');
    add.run('c1', 4, 'a2', 'assistant', 'planned by the server', null, null, null, null, '2026-11-02T00:00:02.000Z');
    add.run('c1', 5, 'a3', 'assistant', 'y', 5, 1, 0, null, '2026-11-03T00:00:01.000Z');
    add.run('c2', 1, 'a4', 'assistant', 'z', 50, 5, 0, 1, '2026-11-03T00:00:01.000Z');
    raw.close();
    const store = new SqliteConversationStore(file);
    try {
      await expectBackfilled(store);
    } finally {
      await store.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

describe('Postgres', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('ledger_backfill');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('the ledger is filled from the messages kept before it, a body with an escaped NUL included', async () => {
    const pool = new pg.Pool({ connectionString: database.url });
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
    await migrateBefore(db, POSTGRES_MIGRATIONS, '0007_budgets');
    await sql`INSERT INTO conversations (id, agent_id, bundle_name, project_id, title, created_at, updated_at, owner_id) VALUES
      ('c1', 'pm', 'shop', 'shop', 't', '2026-10-30', '2026-11-03', 'u1'), ('c2', 'pm', 'bmm', NULL, 't', '2026-11-01', '2026-11-01', NULL)`.execute(db);
    const rows: [string, number, Record<string, unknown>][] = [
      ['c1', 1, { id: 'u1', role: 'user', content: `hi ${NUL} "usage":{"promptTokens":999`, timestamp: '2026-10-30T00:00:00.000Z' }],
      ['c1', 2, { id: 'a0', role: 'assistant', content: 'old', usage: { promptTokens: 100, completionTokens: 10 }, timestamp: '2026-10-30T00:00:01.000Z' }],
      ['c1', 3, { id: 'a1', role: 'assistant', content: `x${NUL} "cost":7`, usage: { promptTokens: 10, completionTokens: 2, cachedTokens: 4 }, cost: 0.5, profile: 'default', timestamp: '2026-11-02T00:00:01.000Z' }],
      ['c1', 4, { id: 'a2', role: 'assistant', content: 'planned by the server', timestamp: '2026-11-02T00:00:02.000Z' }],
      ['c1', 5, { id: 'a3', role: 'assistant', content: 'y', usage: { promptTokens: 5, completionTokens: 1 }, timestamp: '2026-11-03T00:00:01.000Z' }],
      ['c2', 1, { id: 'a4', role: 'assistant', content: 'z', usage: { promptTokens: 50, completionTokens: 5 }, cost: 1, timestamp: '2026-11-03T00:00:01.000Z' }],
    ];
    for (const [conversation, seq, body] of rows) {
      await sql`INSERT INTO messages (conversation_id, seq, id, role, body) VALUES (${conversation}, ${seq}, ${body.id}, ${body.role}, ${JSON.stringify(body)})`.execute(db);
    }
    await db.destroy();
    const store = new PgConversationStore(database.url, { leaseMs: 5000 });
    try {
      await store.ready;
      await expectBackfilled(store);
    } finally {
      await store.close();
    }
  });
});

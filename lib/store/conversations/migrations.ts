import type Database from 'better-sqlite3';
import type { StoredMessage } from './types';
import { TitleState, replayTitle } from './internal';

/** SQL, or code for what SQL alone cannot say (reading the schema as it is, replaying titles). */
export type Migration = string | ((db: Database.Database) => void);

/**
 * Schema history, oldest first; entry i takes the database to user_version i + 1. Append only:
 * an edited migration would leave existing databases on a schema no code describes.
 */
export const MIGRATIONS: readonly Migration[] = [
  `
  CREATE TABLE conversations (
    id                TEXT PRIMARY KEY NOT NULL,
    agent_id          TEXT NOT NULL,
    bundle_name       TEXT NOT NULL,
    title             TEXT NOT NULL,
    title_state       INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    status            TEXT NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'running', 'interrupted')),
    variables         TEXT NOT NULL DEFAULT '{}',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    message_count     INTEGER NOT NULL DEFAULT 0,
    last_preview      TEXT,
    active_turn       TEXT,
    turn_owner        TEXT,
    turn_started_at   TEXT
  );
  -- list(): newest first, keyset on (updated_at, id), with and without the agent filter.
  CREATE INDEX conversations_by_updated ON conversations (updated_at, id);
  CREATE INDEX conversations_by_agent ON conversations (agent_id, updated_at, id);
  -- Crash recovery on open visits only the few rows holding a turn.
  CREATE INDEX conversations_with_turn ON conversations (active_turn) WHERE active_turn IS NOT NULL;

  CREATE TABLE messages (
    conversation_id   TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL,
    id                TEXT NOT NULL,
    role              TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    content           TEXT,
    tool_calls        TEXT,
    tool_call_id      TEXT,
    name              TEXT,
    result            TEXT,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    timestamp         TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
  );
  `,
  `
  -- NULL for a bundle's conversation. Project agent ids repeat between projects, so listing by
  -- agent inside a project needs the project in front of the agent. Bundle conversations stay
  -- out of both indexes; project_id = ? implies IS NOT NULL, so the planner still uses them.
  ALTER TABLE conversations ADD COLUMN project_id TEXT;
  CREATE INDEX conversations_by_project ON conversations (project_id, updated_at, id) WHERE project_id IS NOT NULL;
  CREATE INDEX conversations_by_project_agent ON conversations (project_id, agent_id, updated_at, id) WHERE project_id IS NOT NULL;
  `,
  (db) => {
    // A turn ends stopped or failed too, not only idle or interrupted. SQLite cannot change a
    // CHECK constraint in place, so the table is rebuilt from its own current definition (whatever
    // columns earlier migrations added), with foreign keys off (see migrate()).
    rebuildTable(db, 'conversations', (sql) =>
      replaceOnce(sql, "CHECK (status IN ('idle', 'running', 'interrupted'))", "CHECK (status IN ('idle', 'running', 'interrupted', 'stopped', 'failed'))"),
    );
    // JSON { status, error?, at } while status is stopped, failed or interrupted; NULL otherwise.
    db.exec('ALTER TABLE conversations ADD COLUMN last_turn TEXT');
    db.exec(`UPDATE conversations SET last_turn = json_object('status', 'interrupted', 'at', updated_at) WHERE status = 'interrupted'`);
    markAutomaticTitles(db);
  },
  `
  -- Search over titles and user/assistant text. search_docs names what each FTS row indexes
  -- (a message by its (conversation_id, seq), or a title where seq IS NULL); its INTEGER PRIMARY
  -- KEY is the FTS rowid, which VACUUM cannot renumber (it may renumber the implicit rowids of
  -- messages and conversations). The FTS table is contentless: the text lives in messages and
  -- conversations only, and rows are deleted by rowid (contentless_delete).
  CREATE TABLE search_docs (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    seq             INTEGER
  );
  CREATE INDEX search_docs_by_message ON search_docs (conversation_id, seq);
  CREATE VIRTUAL TABLE search_fts USING fts5(text, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');

  -- Kept in step by triggers, so every writer of these tables (and every later migration) keeps
  -- the index right; a cascade from a deleted conversation fires the messages trigger too.
  CREATE TRIGGER search_message_added AFTER INSERT ON messages
  WHEN new.role IN ('user', 'assistant') AND new.content IS NOT NULL AND new.content <> ''
  BEGIN
    INSERT INTO search_docs (conversation_id, seq) VALUES (new.conversation_id, new.seq);
    INSERT INTO search_fts (rowid, text) VALUES (last_insert_rowid(), new.content);
  END;
  CREATE TRIGGER search_message_removed AFTER DELETE ON messages
  BEGIN
    DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE conversation_id = old.conversation_id AND seq = old.seq);
    DELETE FROM search_docs WHERE conversation_id = old.conversation_id AND seq = old.seq;
  END;
  CREATE TRIGGER search_title_added AFTER INSERT ON conversations
  BEGIN
    INSERT INTO search_docs (conversation_id, seq) VALUES (new.id, NULL);
    INSERT INTO search_fts (rowid, text) VALUES (last_insert_rowid(), new.title);
  END;
  CREATE TRIGGER search_title_changed AFTER UPDATE OF title ON conversations
  WHEN old.title IS NOT new.title
  BEGIN
    DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE conversation_id = old.id AND seq IS NULL);
    DELETE FROM search_docs WHERE conversation_id = old.id AND seq IS NULL;
    INSERT INTO search_docs (conversation_id, seq) VALUES (new.id, NULL);
    INSERT INTO search_fts (rowid, text) VALUES (last_insert_rowid(), new.title);
  END;
  CREATE TRIGGER search_conversation_removed AFTER DELETE ON conversations
  BEGIN
    DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE conversation_id = old.id AND seq IS NULL);
    DELETE FROM search_docs WHERE conversation_id = old.id AND seq IS NULL;
  END;

  -- What is already stored.
  INSERT INTO search_docs (conversation_id, seq)
    SELECT conversation_id, seq FROM messages
    WHERE role IN ('user', 'assistant') AND content IS NOT NULL AND content <> '' ORDER BY conversation_id, seq;
  INSERT INTO search_docs (conversation_id, seq) SELECT id, NULL FROM conversations;
  INSERT INTO search_fts (rowid, text)
    SELECT d.id, m.content FROM search_docs d JOIN messages m ON m.conversation_id = d.conversation_id AND m.seq = d.seq;
  INSERT INTO search_fts (rowid, text)
    SELECT d.id, c.title FROM search_docs d JOIN conversations c ON c.id = d.conversation_id WHERE d.seq IS NULL;
  `,
  `
  -- Model profiles and usage: the profile a conversation was set to (NULL: chosen per turn),
  -- prompt tokens served from the provider's cache, cost (NULL until a priced call); per
  -- message the profile and model that answered, and how the message goes to the model once
  -- the conversation was compacted to fit a context window (JSON; NULL: as it is).
  ALTER TABLE conversations ADD COLUMN model TEXT;
  ALTER TABLE conversations ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE conversations ADD COLUMN cost REAL;
  ALTER TABLE messages ADD COLUMN cached_tokens INTEGER;
  ALTER TABLE messages ADD COLUMN cost REAL;
  ALTER TABLE messages ADD COLUMN profile TEXT;
  ALTER TABLE messages ADD COLUMN model TEXT;
  ALTER TABLE messages ADD COLUMN compacted TEXT;
  `,
  `
  -- Headless runs: a durable queue of skill runs. A run is taken by one holder at a time: the
  -- claim is one conditional UPDATE, and lease_owner / lease_token / lease_until say who holds
  -- it and until when (a holder renews lease_until while it works), so a dead holder's run is
  -- found and ended interrupted. webhook holds the URL and its signing secret (never shown).
  CREATE TABLE runs (
    id                 TEXT PRIMARY KEY NOT NULL,
    project_id         TEXT NOT NULL,
    owner_id           TEXT NOT NULL,
    skill              TEXT NOT NULL,
    agent_id           TEXT NOT NULL,
    intent             TEXT,
    message            TEXT NOT NULL,
    model              TEXT,
    contract           TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('queued', 'running', 'complete', 'partial', 'blocked', 'failed', 'cancelled', 'interrupted')),
    result             TEXT,
    error              TEXT,
    artifacts          TEXT NOT NULL DEFAULT '[]',
    conversation_id    TEXT,
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    cached_tokens      INTEGER NOT NULL DEFAULT 0,
    cost               REAL,
    answers            INTEGER NOT NULL DEFAULT 0,
    webhook            TEXT,
    webhook_outcome    TEXT,
    cancel_requested   INTEGER NOT NULL DEFAULT 0,
    lease_owner        TEXT,
    lease_token        TEXT,
    lease_until        TEXT,
    heartbeat_at       TEXT,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    started_at         TEXT,
    ended_at           TEXT
  );
  -- The queue in order of arrival, and the few running rows a recovery visits.
  CREATE INDEX runs_queued ON runs (created_at, id) WHERE status = 'queued';
  CREATE INDEX runs_running ON runs (id) WHERE status = 'running';
  CREATE INDEX runs_by_project ON runs (project_id, created_at, id);
  `,
  `
  -- A Stop asked for through any process on this file: the token of the turn it is for, so a
  -- later turn (a new token) is never stopped by it and nothing has to clear it.
  ALTER TABLE conversations ADD COLUMN stop_turn TEXT;
  `,
  `
  -- Search indexing off the turn's path: a write only notes what needs indexing (one small row);
  -- the FTS rows are made in batches after the turn, and before any search (indexPending in the
  -- store), so a search never misses a stored message. seq -1 stands for the title.
  CREATE TABLE search_pending (
    conversation_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, seq)
  ) WITHOUT ROWID;
  DROP TRIGGER search_message_added;
  DROP TRIGGER search_title_added;
  DROP TRIGGER search_title_changed;
  DROP TRIGGER search_message_removed;
  DROP TRIGGER search_conversation_removed;
  CREATE TRIGGER search_message_added AFTER INSERT ON messages
  WHEN new.role IN ('user', 'assistant') AND new.content IS NOT NULL AND new.content <> ''
  BEGIN
    INSERT OR IGNORE INTO search_pending (conversation_id, seq) VALUES (new.conversation_id, new.seq);
  END;
  CREATE TRIGGER search_message_removed AFTER DELETE ON messages
  BEGIN
    DELETE FROM search_pending WHERE conversation_id = old.conversation_id AND seq = old.seq;
    DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE conversation_id = old.conversation_id AND seq = old.seq);
    DELETE FROM search_docs WHERE conversation_id = old.conversation_id AND seq = old.seq;
  END;
  CREATE TRIGGER search_title_added AFTER INSERT ON conversations
  BEGIN
    INSERT OR IGNORE INTO search_pending (conversation_id, seq) VALUES (new.id, -1);
  END;
  CREATE TRIGGER search_title_changed AFTER UPDATE OF title ON conversations
  WHEN old.title IS NOT new.title
  BEGIN
    INSERT OR IGNORE INTO search_pending (conversation_id, seq) VALUES (new.id, -1);
  END;
  CREATE TRIGGER search_conversation_removed AFTER DELETE ON conversations
  BEGIN
    DELETE FROM search_pending WHERE conversation_id = old.id;
    DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE conversation_id = old.id AND seq IS NULL);
    DELETE FROM search_docs WHERE conversation_id = old.id AND seq IS NULL;
  END;
  `,
  `
  -- Accounts: who started a conversation (NULL: before accounts, seen by admins only), and
  -- whether its project's members may read it.
  ALTER TABLE conversations ADD COLUMN owner_id TEXT;
  ALTER TABLE conversations ADD COLUMN shared INTEGER NOT NULL DEFAULT 0;
  `,
  // Here rather than after this history (lib/store/db): the accounts store may open a new file first,
  // and the migrations after this history then run before the messages table exists.
  `
  -- Who wrote a user message (NULL: before accounts, or without them), and their name then.
  ALTER TABLE messages ADD COLUMN author_id TEXT;
  ALTER TABLE messages ADD COLUMN author_name TEXT;
  `,
  `
  -- The workspace a conversation's turns run in (NULL: the project folder, or a bundle).
  ALTER TABLE conversations ADD COLUMN workspace_id TEXT;
  ALTER TABLE runs ADD COLUMN workspace_id TEXT;
  `,
  `
  -- The sprint story a run builds (NULL: a run not started for a story).
  ALTER TABLE runs ADD COLUMN story_key TEXT;
  CREATE INDEX runs_by_story ON runs (project_id, story_key) WHERE story_key IS NOT NULL;
  `,
  `
  -- Budgets: every model call of a project's conversations in a ledger (a month's spend is summed
  -- from it, and stays when a conversation is cut or deleted), filled once with the usage the
  -- messages kept; a run's own budget and a person's answer to go on with.
  CREATE TABLE usage_ledger (
    conversation_id   TEXT NOT NULL,
    project_id        TEXT NOT NULL,
    owner_id          TEXT,
    at                TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens     INTEGER NOT NULL,
    cost              REAL
  );
  CREATE INDEX usage_ledger_by_project ON usage_ledger (project_id, at);
  INSERT INTO usage_ledger (conversation_id, project_id, owner_id, at, prompt_tokens, completion_tokens, cached_tokens, cost)
    SELECT c.id, c.project_id, c.owner_id, m.timestamp, COALESCE(m.prompt_tokens, 0), COALESCE(m.completion_tokens, 0), COALESCE(m.cached_tokens, 0), m.cost
    FROM messages m JOIN conversations c ON c.id = m.conversation_id
    WHERE c.project_id IS NOT NULL AND m.role = 'assistant' AND m.prompt_tokens IS NOT NULL;
  ALTER TABLE runs ADD COLUMN budget TEXT;
  ALTER TABLE runs ADD COLUMN resume TEXT;
  `,
];

function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + from.length) >= 0) {
    throw new Error(`Migration: the schema does not read as expected (looked for ${JSON.stringify(from)} once).`);
  }
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/**
 * SQLite's documented way to change what ALTER TABLE cannot: create the new table from the
 * current definition (changed by `change`), copy the rows, drop the old one, rename, and create
 * its indexes again. Runs inside the migration's transaction; foreign keys must be off, or the
 * DROP would cascade into the rows that reference the table.
 */
function rebuildTable(db: Database.Database, table: string, change: (createSql: string) => string): void {
  if (db.pragma('foreign_keys', { simple: true }) !== 0) throw new Error('Migration: a table rebuild needs foreign keys off.');
  const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) as { sql: string } | undefined;
  if (!row) throw new Error(`Migration: no table ${table}.`);
  const others = db
    .prepare("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL")
    .all(table) as { type: string; name: string; sql: string }[];
  const temp = `${table}_rebuild`;
  const createSql = change(row.sql).replace(new RegExp(`^CREATE TABLE\\s+"?${table}"?`, 'i'), `CREATE TABLE "${temp}"`);
  if (!createSql.startsWith(`CREATE TABLE "${temp}"`)) throw new Error(`Migration: cannot read the definition of ${table}.`);
  db.exec(createSql);
  db.exec(`INSERT INTO "${temp}" SELECT * FROM "${table}"`);
  db.exec(`DROP TABLE "${table}"`);
  db.exec(`ALTER TABLE "${temp}" RENAME TO "${table}"`);
  for (const o of others) db.exec(o.sql);
}

/**
 * Titles named by the store were stored as fixed (renamed) before; one that still reads as the
 * store would name the conversation becomes automatic, so it follows an edit of the message it
 * came from. A title a user typed that happens to match is treated the same way, which is harmless.
 */
function markAutomaticTitles(db: Database.Database): void {
  const rows = db.prepare('SELECT id, title FROM conversations WHERE title_state = 0').all() as { id: string; title: string }[];
  const messages = db.prepare(
    `SELECT id, role, content, name, result, timestamp FROM messages
     WHERE conversation_id = ? AND (role = 'user' OR (role = 'tool' AND name = 'execute_workflow')) ORDER BY seq`,
  );
  const mark = db.prepare(`UPDATE conversations SET title_state = ${TitleState.AUTO} WHERE id = ?`);
  for (const row of rows) {
    // The titles were given by the rule of their time: a workflow's name as written.
    const replayed = replayTitle(readTitleMessages(messages.iterate(row.id) as IterableIterator<TitleRow>), 'names');
    if (replayed.state === TitleState.AUTO && replayed.title === row.title) mark.run(row.id);
  }
}

interface TitleRow {
  id: string;
  role: 'user' | 'tool';
  content: string | null;
  name: string | null;
  result: string | null;
  timestamp: string;
}

function* readTitleMessages(rows: IterableIterator<TitleRow>): Generator<StoredMessage> {
  for (const r of rows) {
    if (r.role === 'user') yield { id: r.id, role: 'user', content: r.content ?? '', timestamp: r.timestamp };
    else {
      let result: unknown = null;
      try {
        result = JSON.parse(r.result ?? 'null');
      } catch {
        // An unreadable result names nothing.
      }
      if (result && typeof result === 'object') {
        yield { id: r.id, role: 'tool', toolCallId: '', name: r.name ?? '', result: result as Extract<StoredMessage, { role: 'tool' }>['result'], timestamp: r.timestamp };
      }
    }
  }
}

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the database to SCHEMA_VERSION. BEGIN IMMEDIATE takes the write lock before the
 * version is read, so two processes opening a new file at once cannot both migrate it.
 */
export function migrate(db: Database.Database): void {
  if ((db.pragma('user_version', { simple: true }) as number) === SCHEMA_VERSION) return;
  // Foreign keys can only be switched outside a transaction. Off, a table rebuild cannot cascade
  // into the rows that reference it; the check before the commit still refuses a broken reference.
  const foreignKeys = db.pragma('foreign_keys', { simple: true }) as number;
  db.pragma('foreign_keys = OFF');
  try {
    const run = db.transaction(() => {
      const current = db.pragma('user_version', { simple: true }) as number;
      if (current > SCHEMA_VERSION) {
        throw new Error(`The conversation database has schema version ${current}, newer than this app knows (${SCHEMA_VERSION}); upgrade the app or point DATA_DIR elsewhere.`);
      }
      for (let v = current; v < SCHEMA_VERSION; v++) {
        const m = MIGRATIONS[v]!;
        if (typeof m === 'string') db.exec(m);
        else m(db);
      }
      const broken = db.pragma('foreign_key_check') as unknown[];
      if (broken.length) throw new Error(`Migration left ${broken.length} broken foreign key reference(s); nothing was changed.`);
      if (current !== SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
    });
    run.immediate();
  } finally {
    db.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`);
  }
}

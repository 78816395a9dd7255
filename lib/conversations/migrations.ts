import type Database from 'better-sqlite3';

/**
 * Schema history, oldest first; entry i takes the database to user_version i + 1. Append only:
 * an edited migration would leave existing databases on a schema no code describes.
 */
export const MIGRATIONS: readonly string[] = [
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
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the database to SCHEMA_VERSION. BEGIN IMMEDIATE takes the write lock before the
 * version is read, so two processes opening a new file at once cannot both migrate it.
 */
export function migrate(db: Database.Database): void {
  const run = db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > SCHEMA_VERSION) {
      throw new Error(`The conversation database has schema version ${current}, newer than this app knows (${SCHEMA_VERSION}); upgrade the app or point DATA_DIR elsewhere.`);
    }
    for (let v = current; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!);
    if (current !== SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
  run.immediate();
}

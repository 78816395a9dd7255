import { sql, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './postgres';

/** Runs DDL statements one at a time (one statement per protocol message keeps errors precise). */
function ddl(...statements: string[]): Migration {
  return {
    async up(db: Db) {
      for (const s of statements) await sql.raw(s).execute(db);
    },
  };
}

function workspaceDdl(key: string): string[] {
  return [
    `CREATE TABLE build_settings (
       project_id  ${key} PRIMARY KEY,
       enabled     integer NOT NULL DEFAULT 0,
       base_branch text,
       setup       text,
       env         text NOT NULL DEFAULT '{}',
       updated_at  ${key} NOT NULL
     )`,
    `CREATE TABLE workspaces (
       id            ${key} PRIMARY KEY,
       project_id    ${key} NOT NULL,
       name          ${key} NOT NULL,
       branch        text NOT NULL,
       base          text NOT NULL,
       base_commit   text NOT NULL,
       status        text NOT NULL CHECK (status IN ('open', 'merged', 'discarded')),
       created_by    text NOT NULL,
       setup         text,
       merged_commit text,
       created_at    ${key} NOT NULL,
       updated_at    ${key} NOT NULL
     )`,
    "CREATE UNIQUE INDEX workspaces_live_name ON workspaces (project_id, name) WHERE status <> 'discarded'",
    'CREATE INDEX workspaces_by_project ON workspaces (project_id, created_at, id)',
  ];
}

/**
 * Where a merged workspace went and who merged it, and what its last sync took from the clone
 * (the clone's branch commit it carried or refused, why it refused, and the clone's commits whose
 * changes to the method it left out and already said so): same in both dialects.
 */
const WORKSPACE_SYNC_DDL = [
  'ALTER TABLE workspaces ADD COLUMN merged_into text',
  'ALTER TABLE workspaces ADD COLUMN merged_at text',
  'ALTER TABLE workspaces ADD COLUMN merged_by text',
  'ALTER TABLE workspaces ADD COLUMN synced_from text',
  'ALTER TABLE workspaces ADD COLUMN sync_refused text',
  'ALTER TABLE workspaces ADD COLUMN sync_dropped text',
];

/**
 * Workspaces' pull requests on the remote's forge, the webhook deliveries acted on (a delivery
 * twice changes nothing twice), the poller's lease; and a workspace's `closed` status (its pull
 * request closed upstream without a merge).
 */
function forgeDdl(key: string): string[] {
  return [
    `CREATE TABLE workspace_pull_requests (
       workspace_id ${key} PRIMARY KEY,
       project_id   ${key} NOT NULL,
       branch       text NOT NULL,
       base         text NOT NULL,
       number       integer NOT NULL,
       url          text NOT NULL,
       state        text NOT NULL CHECK (state IN ('open', 'closed', 'merged')),
       draft        integer NOT NULL DEFAULT 0,
       head_sha     text,
       etag         text,
       checks       text,
       note         text,
       pushed_head  text,
       created_at   ${key} NOT NULL,
       updated_at   ${key} NOT NULL
     )`,
    'CREATE INDEX workspace_pull_requests_by_number ON workspace_pull_requests (project_id, number)',
    'CREATE INDEX workspace_pull_requests_by_state ON workspace_pull_requests (state, updated_at)',
    `CREATE TABLE forge_deliveries (
       project_id  ${key} NOT NULL,
       delivery_id ${key} NOT NULL,
       received_at ${key} NOT NULL,
       PRIMARY KEY (project_id, delivery_id)
     )`,
    `CREATE TABLE forge_leases (
       name       ${key} PRIMARY KEY,
       holder     text NOT NULL,
       expires_at ${key} NOT NULL
     )`,
  ];
}

const WORKSPACE_STATUSES = "CHECK (status IN ('open', 'merged', 'discarded', 'closed'))";

/** SQLite cannot change a CHECK: the workspaces table is made again with the wider one, rows and indexes kept. */
const SQLITE_WORKSPACE_CLOSED = [
  `CREATE TABLE workspaces_next (
     id            text PRIMARY KEY,
     project_id    text NOT NULL,
     name          text NOT NULL,
     branch        text NOT NULL,
     base          text NOT NULL,
     base_commit   text NOT NULL,
     status        text NOT NULL ${WORKSPACE_STATUSES},
     created_by    text NOT NULL,
     setup         text,
     merged_commit text,
     created_at    text NOT NULL,
     updated_at    text NOT NULL,
     merged_into   text,
     merged_at     text,
     merged_by     text,
     synced_from   text,
     sync_refused  text,
     sync_dropped  text
   )`,
  `INSERT INTO workspaces_next (id, project_id, name, branch, base, base_commit, status, created_by, setup, merged_commit, created_at, updated_at, merged_into, merged_at, merged_by, synced_from, sync_refused, sync_dropped)
     SELECT id, project_id, name, branch, base, base_commit, status, created_by, setup, merged_commit, created_at, updated_at, merged_into, merged_at, merged_by, synced_from, sync_refused, sync_dropped FROM workspaces`,
  'DROP TABLE workspaces',
  'ALTER TABLE workspaces_next RENAME TO workspaces',
  "CREATE UNIQUE INDEX workspaces_live_name ON workspaces (project_id, name) WHERE status <> 'discarded'",
  'CREATE INDEX workspaces_by_project ON workspaces (project_id, created_at, id)',
];

/**
 * Build settings' test line and append-only files; a project's limits for each person in it, and
 * the server's own limits (one row, set by admins): same in both dialects.
 */
const PERSON_BUDGETS_DDL = [
  'ALTER TABLE build_settings ADD COLUMN test text',
  "ALTER TABLE build_settings ADD COLUMN append_only text NOT NULL DEFAULT '[]'",
  'ALTER TABLE project_budgets ADD COLUMN person_monthly_tokens bigint',
  'ALTER TABLE project_budgets ADD COLUMN person_monthly_usd double precision',
  `CREATE TABLE server_budget (
     id                    text PRIMARY KEY,
     monthly_tokens        bigint,
     monthly_usd           double precision,
     person_monthly_tokens bigint,
     person_monthly_usd    double precision,
     updated_by            text,
     updated_at            text NOT NULL
   )`,
];

/** The autopilot: a project's settings and lease, the stories it took with their step, its decisions. */
function autopilotDdl(key: string): string[] {
  return [
    `CREATE TABLE autopilot_settings (
       project_id  ${key} PRIMARY KEY,
       settings    text NOT NULL,
       enabled     integer NOT NULL DEFAULT 0,
       enabled_by  text,
       paused      text,
       holder      text,
       lease_until text,
       updated_at  text NOT NULL
     )`,
    `CREATE TABLE autopilot_stories (
       project_id   ${key} NOT NULL,
       story_key    ${key} NOT NULL,
       step         text NOT NULL,
       round        integer NOT NULL,
       since        text NOT NULL,
       note         text,
       workspace_id text,
       run_id       text,
       run_kind     text,
       skip_gate    integer NOT NULL DEFAULT 0,
       version      integer NOT NULL,
       PRIMARY KEY (project_id, story_key)
     )`,
    `CREATE TABLE autopilot_decisions (
       id          ${key} PRIMARY KEY,
       project_id  ${key} NOT NULL,
       story_key   text,
       kind        text NOT NULL,
       text        text NOT NULL,
       detail      text,
       run_id      text,
       actions     text NOT NULL,
       since       text NOT NULL,
       resolved_at text
     )`,
    'CREATE INDEX autopilot_decisions_by_project ON autopilot_decisions (project_id, since)',
  ];
}

/** The projects' monthly limits: same columns in both dialects. */
function budgetDdl(key: string, big: string, real: string): string[] {
  return [
    `CREATE TABLE project_budgets (
       project_id     ${key} PRIMARY KEY,
       monthly_tokens ${big},
       monthly_usd    ${real},
       updated_by     text,
       updated_at     ${key} NOT NULL
     )`,
  ];
}

/** Where the chats of OpenAI-compatible clients stand in our conversations (ConversationStore.markClientChat). */
function clientChatDdl(key: string): string[] {
  return [
    `CREATE TABLE client_chats (
       owner_id        ${key} NOT NULL,
       chat            ${key} NOT NULL,
       history         ${key} NOT NULL,
       conversation_id ${key} NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
       message_id      text NOT NULL,
       at              text NOT NULL,
       PRIMARY KEY (owner_id, chat, history)
     )`,
    // A conversation deleted takes its marks with it.
    'CREATE INDEX client_chats_by_conversation ON client_chats (conversation_id)',
  ];
}

/**
 * Projects' remote repositories (secrets sealed, never plain) and the clones that make projects
 * from a URL: same columns in both dialects.
 */
function remoteDdl(key: string): string[] {
  return [
    `CREATE TABLE project_remotes (
       project_id     ${key} PRIMARY KEY,
       url            text NOT NULL,
       forge          text,
       api_url        text,
       mode           text NOT NULL DEFAULT 'pull-request',
       username       text,
       token          text,
       webhook_secret text,
       status_branch  text,
       last_fetch     text,
       updated_by     text,
       updated_at     ${key} NOT NULL
     )`,
    `CREATE TABLE project_clones (
       project_id   ${key} PRIMARY KEY,
       url          text NOT NULL,
       branch       text,
       status       text NOT NULL CHECK (status IN ('running', 'ready', 'failed')),
       phase        text,
       percent      integer,
       message      text,
       installed    integer,
       created_by   text,
       heartbeat_at ${key} NOT NULL,
       created_at   ${key} NOT NULL,
       updated_at   ${key} NOT NULL
     )`,
  ];
}

/**
 * The Postgres schema history, oldest first, by name (Kysely orders them by name). Append only:
 * an edited migration would leave existing databases on a schema no code describes.
 *
 * Texts that are compared or sorted as keys (ids, ISO timestamps) use the "C" collation, so the
 * order is the byte order the SQLite and memory stores use whatever the database's locale.
 */
export const POSTGRES_MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001_conversations': ddl(
    `CREATE TABLE conversations (
       id                text COLLATE "C" PRIMARY KEY,
       agent_id          text NOT NULL,
       bundle_name       text NOT NULL,
       project_id        text,
       title             text NOT NULL,
       title_state       smallint NOT NULL DEFAULT 0,
       title_search      tsvector,
       created_at        text COLLATE "C" NOT NULL,
       updated_at        text COLLATE "C" NOT NULL,
       status            text NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'running', 'interrupted', 'stopped', 'failed')),
       last_turn         text,
       variables         text NOT NULL DEFAULT '{}',
       prompt_tokens     bigint NOT NULL DEFAULT 0,
       completion_tokens bigint NOT NULL DEFAULT 0,
       cached_tokens     bigint NOT NULL DEFAULT 0,
       cost              double precision,
       model             text,
       message_count     integer NOT NULL DEFAULT 0,
       last_preview      text
     )`,
    // list(): newest first, keyset on (updated_at, id), per filter.
    'CREATE INDEX conversations_by_updated ON conversations (updated_at, id)',
    'CREATE INDEX conversations_by_agent ON conversations (agent_id, updated_at, id)',
    'CREATE INDEX conversations_by_project ON conversations (project_id, updated_at, id) WHERE project_id IS NOT NULL',
    'CREATE INDEX conversations_by_project_agent ON conversations (project_id, agent_id, updated_at, id) WHERE project_id IS NOT NULL',
    'CREATE INDEX conversations_title_search ON conversations USING gin (title_search)',
    // A message is kept whole as JSON (text cannot hold NUL, JSON escapes it); what the store
    // queries by has columns of its own.
    `CREATE TABLE messages (
       conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
       seq             integer NOT NULL,
       id              text NOT NULL,
       role            text NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
       body            text NOT NULL,
       compacted       text,
       search          tsvector,
       PRIMARY KEY (conversation_id, seq)
     )`,
    'CREATE INDEX messages_search ON messages USING gin (search)',
    // The turn lock: one row per running turn, held by one instance while it heartbeats, free
    // to take once expired (its holder died). A Stop from any instance is recorded on it.
    `CREATE TABLE turn_leases (
       conversation_id   text COLLATE "C" PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
       token             text NOT NULL,
       holder            text NOT NULL,
       started_at        timestamptz NOT NULL,
       heartbeat_at      timestamptz NOT NULL,
       expires_at        timestamptz NOT NULL,
       stop_requested_at timestamptz
     )`,
    'CREATE INDEX turn_leases_by_token ON turn_leases (token)',
  ),
  // Conversations belong to the person who started them; shared ones are read by their project's members.
  '0002_conversation_owner': ddl('ALTER TABLE conversations ADD COLUMN owner_id text', 'ALTER TABLE conversations ADD COLUMN shared boolean NOT NULL DEFAULT false'),
  // Headless runs: a durable queue of skill runs, as in the SQLite file (same columns and
  // meaning). Times are ISO texts in the "C" collation, compared as the SQLite store compares them.
  '0003_runs': ddl(
    `CREATE TABLE runs (
       id                text COLLATE "C" PRIMARY KEY,
       project_id        text NOT NULL,
       owner_id          text NOT NULL,
       skill             text NOT NULL,
       agent_id          text NOT NULL,
       intent            text,
       message           text NOT NULL,
       model             text,
       contract          text NOT NULL,
       status            text NOT NULL CHECK (status IN ('queued', 'running', 'complete', 'partial', 'blocked', 'failed', 'cancelled', 'interrupted')),
       result            text,
       error             text,
       artifacts         text NOT NULL DEFAULT '[]',
       conversation_id   text,
       prompt_tokens     bigint NOT NULL DEFAULT 0,
       completion_tokens bigint NOT NULL DEFAULT 0,
       cached_tokens     bigint NOT NULL DEFAULT 0,
       cost              double precision,
       answers           integer NOT NULL DEFAULT 0,
       webhook           text,
       webhook_outcome   text,
       cancel_requested  integer NOT NULL DEFAULT 0,
       lease_owner       text,
       lease_token       text,
       lease_until       text COLLATE "C",
       heartbeat_at      text COLLATE "C",
       created_at        text COLLATE "C" NOT NULL,
       updated_at        text COLLATE "C" NOT NULL,
       started_at        text COLLATE "C",
       ended_at          text COLLATE "C"
     )`,
    "CREATE INDEX runs_queued ON runs (created_at, id) WHERE status = 'queued'",
    "CREATE INDEX runs_running ON runs (id) WHERE status = 'running'",
    'CREATE INDEX runs_by_project ON runs (project_id, created_at, id)',
  ),
  // Build settings per project and workspaces (a clone on a branch of its own): same columns in
  // both dialects. A name is unique among a project's workspaces not discarded.
  '0004_workspaces': ddl(...workspaceDdl('text COLLATE "C"')),
  // Who wrote a user message (NULL: before accounts, or without them), and their name then.
  '0005_message_author': ddl('ALTER TABLE messages ADD COLUMN author_id text', 'ALTER TABLE messages ADD COLUMN author_name text'),
  // The workspace a conversation's turns run in (NULL: the project folder, or a bundle).
  '0006_conversation_workspace': ddl('ALTER TABLE conversations ADD COLUMN workspace_id text', 'ALTER TABLE runs ADD COLUMN workspace_id text'),
  // The sprint story a run builds (NULL: a run not started for a story); the board reads a story's runs by it.
  '0007_run_story': ddl('ALTER TABLE runs ADD COLUMN story_key text', 'CREATE INDEX runs_by_story ON runs (project_id, story_key) WHERE story_key IS NOT NULL'),
  // The usage kept before the ledger, one row per model call, read from the messages' JSON texts
  // by pattern: JSON functions refuse a body holding an escaped NUL, and inside a JSON string a
  // quote is always escaped, so these unescaped keys are the message's own.
  '0008_budgets': ddl(
    ...budgetDdl('text COLLATE "C"', 'bigint', 'double precision'),
    // A ledger of every model call of a project's conversations: a month's spend is summed from
    // it, and stays when a conversation is cut or deleted. (SQLite's is in its first history.)
    `CREATE TABLE usage_ledger (
       conversation_id   text COLLATE "C" NOT NULL,
       project_id        text COLLATE "C" NOT NULL,
       owner_id          text,
       at                text COLLATE "C" NOT NULL,
       prompt_tokens     bigint NOT NULL,
       completion_tokens bigint NOT NULL,
       cached_tokens     bigint NOT NULL,
       cost              double precision
     )`,
    'CREATE INDEX usage_ledger_by_project ON usage_ledger (project_id, at)',
    // A run's own budget, and a person's answer to go on with.
    'ALTER TABLE runs ADD COLUMN budget text',
    'ALTER TABLE runs ADD COLUMN resume text',
    `INSERT INTO usage_ledger (conversation_id, project_id, owner_id, at, prompt_tokens, completion_tokens, cached_tokens, cost)
       SELECT c.id, c.project_id, c.owner_id,
              COALESCE(substring(m.body from '"timestamp":"([^"]*)"'), c.updated_at),
              COALESCE(substring(m.body from '"usage":[{]"promptTokens":([0-9]+)')::bigint, 0),
              COALESCE(substring(m.body from '"usage":[{]"promptTokens":[0-9]+,"completionTokens":([0-9]+)')::bigint, 0),
              COALESCE(substring(m.body from '"usage":[{]"promptTokens":[0-9]+,"completionTokens":[0-9]+,"cachedTokens":([0-9]+)')::bigint, 0),
              substring(m.body from '"cost":([0-9][0-9.eE+-]*)')::double precision
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE c.project_id IS NOT NULL AND m.role = 'assistant' AND m.body LIKE '%"usage":{"promptTokens":%'`,
  ),
  '0009_client_chats': ddl(...clientChatDdl('text COLLATE "C"')),
  '0010_remotes': ddl(...remoteDdl('text COLLATE "C"')),
  '0011_workspace_sync': ddl(...WORKSPACE_SYNC_DDL),
  '0012_forge': ddl(...forgeDdl('text COLLATE "C"'), 'ALTER TABLE workspaces DROP CONSTRAINT workspaces_status_check', `ALTER TABLE workspaces ADD CONSTRAINT workspaces_status_check ${WORKSPACE_STATUSES}`),
  '0013_autopilot': ddl(...autopilotDdl('text COLLATE "C"')),
  // A person's month over every project is summed by owner, the server's by time alone.
  '0014_person_budgets': ddl(...PERSON_BUDGETS_DDL, 'CREATE INDEX usage_ledger_by_owner ON usage_ledger (owner_id, at)', 'CREATE INDEX usage_ledger_by_at ON usage_ledger (at)'),
};

/**
 * SQLite's schema history after its first one: the stores' SQLite files started on a numbered
 * history of their own (user_version), which the conversation store runs before these. Same
 * rules as above.
 */
export const SQLITE_MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001_workspaces': ddl(...workspaceDdl('text')),
  // The ledger and the runs' budget columns are in the first history: they touch its tables,
  // which an opener without it (the accounts store) migrates before they exist.
  '0002_budgets': ddl(...budgetDdl('text', 'integer', 'real')),
  // SQLite checks a reference when rows are written, so the table may come before the
  // conversations' first history has made the table it names.
  '0003_client_chats': ddl(...clientChatDdl('text')),
  '0004_remotes': ddl(...remoteDdl('text')),
  '0005_workspace_sync': ddl(...WORKSPACE_SYNC_DDL),
  '0006_forge': ddl(...forgeDdl('text'), ...SQLITE_WORKSPACE_CLOSED),
  '0007_autopilot': ddl(...autopilotDdl('text')),
  '0008_person_budgets': ddl(...PERSON_BUDGETS_DDL),
};

export type SqlDialect = 'sqlite' | 'postgres';

export const MIGRATIONS: Readonly<Record<SqlDialect, Readonly<Record<string, Migration>>>> = { sqlite: SQLITE_MIGRATIONS, postgres: POSTGRES_MIGRATIONS };

/** Migrations defined in code: nothing is read from disk at run time (the build bundles them). */
export class CodeMigrationProvider implements MigrationProvider {
  constructor(private readonly migrations: Readonly<Record<string, Migration>> = POSTGRES_MIGRATIONS) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    return { ...this.migrations };
  }
}

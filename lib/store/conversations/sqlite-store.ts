import type Database from 'better-sqlite3';
import { sql, type RawBuilder } from 'kysely';
import type { Compaction, ConversationStatus, ListOptions, StoreHealth, StoredMessage, TurnLease, TurnSignal } from './types';
import { ftsQuery } from './internal';
import { SCHEMA_VERSION } from './migrations';
import { isHolderAlive, registerHolder, type LeaseHolder } from '../db/lease';
import type { SqliteDatabase } from '../db/store-database';
import { conversationDatabase } from './database';
import { SqlConversationStore, endArgs, type ConversationRow, type StoreDialect, type TurnLocks } from './sql-store';
import type { Db } from '../db/postgres';

interface SqliteRow extends ConversationRow {
  turn_owner: string | null;
  turn_started_at: string | null;
}

/** How often running turns look for a Stop asked through another process on the same file. */
const STOP_POLL_MS = 500;
/** Search rows made per transaction when catching up. */
const INDEX_BATCH = 500;

const MESSAGE_COLUMNS = sql.raw(
  'id, role, content, tool_calls, tool_call_id, name, result, prompt_tokens, completion_tokens, cached_tokens, cost, profile, model, compacted, timestamp, author_id, author_name',
);

/** A message in the SQLite file's columns (known fields only). */
function messageValues(m: StoredMessage): Record<string, unknown> {
  return {
    id: m.id,
    role: m.role,
    content: m.role === 'tool' ? null : m.content,
    tool_calls: m.role === 'assistant' && m.toolCalls !== undefined ? JSON.stringify(m.toolCalls) : null,
    tool_call_id: m.role === 'tool' ? m.toolCallId : null,
    name: m.role === 'tool' ? m.name : null,
    result: m.role === 'tool' ? JSON.stringify(m.result) : null,
    prompt_tokens: m.role === 'assistant' && m.usage ? m.usage.promptTokens : null,
    completion_tokens: m.role === 'assistant' && m.usage ? m.usage.completionTokens : null,
    cached_tokens: m.role === 'assistant' && m.usage?.cachedTokens !== undefined ? m.usage.cachedTokens : null,
    cost: m.role === 'assistant' && m.cost !== undefined ? m.cost : null,
    profile: m.role === 'assistant' && m.profile !== undefined ? m.profile : null,
    model: m.role === 'assistant' && m.model !== undefined ? m.model : null,
    compacted: m.compacted !== undefined ? JSON.stringify(m.compacted) : null,
    timestamp: m.timestamp,
    author_id: m.role === 'user' && m.author ? m.author.id : null,
    author_name: m.role === 'user' && m.author ? m.author.name : null,
  };
}

interface MessageRow {
  id: string;
  role: StoredMessage['role'];
  content: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  result: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  cost: number | null;
  profile: string | null;
  model: string | null;
  compacted: string | null;
  timestamp: string;
  author_id: string | null;
  author_name: string | null;
}

function toMessage(row: MessageRow): StoredMessage {
  const m = baseMessage(row);
  if (row.compacted !== null) m.compacted = JSON.parse(row.compacted) as Compaction;
  return m;
}

function baseMessage(row: MessageRow): StoredMessage {
  switch (row.role) {
    case 'tool':
      return {
        id: row.id,
        role: 'tool',
        toolCallId: row.tool_call_id ?? '',
        name: row.name ?? '',
        result: JSON.parse(row.result ?? 'null') as Extract<StoredMessage, { role: 'tool' }>['result'],
        timestamp: row.timestamp,
      };
    case 'assistant': {
      const m: Extract<StoredMessage, { role: 'assistant' }> = { id: row.id, role: 'assistant', content: row.content ?? '', timestamp: row.timestamp };
      if (row.tool_calls !== null) m.toolCalls = JSON.parse(row.tool_calls) as Extract<StoredMessage, { role: 'assistant' }>['toolCalls'];
      if (row.prompt_tokens !== null || row.completion_tokens !== null) {
        m.usage = { promptTokens: row.prompt_tokens ?? 0, completionTokens: row.completion_tokens ?? 0 };
        if (row.cached_tokens !== null) m.usage.cachedTokens = row.cached_tokens;
      }
      if (row.cost !== null) m.cost = row.cost;
      if (row.profile !== null) m.profile = row.profile;
      if (row.model !== null) m.model = row.model;
      return m;
    }
    case 'user':
      return {
        id: row.id,
        role: 'user',
        content: row.content ?? '',
        timestamp: row.timestamp,
        ...(row.author_id !== null ? { author: { id: row.author_id, name: row.author_name ?? '' } } : {}),
      };
    default:
      return { id: row.id, role: row.role, content: row.content ?? '', timestamp: row.timestamp };
  }
}

/**
 * The turn lock in the conversation's row: only one writer can turn a NULL active_turn into its
 * token. The row names its holder (host, pid, process start), so a lock is honoured only while
 * that process could still run: a `kill -9` never leaves a conversation busy, with no heartbeat
 * needed, since every process on one file is on one host.
 */
class SqliteTurnLocks implements TurnLocks {
  private readonly holder: LeaseHolder = registerHolder();
  /** Watched turns: token → conversation id. */
  private readonly watched = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  private fire: (token: string, signal: TurnSignal) => void = () => undefined;

  constructor(private readonly db: Db) {}

  async take(tx: Db, id: string, token: string): Promise<'taken' | 'busy' | 'missing'> {
    const set = sql`active_turn = ${token}, turn_owner = ${this.holder.tag}, turn_started_at = ${new Date().toISOString()}, status = 'running', last_turn = NULL`;
    const r = await sql`UPDATE conversations SET ${set} WHERE id = ${id} AND active_turn IS NULL`.execute(tx);
    if (Number(r.numAffectedRows) === 1) return 'taken';
    const { rows } = await sql<{ active_turn: string | null; turn_owner: string | null }>`SELECT active_turn, turn_owner FROM conversations WHERE id = ${id}`.execute(tx);
    const row = rows[0];
    if (!row) return 'missing';
    // The holder died without releasing (another process was killed): take the lock over,
    // conditional on its token so two takers cannot both win.
    if (row.active_turn === null || isHolderAlive(row.turn_owner)) return 'busy';
    const over = await sql`UPDATE conversations SET ${set} WHERE id = ${id} AND active_turn = ${row.active_turn}`.execute(tx);
    return Number(over.numAffectedRows) === 1 ? 'taken' : 'busy';
  }

  async release(q: Db, lease: TurnLease, status: ConversationStatus, lastTurn: string | null): Promise<void> {
    await sql`UPDATE conversations SET active_turn = NULL, turn_owner = NULL, turn_started_at = NULL, status = ${status}, last_turn = ${lastTurn}
      WHERE id = ${lease.conversationId} AND active_turn = ${String(lease.token)}`.execute(q);
  }

  async requestStop(q: Db, id: string): Promise<string | null> {
    // The token of the turn it is for, so a later turn (a new token) is never stopped by it and nothing has to clear it.
    const { rows } = await sql<{ active_turn: string; turn_owner: string | null }>`UPDATE conversations SET stop_turn = active_turn
      WHERE id = ${id} AND active_turn IS NOT NULL RETURNING active_turn, turn_owner`.execute(q);
    const row = rows[0];
    return row && isHolderAlive(row.turn_owner) ? row.active_turn : null;
  }

  start(_held: ReadonlyMap<string, string>, fire: (token: string, signal: TurnSignal) => void): void {
    this.fire = fire;
  }

  acquired(): void {}

  watching(token: string, conversationId: string): void {
    this.watched.set(token, conversationId);
    // A Stop asked before the watch began is heard at once.
    void this.poll([token]);
    if (!this.timer) {
      this.timer = setInterval(() => {
        if (this.polling) return;
        this.polling = true;
        void this.poll([...this.watched.keys()]).finally(() => {
          this.polling = false;
        });
      }, STOP_POLL_MS);
      this.timer.unref?.();
    }
  }

  unwatch(token: string): void {
    this.watched.delete(token);
    if (!this.watched.size && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** Another process may run the Stop route on this file: one indexed read per watched turn. */
  private async poll(tokens: string[]): Promise<void> {
    try {
      for (const token of tokens) {
        const id = this.watched.get(token);
        if (id === undefined) continue;
        const { rows } = await sql`SELECT 1 AS x FROM conversations WHERE id = ${id} AND stop_turn = ${token}`.execute(this.db);
        if (rows.length && this.watched.has(token)) this.fire(token, 'stop');
      }
    } catch {
      // A closed or busy file: the next poll, or the turn's end, settles it.
    }
  }

  /** Turns whose holder is gone (the process was killed mid-turn) become interrupted, unlocked. */
  async recover(db: Db): Promise<void> {
    const { rows } = await sql<{ id: string; active_turn: string; turn_owner: string | null }>`SELECT id, active_turn, turn_owner FROM conversations WHERE active_turn IS NOT NULL`.execute(db);
    const { status, lastTurn } = endArgs('interrupted');
    for (const row of rows) {
      if (isHolderAlive(row.turn_owner)) continue;
      await this.release(db, { conversationId: row.id, token: row.active_turn }, status, lastTurn);
    }
  }

  abandonedSince(row: SqliteRow): string | null {
    return isHolderAlive(row.turn_owner) ? null : (row.turn_started_at ?? row.updated_at);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.watched.clear();
    this.holder.release();
  }
}

/**
 * Search over titles and user/assistant text in FTS5 (search_fts, contentless, with search_docs
 * naming what each row indexes). Writes only note what needs indexing (search_pending, by
 * trigger); the FTS rows are made in batches after a turn and before any search, so a search
 * never misses a stored message and a turn never waits for the index.
 */
class SqliteSearch {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  closed = false;

  constructor(private readonly db: Db) {}

  /** Indexes everything pending; concurrent callers share one pass. */
  catchUp(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.closed) return Promise.resolve();
    this.running ??= (async () => {
      try {
        while ((await this.batch()) === INDEX_BATCH);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  private batch(): Promise<number> {
    return this.db.transaction().execute(async (tx) => {
      const { rows } = await sql<{ conversation_id: string; seq: number }>`SELECT conversation_id, seq FROM search_pending LIMIT ${INDEX_BATCH}`.execute(tx);
      for (const r of rows) {
        if (r.seq < 0) {
          await sql`DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE conversation_id = ${r.conversation_id} AND seq IS NULL)`.execute(tx);
          await sql`DELETE FROM search_docs WHERE conversation_id = ${r.conversation_id} AND seq IS NULL`.execute(tx);
          const { rows: t } = await sql<{ title: string }>`SELECT title FROM conversations WHERE id = ${r.conversation_id}`.execute(tx);
          if (t[0]) await this.add(tx, r.conversation_id, null, t[0].title);
        } else {
          const { rows: m } = await sql<{ content: string | null }>`SELECT content FROM messages WHERE conversation_id = ${r.conversation_id} AND seq = ${r.seq}`.execute(tx);
          if (m[0]?.content) await this.add(tx, r.conversation_id, r.seq, m[0].content);
        }
        await sql`DELETE FROM search_pending WHERE conversation_id = ${r.conversation_id} AND seq = ${r.seq}`.execute(tx);
      }
      return rows.length;
    });
  }

  private async add(tx: Db, conversationId: string, seq: number | null, content: string): Promise<void> {
    const doc = await sql`INSERT INTO search_docs (conversation_id, seq) VALUES (${conversationId}, ${seq})`.execute(tx);
    await sql`INSERT INTO search_fts (rowid, text) VALUES (${doc.insertId}, ${content})`.execute(tx);
  }

  /** Shortly after a turn ends, never on its path. */
  soon(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      // A busy database or a closed store: the next search indexes what is left.
      this.catchUp().catch(() => undefined);
    }, 250);
    this.timer.unref();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

function sqliteDialect(db: Db): StoreDialect<SqliteRow> & { search: SqliteSearch } {
  const locks = new SqliteTurnLocks(db);
  const search = new SqliteSearch(db);
  return {
    kind: 'sqlite',
    from: sql`conversations c`,
    lockColumns: sql`c.turn_owner, c.turn_started_at`,
    abandonedSince: (row) => locks.abandonedSince(row),
    bool: (value) => (value ? 1 : 0),
    forUpdate: sql``,
    messageValues,
    messageColumns: MESSAGE_COLUMNS,
    toMessage: (row) => toMessage(row as unknown as MessageRow),
    titleIndex: () => null,
    // A search keeps list()'s order and paging; the conversations it may return are those with
    // an FTS match on their title or on one of their messages.
    searchFilter: (terms): RawBuilder<unknown> =>
      sql`c.id IN (SELECT conversation_id FROM search_docs WHERE id IN (SELECT rowid FROM search_fts WHERE search_fts MATCH ${ftsQuery(terms)}))`,
    beforeSearch: () => search.catchUp(),
    afterTurn: () => search.soon(),
    locks,
    search,
  };
}

export interface SqliteStoreOptions {
  /** How long a writer waits for another process's write lock before failing (ms). */
  busyTimeoutMs?: number;
}

/**
 * Conversations in one SQLite file (WAL): the SQL store with SQLite's search (FTS5) and turn
 * lock (see SqliteTurnLocks). Several processes may share the file.
 */
export class SqliteConversationStore extends SqlConversationStore<SqliteRow> {
  readonly file: string;
  private readonly search: SqliteSearch;

  /** On the SQLite file `where` (its path, or the stores' database there). */
  constructor(where: string | SqliteDatabase, options: SqliteStoreOptions = {}) {
    const at = typeof where === 'string' ? conversationDatabase({ file: where }) : where;
    const database = at.open({ busyTimeoutMs: options.busyTimeoutMs });
    const dialect = sqliteDialect(database.db);
    super(database, dialect);
    this.file = at.file;
    this.search = dialect.search;
  }

  /** The connection the store runs on, for tests that need to reach under it. */
  get raw(): Database.Database {
    return this.database.raw!;
  }

  /** Indexes for search what was written since the last time (searches do this themselves). */
  indexPending(): Promise<void> {
    return this.search.catchUp();
  }

  override async health(): Promise<StoreHealth> {
    const h = await super.health();
    // The file's first, numbered history counts with the migrations after it.
    const first = h.ok ? (this.raw.pragma('user_version', { simple: true }) as number) : 0;
    const applied = h.migrations.applied + first;
    const latest = h.migrations.latest + SCHEMA_VERSION;
    return { ...h, migrations: { applied, latest, current: applied === latest } };
  }

  override async close(): Promise<void> {
    this.search.close();
    await super.close();
  }

  /** EXPLAIN QUERY PLAN details of the statement list(options) runs; for tests and diagnostics. */
  explainList(options: Pick<ListOptions, 'agentId' | 'projectId'> & { withCursor?: boolean; search?: boolean } = {}): string[] {
    const query = this.listQuery(options, 21, options.withCursor ? { updatedAt: '', id: '' } : null, options.search ? ['x'] : null);
    return this.explain(query.compile(this.db));
  }

  /** EXPLAIN QUERY PLAN details of messages(id). */
  explainMessages(): string[] {
    return this.explain(sql`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ${'x'} ORDER BY seq`.compile(this.db));
  }

  private explain(compiled: { sql: string; parameters: readonly unknown[] }): string[] {
    const rows = this.raw.prepare(`EXPLAIN QUERY PLAN ${compiled.sql}`).all(...compiled.parameters) as { detail: string }[];
    return rows.map((r) => r.detail);
  }
}

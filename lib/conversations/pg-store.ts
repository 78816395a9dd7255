import { randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { sql, type RawBuilder } from 'kysely';
import type {
  Compaction,
  CompactionMark,
  Conversation,
  ConversationStatus,
  ConversationStore,
  ConversationSummary,
  CreateConversationInput,
  LastTurn,
  ListOptions,
  Page,
  StoreHealth,
  StoredMessage,
  TurnBatch,
  TurnLease,
  TurnOutcome,
  TurnSignal,
  Usage,
} from './types';
import { isValidConversationId, newConversationId } from './ids';
import {
  TitleState,
  assertMarks,
  assertMessage,
  assertVariables,
  cleanCost,
  cleanUsage,
  decodeCursor,
  duplicateId,
  encodeCursor,
  foldText,
  lastPreview,
  messagePreview,
  monotonicNow,
  notFound,
  pageSize,
  freshConversation,
  onceSignal,
  prepareCreate,
  prepareModel,
  prepareRename,
  replayTitle,
  searchTerms,
  settleTurn,
  titleCandidates,
  unknownMessage,
} from './internal';
import { openPostgres, type Db } from '../db/postgres';
import { migratePostgres, migrationStatus } from '../db/migrate';
import { log } from '../log';

/** The longest a turn lease runs without a heartbeat; an instance that died frees its turns after it. */
export const DEFAULT_TURN_LEASE_MS = 30_000;
/** How often held leases are renewed and checked for a Stop (the guarantee behind NOTIFY). */
const DEFAULT_POLL_MS = 500;
const STOP_CHANNEL = 'bmad_turn_stop';

export interface PgStoreOptions {
  /** Turn lease length (ms), at most DEFAULT_TURN_LEASE_MS. */
  leaseMs?: number;
  /** Heartbeat and Stop poll interval (ms). */
  pollMs?: number;
  poolSize?: number;
  /**
   * LISTEN for Stop requests (default true). Off where notifications never arrive (behind a
   * transaction-mode pooler): the heartbeat's poll alone then brings a Stop within pollMs.
   */
  listen?: boolean;
}

interface ConversationRow {
  id: string;
  agent_id: string;
  bundle_name: string;
  project_id: string | null;
  title: string;
  created_at: string;
  updated_at: string;
  status: ConversationStatus;
  last_turn: string | null;
  variables: string;
  prompt_tokens: string | number;
  completion_tokens: string | number;
  cached_tokens: string | number;
  cost: number | null;
  model: string | null;
  owner_id: string | null;
  shared: boolean;
  /** When the turn lease ends, and whether it is still live (by the database's clock). */
  lease_expires: Date | null;
  lease_live: boolean | null;
}

interface SummaryRow extends ConversationRow {
  message_count: number;
  last_preview: string | null;
}

interface MessageRow {
  body: string;
  compacted: string | null;
}

const CONVERSATION_COLUMNS = sql.raw(
  `c.id, c.agent_id, c.bundle_name, c.project_id, c.title, c.created_at, c.updated_at, c.status, c.last_turn, c.variables,
   c.prompt_tokens, c.completion_tokens, c.cached_tokens, c.cost, c.model, c.owner_id, c.shared, c.message_count, c.last_preview,
   l.expires_at AS lease_expires, l.expires_at > now() AS lease_live`,
);

// Words kept per indexed text: long enough for any real word, short enough for Postgres's
// lexeme limit (2 KB) in any script; a text's words together stay far below a tsvector's 1 MB.
const MAX_WORD = 200;
const MAX_DOC_BYTES = 512 * 1024;

/**
 * The words of a text as the search index keeps them: folded and split exactly as the query's
 * words (searchTerms) and the other stores' tokenizers, so a prefix of a word matches the same way
 * everywhere. The lexemes go in as they are (array_to_tsvector): no text search configuration,
 * stemming or stop words of Postgres comes between.
 */
export function indexWords(text: string): string[] | null {
  const words = new Set<string>();
  let bytes = 0;
  for (const w of foldText(text).split(/[^\p{L}\p{N}]+/u)) {
    if (!w) continue;
    const word = clipWord(w);
    if (words.has(word)) continue;
    bytes += Buffer.byteLength(word) + 8;
    if (bytes > MAX_DOC_BYTES) break;
    words.add(word);
  }
  return words.size ? [...words] : null;
}

function clipWord(w: string): string {
  if (w.length <= MAX_WORD) return w;
  const cut = w.slice(0, MAX_WORD);
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/**
 * The tsquery text of a search: every word as a prefix (`'word':*`), all required. The words are
 * letters and digits only, so the quoting cannot be escaped; the text is bound as a parameter.
 */
export function prefixQuery(terms: readonly string[]): string {
  return terms.map((t) => `'${clipWord(t)}':*`).join(' & ');
}

/** Postgres text cannot hold NUL; titles, previews and names are shown, never replayed, so it becomes U+FFFD. */
function text(s: string): string;
function text(s: string | null): string | null;
function text(s: string | null): string | null {
  return s !== null && s.includes('\u0000') ? s.replace(/\u0000/g, '\ufffd') : s;
}

/** The message as the SQLite store's columns keep it (known fields only), as JSON. */
function messageBody(m: StoredMessage): string {
  switch (m.role) {
    case 'tool':
      return JSON.stringify({ id: m.id, role: m.role, toolCallId: m.toolCallId, name: m.name, result: m.result, timestamp: m.timestamp });
    case 'assistant': {
      const body: Record<string, unknown> = { id: m.id, role: m.role, content: m.content };
      if (m.toolCalls !== undefined) body.toolCalls = m.toolCalls;
      if (m.usage) {
        body.usage = { promptTokens: m.usage.promptTokens, completionTokens: m.usage.completionTokens, ...(m.usage.cachedTokens !== undefined ? { cachedTokens: m.usage.cachedTokens } : {}) };
      }
      if (m.cost !== undefined) body.cost = m.cost;
      if (m.profile !== undefined) body.profile = m.profile;
      if (m.model !== undefined) body.model = m.model;
      body.timestamp = m.timestamp;
      return JSON.stringify(body);
    }
    default:
      return JSON.stringify({ id: m.id, role: m.role, content: m.content, timestamp: m.timestamp });
  }
}

function toMessage(row: MessageRow): StoredMessage {
  const m = JSON.parse(row.body) as StoredMessage;
  if (row.compacted !== null) m.compacted = JSON.parse(row.compacted) as Compaction;
  return m;
}

function endArgs(outcome: TurnOutcome): { status: string; lastTurn: string | null } {
  const { status, lastTurn } = settleTurn(outcome, new Date().toISOString());
  return { status, lastTurn: lastTurn ? JSON.stringify(lastTurn) : null };
}

function toConversation(row: ConversationRow): Conversation {
  // A running turn whose lease ran out: its instance died. Shown as interrupted until a turn
  // takes the conversation again; nothing has to write it.
  const abandoned = row.status === 'running' && row.lease_live !== true;
  const lastTurn: LastTurn | null = abandoned
    ? { status: 'interrupted', at: (row.lease_expires ?? new Date(row.updated_at)).toISOString() }
    : row.last_turn !== null
      ? (JSON.parse(row.last_turn) as LastTurn)
      : null;
  return {
    id: row.id,
    agentId: row.agent_id,
    bundleName: row.bundle_name,
    ...(row.project_id !== null ? { projectId: row.project_id } : {}),
    title: row.title,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    status: abandoned ? 'interrupted' : row.status,
    ...(lastTurn ? { lastTurn } : {}),
    variables: JSON.parse(row.variables) as Record<string, string>,
    usage: { promptTokens: Number(row.prompt_tokens), completionTokens: Number(row.completion_tokens), cachedTokens: Number(row.cached_tokens) },
    ...(row.cost !== null ? { cost: row.cost } : {}),
    ...(row.model !== null ? { model: row.model } : {}),
    ...(row.owner_id !== null ? { ownerId: row.owner_id } : {}),
    ...(row.shared ? { shared: true } : {}),
  };
}

function toSummary(row: SummaryRow): ConversationSummary {
  const summary: ConversationSummary = { ...toConversation(row), messageCount: row.message_count };
  if (row.last_preview !== null) summary.lastMessagePreview = row.last_preview;
  return summary;
}

/** A lookup key from a request: Postgres refuses NUL in a parameter, and no stored id holds one. */
function key(s: string): string {
  return text(s);
}

/**
 * Conversations in Postgres, for several instances on one database. Same contract as the SQLite
 * store; every call is one statement (or one short transaction where the history is rewritten).
 *
 * The turn lock is a lease row: taken in one INSERT … ON CONFLICT that only replaces an expired
 * lease, renewed while the turn runs, deleted when it ends. A Stop is written onto the lease;
 * the holder hears it by NOTIFY at once, or on its next heartbeat (every pollMs) where
 * notifications do not arrive (transaction-mode poolers).
 */
export class PgConversationStore implements ConversationStore {
  private attempt: Promise<void>;
  private failedAt: number | null = null;
  readonly holderId: string;
  private readonly db: Db;
  private readonly pool: pg.Pool;
  private readonly url: string;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly listens: boolean;
  /** Turns this instance holds: conversation id → lease token. */
  private readonly held = new Map<string, string>();
  private readonly watchers = new Map<string, (signal: TurnSignal) => void>();
  private timer: NodeJS.Timeout | null = null;
  private beating = false;
  private listener: pg.Client | null = null;
  private listening: Promise<void> | null = null;
  private closed = false;

  constructor(url: string, options: PgStoreOptions = {}) {
    this.url = url;
    this.leaseMs = Math.max(200, Math.min(DEFAULT_TURN_LEASE_MS, Math.floor(options.leaseMs ?? DEFAULT_TURN_LEASE_MS)));
    this.pollMs = Math.max(20, Math.min(options.pollMs ?? DEFAULT_POLL_MS, Math.floor(this.leaseMs / 3)));
    this.listens = options.listen !== false;
    const { db, pool } = openPostgres(url, { poolSize: options.poolSize });
    this.db = db;
    this.pool = pool;
    this.holderId = `${os.hostname()}/${process.pid}/${randomUUID()}`;
    this.attempt = this.migrate();
  }

  /** Resolves once the schema is migrated; every call waits for it. */
  get ready(): Promise<void> {
    return this.attempt;
  }

  private migrate(): Promise<void> {
    const attempt = migratePostgres(this.db, this.pool).then(() => {
      this.failedAt = null;
    });
    // Callers see the failure through ready; it must not also be an unhandled rejection.
    attempt.catch((e: unknown) => {
      this.failedAt = Date.now();
      log.error('db.migrate_failed', { message: String((e as Error)?.message ?? e).slice(0, 300) });
    });
    return attempt;
  }

  /** The migration, tried again (at most once a second) after a failure: a database that comes up late is used once it is there. */
  private ensureReady(): Promise<void> {
    if (this.failedAt !== null && Date.now() - this.failedAt > 1000 && !this.closed) {
      this.failedAt = null;
      this.attempt = this.migrate();
    }
    return this.attempt;
  }

  private async q<R>(query: RawBuilder<R>): Promise<{ rows: R[]; numAffectedRows?: bigint }> {
    await this.ensureReady();
    if (this.closed) throw new Error('The conversation store is closed.');
    return query.execute(this.db);
  }

  private selectOne(where: RawBuilder<unknown>): RawBuilder<ConversationRow> {
    return sql<ConversationRow>`SELECT ${CONVERSATION_COLUMNS} FROM conversations c LEFT JOIN turn_leases l ON l.conversation_id = c.id WHERE ${where}`;
  }

  async create(input: CreateConversationInput): Promise<Conversation> {
    const c = prepareCreate(input, newConversationId);
    const now = monotonicNow();
    try {
      await this.q(sql`INSERT INTO conversations (id, agent_id, bundle_name, project_id, title, title_state, title_search, created_at, updated_at, model, owner_id)
        VALUES (${c.id}, ${text(c.agentId)}, ${text(c.bundleName)}, ${c.projectId ?? null}, ${text(c.title)}, ${c.titleState},
                array_to_tsvector(${indexWords(c.title)}::text[]), ${now}, ${now}, ${c.model ?? null}, ${c.ownerId ?? null})`);
    } catch (e) {
      if ((e as { code?: string }).code === '23505') throw duplicateId(c.id);
      throw e;
    }
    return freshConversation(c, now);
  }

  async get(id: string): Promise<Conversation | null> {
    if (!isValidConversationId(id)) return null;
    const { rows } = await this.q(this.selectOne(sql`c.id = ${id}`));
    return rows[0] ? toConversation(rows[0]) : null;
  }

  async list(options?: ListOptions): Promise<Page<ConversationSummary>> {
    const limit = pageSize(options);
    const after = options?.cursor ? decodeCursor(options.cursor) : null;
    const search = options?.q !== undefined;
    const terms = searchTerms(options?.q);
    if (search && !terms.length) return { items: [] };
    const where: RawBuilder<unknown>[] = [];
    if (options?.projectId !== undefined) where.push(sql`c.project_id = ${key(options.projectId)}`);
    if (options?.agentId !== undefined) where.push(sql`c.agent_id = ${key(options.agentId)}`);
    if (after) where.push(sql`(c.updated_at, c.id) < (${key(after.updatedAt)}, ${key(after.id)})`);
    if (search) {
      // Every word in one message or in the title, as in the SQLite store's FTS rows.
      const query = prefixQuery(terms);
      where.push(sql`c.id IN (SELECT conversation_id FROM messages WHERE search @@ ${query}::tsquery
                              UNION SELECT id FROM conversations WHERE title_search @@ ${query}::tsquery)`);
    }
    const { rows } = await this.q(
      sql<SummaryRow>`SELECT ${CONVERSATION_COLUMNS} FROM conversations c LEFT JOIN turn_leases l ON l.conversation_id = c.id
        ${where.length ? sql`WHERE ${sql.join(where, sql` AND `)}` : sql``}
        ORDER BY c.updated_at DESC, c.id DESC LIMIT ${limit + 1}`,
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const items = page.map(toSummary);
    return rows.length > limit && last ? { items, nextCursor: encodeCursor({ updatedAt: last.updated_at, id: last.id }) } : { items };
  }

  async rename(id: string, title: string): Promise<Conversation | null> {
    const t = prepareRename(title);
    if (!isValidConversationId(id)) return null;
    const { rows } = await this.q(
      sql<ConversationRow>`WITH c AS (UPDATE conversations SET title = ${text(t)}, title_state = ${TitleState.FIXED}, title_search = array_to_tsvector(${indexWords(t)}::text[])
          WHERE id = ${id} RETURNING *)
        SELECT ${CONVERSATION_COLUMNS} FROM c LEFT JOIN turn_leases l ON l.conversation_id = c.id`,
    );
    return rows[0] ? toConversation(rows[0]) : null;
  }

  async delete(id: string): Promise<boolean> {
    if (!isValidConversationId(id)) return false;
    this.held.delete(id);
    const r = await this.q(sql`DELETE FROM conversations WHERE id = ${id}`);
    return r.numAffectedRows === BigInt(1);
  }

  async messages(id: string): Promise<StoredMessage[]> {
    if (!isValidConversationId(id)) return [];
    const { rows } = await this.q(sql<MessageRow>`SELECT body, compacted FROM messages WHERE conversation_id = ${id} ORDER BY seq`);
    return rows.map(toMessage);
  }

  async append(id: string, m: StoredMessage): Promise<void> {
    assertMessage(m);
    if (!isValidConversationId(id)) throw notFound(id);
    const r = await this.q(this.appendQuery(id, m));
    if (r.numAffectedRows !== BigInt(1)) throw notFound(id);
  }

  /** One message appended, with the count, preview and automatic title (one statement). */
  private appendQuery(id: string, m: StoredMessage): RawBuilder<unknown> {
    const titles = titleCandidates(m);
    const userTitle = titles.userTitle === null ? null : text(titles.userTitle);
    const workflowTitle = titles.workflowTitle === null ? null : text(titles.workflowTitle);
    const words = m.role === 'user' || m.role === 'assistant' ? indexWords(m.content) : null;
    // One statement: the count, preview and automatic title move with the insert (see the SQLite
    // store's touch); SET expressions all see the row as it was.
    return sql`WITH t AS (
          UPDATE conversations SET
            message_count = message_count + 1,
            updated_at = ${monotonicNow()},
            last_preview = COALESCE(${text(messagePreview(m))}::text, last_preview),
            title = CASE
              WHEN title_state = 1 AND ${userTitle}::text IS NOT NULL THEN ${userTitle}::text
              WHEN title_state = 2 AND ${workflowTitle}::text IS NOT NULL THEN ${workflowTitle}::text
              ELSE title END,
            title_search = CASE
              WHEN title_state = 1 AND ${userTitle}::text IS NOT NULL THEN array_to_tsvector(${userTitle === null ? null : indexWords(userTitle)}::text[])
              WHEN title_state = 2 AND ${workflowTitle}::text IS NOT NULL THEN array_to_tsvector(${workflowTitle === null ? null : indexWords(workflowTitle)}::text[])
              ELSE title_search END,
            title_state = CASE
              WHEN title_state = 1 AND ${userTitle}::text IS NOT NULL THEN ${titles.userState}::smallint
              WHEN title_state = 2 AND (${workflowTitle}::text IS NOT NULL OR ${userTitle}::text IS NOT NULL) THEN ${TitleState.AUTO}::smallint
              ELSE title_state END
          WHERE id = ${id}
          RETURNING message_count)
        INSERT INTO messages (conversation_id, seq, id, role, body, compacted, search)
        SELECT ${id}, t.message_count, ${text(m.id)}, ${m.role}, ${messageBody(m)}, ${m.compacted !== undefined ? JSON.stringify(m.compacted) : null},
               array_to_tsvector(${words}::text[])
        FROM t`;
  }

  async setVariables(id: string, variables: Record<string, string>): Promise<void> {
    assertVariables(variables);
    if (!isValidConversationId(id)) throw notFound(id);
    const r = await this.q(sql`UPDATE conversations SET variables = ${JSON.stringify(variables)} WHERE id = ${id}`);
    if (r.numAffectedRows !== BigInt(1)) throw notFound(id);
  }

  async addUsage(id: string, usage: Usage, cost?: number): Promise<void> {
    if (!isValidConversationId(id)) throw notFound(id);
    const r = await this.q(this.usageQuery(id, usage, cost));
    if (r.numAffectedRows !== BigInt(1)) throw notFound(id);
  }

  private usageQuery(id: string, usage: Usage, cost?: number): RawBuilder<unknown> {
    const u = cleanUsage(usage);
    const c = cleanCost(cost) ?? null;
    return sql`UPDATE conversations SET prompt_tokens = prompt_tokens + ${u.promptTokens}, completion_tokens = completion_tokens + ${u.completionTokens},
          cached_tokens = cached_tokens + ${u.cachedTokens},
          cost = CASE WHEN ${c}::float8 IS NULL THEN cost ELSE COALESCE(cost, 0) + ${c}::float8 END
        WHERE id = ${id}`;
  }

  async setShared(id: string, shared: boolean): Promise<Conversation | null> {
    if (!isValidConversationId(id)) return null;
    const { rows } = await this.q(
      sql<ConversationRow>`WITH c AS (UPDATE conversations SET shared = ${shared === true} WHERE id = ${id} RETURNING *)
        SELECT ${CONVERSATION_COLUMNS} FROM c LEFT JOIN turn_leases l ON l.conversation_id = c.id`,
    );
    return rows[0] ? toConversation(rows[0]) : null;
  }

  async setModel(id: string, model: string | null): Promise<Conversation | null> {
    const m = prepareModel(model);
    if (!isValidConversationId(id)) return null;
    const { rows } = await this.q(
      sql<ConversationRow>`WITH c AS (UPDATE conversations SET model = ${m} WHERE id = ${id} RETURNING *)
        SELECT ${CONVERSATION_COLUMNS} FROM c LEFT JOIN turn_leases l ON l.conversation_id = c.id`,
    );
    return rows[0] ? toConversation(rows[0]) : null;
  }

  async compact(id: string, marks: CompactionMark[]): Promise<void> {
    assertMarks(marks);
    if (!isValidConversationId(id)) throw notFound(id);
    await this.ensureReady();
    await this.db.transaction().execute(async (tx) => {
      const { rows } = await sql`SELECT 1 FROM conversations WHERE id = ${id}`.execute(tx);
      if (!rows.length) throw notFound(id);
      for (const mark of marks) {
        const r = await sql`UPDATE messages SET compacted = ${JSON.stringify(mark.compacted)} WHERE conversation_id = ${id} AND id = ${key(mark.messageId)}`.execute(tx);
        if (r.numAffectedRows !== BigInt(1)) throw new TypeError(`Cannot compact: conversation "${id}" has no message "${mark.messageId}".`);
      }
    });
  }

  async beginTurn(id: string, messages: StoredMessage[] = []): Promise<TurnLease | null> {
    if (!isValidConversationId(id)) throw notFound(id);
    messages.forEach(assertMessage);
    const token = randomUUID();
    // The lock in one statement: a new lease row, or an expired one replaced; a live lease
    // (another instance's running turn) makes the conflict clause change nothing. The turn's
    // first messages go in the same transaction, only when the lock was taken.
    const lock = sql<{ id: string }>`WITH taken AS (
          INSERT INTO turn_leases (conversation_id, token, holder, started_at, heartbeat_at, expires_at)
          SELECT ${id}, ${token}, ${this.holderId}, now(), now(), now() + ${this.leaseMs}::int * interval '1 millisecond'
          WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ${id})
          ON CONFLICT (conversation_id) DO UPDATE SET token = excluded.token, holder = excluded.holder, started_at = excluded.started_at,
            heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at, stop_requested_at = NULL
          WHERE turn_leases.expires_at <= now()
          RETURNING conversation_id)
        UPDATE conversations SET status = 'running', last_turn = NULL WHERE id IN (SELECT conversation_id FROM taken) RETURNING id`;
    let rows: { id: string }[];
    if (!messages.length) rows = (await this.q(lock)).rows;
    else {
      await this.ensureReady();
      rows = await this.db.transaction().execute(async (tx) => {
        const taken = (await lock.execute(tx)).rows;
        if (taken.length) for (const m of messages) await this.appendQuery(id, m).execute(tx);
        return taken;
      });
    }
    if (!rows.length) {
      const { rows: exists } = await this.q(sql`SELECT 1 FROM conversations WHERE id = ${id}`);
      if (!exists.length) throw notFound(id);
      return null;
    }
    this.held.set(id, token);
    this.startHeartbeat();
    return { conversationId: id, token };
  }

  async endTurn(lease: TurnLease, outcome: TurnOutcome): Promise<void> {
    if (this.closed || !isValidConversationId(lease.conversationId)) return;
    await this.release(lease, outcome);
  }

  private async release(lease: TurnLease, outcome: TurnOutcome): Promise<void> {
    this.forget(lease);
    await this.ready;
    await this.releaseQuery(lease, outcome).execute(this.db);
  }

  private forget(lease: TurnLease): void {
    if (this.held.get(lease.conversationId) === lease.token) this.held.delete(lease.conversationId);
    this.watchers.delete(lease.token);
  }

  private releaseQuery(lease: TurnLease, outcome: TurnOutcome): RawBuilder<unknown> {
    const { status, lastTurn } = endArgs(outcome);
    return sql`WITH gone AS (DELETE FROM turn_leases WHERE conversation_id = ${lease.conversationId} AND token = ${key(String(lease.token))} RETURNING conversation_id)
        UPDATE conversations SET status = ${status}, last_turn = ${lastTurn} WHERE id IN (SELECT conversation_id FROM gone)`;
  }

  async commit(id: string, batch: TurnBatch): Promise<void> {
    if (!isValidConversationId(id)) throw notFound(id);
    const messages = batch.messages ?? [];
    messages.forEach(assertMessage);
    await this.ensureReady();
    if (this.closed) throw new Error('The conversation store is closed.');
    await this.db.transaction().execute(async (tx) => {
      for (const m of messages) {
        const r = await this.appendQuery(id, m).execute(tx);
        if (r.numAffectedRows !== BigInt(1)) throw notFound(id);
      }
      if (batch.usage) {
        const r = await this.usageQuery(id, batch.usage.usage, batch.usage.cost).execute(tx);
        if (r.numAffectedRows !== BigInt(1)) throw notFound(id);
      }
      if (batch.end) await this.releaseQuery(batch.end.lease, batch.end.outcome).execute(tx);
    });
    // The lease is ours no more once the transaction that ended it committed.
    if (batch.end) this.forget(batch.end.lease);
  }

  async truncateFrom(id: string, messageId: string): Promise<number> {
    if (!isValidConversationId(id)) throw notFound(id);
    if (typeof messageId !== 'string' || !messageId) throw unknownMessage(id, String(messageId));
    await this.ensureReady();
    return this.db.transaction().execute(async (tx) => {
      const { rows: conv } = await sql<{ title_state: number }>`SELECT title_state FROM conversations WHERE id = ${id} FOR UPDATE`.execute(tx);
      if (!conv.length) throw notFound(id);
      const { rows: at } = await sql<{ seq: number }>`SELECT seq FROM messages WHERE conversation_id = ${id} AND id = ${key(messageId)} ORDER BY seq LIMIT 1`.execute(tx);
      if (!at.length) throw unknownMessage(id, messageId);
      const seq = at[0]!.seq;
      const { rows: keptRows } = await sql<MessageRow>`SELECT body, compacted FROM messages WHERE conversation_id = ${id} AND seq < ${seq} ORDER BY seq`.execute(tx);
      const kept = keptRows.map(toMessage);
      const dropped = await sql`DELETE FROM messages WHERE conversation_id = ${id} AND seq >= ${seq}`.execute(tx);
      const removed = Number(dropped.numAffectedRows ?? 0);
      const title = replayTitle(kept);
      const fixed = TitleState.FIXED;
      // The count stays the number of rows, so the next append's seq (count + 1) follows the last kept one.
      await sql`UPDATE conversations SET message_count = message_count - ${removed}, last_preview = ${text(lastPreview(kept))}, updated_at = ${monotonicNow()},
          title = CASE WHEN title_state = ${fixed} THEN title ELSE ${text(title.title)} END,
          title_search = CASE WHEN title_state = ${fixed} THEN title_search ELSE array_to_tsvector(${indexWords(title.title)}::text[]) END,
          title_state = CASE WHEN title_state = ${fixed} THEN title_state ELSE ${title.state}::smallint END
        WHERE id = ${id}`.execute(tx);
      return removed;
    });
  }

  async requestStop(id: string): Promise<boolean> {
    if (!isValidConversationId(id)) throw notFound(id);
    // The notification goes out when the statement commits; the holder's heartbeat reads the
    // same row, so a lost notification only delays the Stop to the next beat.
    const { rows } = await this.q(
      sql<{ token: string }>`WITH s AS (UPDATE turn_leases SET stop_requested_at = now() WHERE conversation_id = ${id} AND expires_at > now() RETURNING token)
        SELECT token, pg_notify(${STOP_CHANNEL}, token) FROM s`,
    );
    if (!rows.length) {
      const { rows: exists } = await this.q(sql`SELECT 1 FROM conversations WHERE id = ${id}`);
      if (!exists.length) throw notFound(id);
      return false;
    }
    this.fire(rows[0]!.token, 'stop');
    return true;
  }

  watchTurn(lease: TurnLease, on: (signal: TurnSignal) => void): () => void {
    const once = onceSignal(on);
    this.watchers.set(lease.token, once);
    void this.listen();
    return () => {
      if (this.watchers.get(lease.token) === once) this.watchers.delete(lease.token);
    };
  }

  async health(): Promise<StoreHealth> {
    const down: StoreHealth = { kind: 'postgres', ok: false, migrations: { applied: 0, latest: 0, current: false } };
    try {
      await this.ensureReady();
      if (this.closed) return down;
      await sql`SELECT 1`.execute(this.db);
      return { kind: 'postgres', ok: true, migrations: await migrationStatus(this.db) };
    } catch {
      try {
        return { ...down, migrations: await migrationStatus(this.db) };
      } catch {
        return down;
      }
    }
  }

  /** Ends this instance's turns as interrupted and closes the pool; later calls are no-ops. */
  async close(): Promise<void> {
    if (this.closed) return;
    const held = [...this.held];
    this.held.clear();
    this.stopHeartbeat();
    await Promise.all(held.map(([conversationId, token]) => this.release({ conversationId, token }, 'interrupted').catch(() => undefined)));
    this.closed = true;
    this.watchers.clear();
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    await this.ready.catch(() => undefined);
    await this.db.destroy();
  }

  private fire(token: string, signal: TurnSignal): void {
    const watcher = this.watchers.get(token);
    if (!watcher) return;
    this.watchers.delete(token);
    watcher(signal);
  }

  private startHeartbeat(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.beat(), this.pollMs);
    this.timer.unref?.();
  }

  private stopHeartbeat(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Renews every lease this instance holds and reads their Stop requests: one statement per beat. */
  private async beat(): Promise<void> {
    if (this.beating || this.closed) return;
    if (!this.held.size) return this.stopHeartbeat();
    this.beating = true;
    const tokens = [...this.held.values()];
    try {
      const { rows } = await sql<{ token: string; stop: boolean }>`UPDATE turn_leases
          SET heartbeat_at = now(), expires_at = now() + ${this.leaseMs}::int * interval '1 millisecond'
          WHERE token = ANY(${tokens}::text[]) RETURNING token, stop_requested_at IS NOT NULL AS stop`.execute(this.db);
      const renewed = new Map(rows.map((r) => [r.token, r.stop]));
      for (const token of tokens) {
        const stop = renewed.get(token);
        if (stop) this.fire(token, 'stop');
        else if (stop === undefined && [...this.held.values()].includes(token)) {
          // Gone while still held here: it expired (this process stalled longer than the lease)
          // and another instance took the conversation, or the conversation was deleted.
          for (const [c, t] of this.held) if (t === token) this.held.delete(c);
          this.fire(token, 'lost');
        }
      }
    } catch (e) {
      log.warn('turn.heartbeat_failed', { message: String((e as Error)?.message ?? e).slice(0, 200) });
    } finally {
      this.beating = false;
    }
  }

  /** One LISTEN connection per store, opened with the first watched turn; the heartbeat covers any gap. */
  private listen(): Promise<void> {
    if (this.closed || !this.listens) return Promise.resolve();
    this.listening ??= (async () => {
      await this.ready;
      const client = new pg.Client({ connectionString: this.url });
      const reset = () => {
        if (this.listener === client) this.listener = null;
        this.listening = null;
      };
      client.on('error', reset);
      client.on('end', reset);
      client.on('notification', (n) => {
        if (n.channel === STOP_CHANNEL && n.payload) this.fire(n.payload, 'stop');
      });
      await client.connect();
      if (this.closed) {
        await client.end().catch(() => undefined);
        return;
      }
      await client.query(`LISTEN ${STOP_CHANNEL}`);
      this.listener = client;
    })().catch((e: unknown) => {
      log.warn('turn.listen_failed', { message: String((e as Error)?.message ?? e).slice(0, 200) });
      this.listening = null;
    });
    return this.listening;
  }
}

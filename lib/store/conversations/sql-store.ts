import { randomUUID } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import type {
  ClientChatMark,
  CompactionMark,
  Conversation,
  ConversationStatus,
  ConversationStore,
  ConversationSummary,
  CreateConversationInput,
  LastTurn,
  ListOptions,
  Page,
  SpendFilter,
  SpendTotals,
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
  assertClientChatMark,
  assertMarks,
  assertMessage,
  assertVariables,
  cleanCost,
  cleanUsage,
  decodeCursor,
  duplicateId,
  emptySpend,
  encodeCursor,
  freshConversation,
  lastPreview,
  messagePreview,
  monotonicNow,
  notFound,
  onceSignal,
  pageSize,
  prepareCreate,
  prepareModel,
  prepareRename,
  replayTitle,
  searchTerms,
  settleTurn,
  titleCandidates,
  unknownMessage,
} from './internal';
import type { AppDatabase } from '../db/database';
import { text } from '../db/text';
import type { Db } from '../db/postgres';

/** A conversation row as both dialects read it (the lock's columns come from the dialect). */
export interface ConversationRow {
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
  shared: boolean | number;
  workspace_id: string | null;
  message_count: number;
  last_preview: string | null;
}

/**
 * What differs between the dialects, and only that: how a message is kept and indexed for
 * search, and how a turn is locked and stopped. Everything else is one set of statements.
 */
export interface StoreDialect<Row extends ConversationRow = ConversationRow> {
  readonly kind: 'sqlite' | 'postgres';
  /** The FROM of a conversation read, aliased `c`, with whatever the lock's columns need. */
  readonly from: RawBuilder<unknown>;
  /** The lock's columns, read with every conversation (`lockColumns` in Row). */
  readonly lockColumns: RawBuilder<unknown>;
  /** When a running turn's holder is gone (the row says running, but nothing runs it), since when. */
  abandonedSince(row: Row): string | null;
  /** A boolean as the dialect binds it. */
  bool(value: boolean): unknown;
  /** What a read adds to hold its rows until the transaction ends (SQLite's IMMEDIATE transactions already do). */
  readonly forUpdate: RawBuilder<unknown>;

  /** Columns and values a message is inserted with, after conversation_id and seq. */
  messageValues(m: StoredMessage): Record<string, unknown>;
  /** The columns toMessage reads. */
  readonly messageColumns: RawBuilder<unknown>;
  toMessage(row: Record<string, unknown>): StoredMessage;

  /** The value of title_search for a title, or null where the database indexes titles itself (no such column). */
  titleIndex(title: string): RawBuilder<unknown> | null;
  /** The condition a search puts on `c.id`. */
  searchFilter(terms: readonly string[]): RawBuilder<unknown>;
  /** Brings the search index up to date before a search. */
  beforeSearch(db: Db): Promise<void>;
  /** After a turn ended: index what it wrote, off the turn's path. */
  afterTurn(db: Db): void;

  readonly locks: TurnLocks;
}

/** The turn lock of one dialect: taken, released, stopped, across the processes on one database. */
export interface TurnLocks {
  /**
   * Takes the lock within `tx`: `busy` when a live turn holds it, `missing` when there is no
   * such conversation. The conversation row ends `running` with no last turn when taken.
   */
  take(tx: Db, id: string, token: string): Promise<'taken' | 'busy' | 'missing'>;
  /** Ends the turn holding `lease` with `status`; nothing when the lease is no longer held. */
  release(q: Db, lease: TurnLease, status: ConversationStatus, lastTurn: string | null): Promise<void>;
  /** Records a Stop for the running turn; its token, or null when none runs. */
  requestStop(q: Db, id: string): Promise<string | null>;
  /** Tells `fire` when a turn of this process is asked to stop or was lost; called with the held leases. */
  start(held: ReadonlyMap<string, string>, fire: (token: string, signal: TurnSignal) => void): void;
  /** This process now holds `token` (after the transaction that took it committed). */
  acquired(token: string): void;
  /** A turn began watching; the dialect may need to look for Stops now, until unwatch. */
  watching(token: string, conversationId: string): void;
  unwatch(token: string): void;
  /** Turns this dialect must end at open: those whose holder is gone. */
  recover(db: Db): Promise<void>;
  close(): Promise<void>;
}

const CONVERSATION_COLUMNS = sql.raw(
  `c.id, c.agent_id, c.bundle_name, c.project_id, c.title, c.created_at, c.updated_at, c.status, c.last_turn, c.variables,
   c.prompt_tokens, c.completion_tokens, c.cached_tokens, c.cost, c.model, c.owner_id, c.shared, c.workspace_id, c.message_count, c.last_preview`,
);

/** How a turn's end is written: its status, and its lastTurn as stored JSON. */
export function endArgs(outcome: TurnOutcome): { status: ConversationStatus; lastTurn: string | null } {
  const { status, lastTurn } = settleTurn(outcome, new Date().toISOString());
  return { status, lastTurn: lastTurn ? JSON.stringify(lastTurn) : null };
}

function affected(r: { numAffectedRows?: bigint }): number {
  return Number(r.numAffectedRows ?? 0);
}

/**
 * Conversations in SQL: one SQLite file, or Postgres for several instances on one database.
 * The statements are written once, on Kysely, for both; the dialect supplies the few that
 * cannot be (see StoreDialect). Every call is one statement, or one short transaction where it
 * writes several rows, so a crash at any point leaves either the whole change or none of it.
 */
export class SqlConversationStore<Row extends ConversationRow = ConversationRow> implements ConversationStore {
  protected readonly db: Db;
  /** Turns this instance holds: conversation id → lease token. */
  protected readonly held = new Map<string, string>();
  private readonly watchers = new Map<string, (signal: TurnSignal) => void>();
  private recovered: Promise<void> | null = null;
  protected closed = false;

  constructor(
    protected readonly database: AppDatabase,
    protected readonly dialect: StoreDialect<Row>,
  ) {
    this.db = database.db;
    dialect.locks.start(this.held, (token, signal) => this.fire(token, signal));
    // Seen through ready(); not also an unhandled rejection.
    this.ready.catch(() => undefined);
  }

  /**
   * Resolves once the schema is migrated and abandoned turns are ended; every call waits for it.
   * A failure is tried again by the next call (a database that comes up after the app is used
   * once it is there).
   */
  get ready(): Promise<void> {
    return this.database.ready().then(() => {
      this.recovered ??= this.dialect.locks.recover(this.db).catch((e: unknown) => {
        this.recovered = null;
        throw e;
      });
      return this.recovered;
    });
  }

  private isReady = false;

  /** The Kysely instance, once ready and while open. */
  protected async q(): Promise<Db> {
    if (!this.isReady) {
      await this.ready;
      this.isReady = true;
    }
    if (this.closed) throw new Error('The conversation store is closed.');
    return this.db;
  }

  private selectOne(where: RawBuilder<unknown>): RawBuilder<Row> {
    return sql<Row>`SELECT ${CONVERSATION_COLUMNS}, ${this.dialect.lockColumns} FROM ${this.dialect.from} WHERE ${where}`;
  }

  async create(input: CreateConversationInput): Promise<Conversation> {
    const c = prepareCreate(input, newConversationId);
    const now = monotonicNow();
    const db = await this.q();
    const index = this.dialect.titleIndex(c.title);
    try {
      await sql`INSERT INTO conversations (id, agent_id, bundle_name, project_id, title, title_state, created_at, updated_at, model, owner_id, workspace_id${index ? sql`, title_search` : sql``})
        VALUES (${c.id}, ${text(c.agentId)}, ${text(c.bundleName)}, ${c.projectId ?? null}, ${text(c.title)}, ${c.titleState}, ${now}, ${now}, ${c.model ?? null}, ${c.ownerId ?? null}, ${c.workspaceId ?? null}${index ? sql`, ${index}` : sql``})`.execute(db);
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === '23505' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw duplicateId(c.id);
      throw e;
    }
    return freshConversation(c, now);
  }

  async get(id: string): Promise<Conversation | null> {
    if (!isValidConversationId(id)) return null;
    const { rows } = await this.selectOne(sql`c.id = ${id}`).execute(await this.q());
    return rows[0] ? this.toConversation(rows[0]) : null;
  }

  /** The statement list(options) runs; the SQLite store explains it in its tests. */
  protected listQuery(options: ListOptions, limit: number, after: { updatedAt: string; id: string } | null, terms: readonly string[] | null): RawBuilder<Row> {
    const where: RawBuilder<unknown>[] = [];
    if (options.projectId !== undefined) where.push(sql`c.project_id = ${text(options.projectId)}`);
    if (options.agentId !== undefined) where.push(sql`c.agent_id = ${text(options.agentId)}`);
    if (options.ownedOrSharedFor !== undefined) where.push(sql`(c.owner_id = ${text(options.ownedOrSharedFor)} OR c.shared = ${this.dialect.bool(true)})`);
    if (after) where.push(sql`(c.updated_at, c.id) < (${text(after.updatedAt)}, ${text(after.id)})`);
    if (terms) where.push(this.dialect.searchFilter(terms));
    return sql<Row>`SELECT ${CONVERSATION_COLUMNS}, ${this.dialect.lockColumns} FROM ${this.dialect.from}
      ${where.length ? sql`WHERE ${sql.join(where, sql` AND `)}` : sql``}
      ORDER BY c.updated_at DESC, c.id DESC LIMIT ${limit}`;
  }

  async list(options: ListOptions = {}): Promise<Page<ConversationSummary>> {
    const limit = pageSize(options);
    const after = options.cursor ? decodeCursor(options.cursor) : null;
    const search = options.q !== undefined;
    const terms = searchTerms(options.q);
    if (search && !terms.length) return { items: [] };
    const db = await this.q();
    if (search) await this.dialect.beforeSearch(db);
    // One row more than the page says whether there is a next page without a COUNT.
    const { rows } = await this.listQuery(options, limit + 1, after, search ? terms : null).execute(db);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const items = page.map((r) => this.toSummary(r));
    return rows.length > limit && last ? { items, nextCursor: encodeCursor({ updatedAt: last.updated_at, id: last.id }) } : { items };
  }

  async rename(id: string, title: string): Promise<Conversation | null> {
    const t = prepareRename(title);
    if (!isValidConversationId(id)) return null;
    const index = this.dialect.titleIndex(t);
    const r = await sql`UPDATE conversations SET title = ${text(t)}, title_state = ${TitleState.FIXED}${index ? sql`, title_search = ${index}` : sql``} WHERE id = ${id}`.execute(await this.q());
    return affected(r) === 1 ? this.get(id) : null;
  }

  async delete(id: string): Promise<boolean> {
    if (!isValidConversationId(id)) return false;
    this.held.delete(id);
    const r = await sql`DELETE FROM conversations WHERE id = ${id}`.execute(await this.q());
    return affected(r) === 1;
  }

  async messages(id: string): Promise<StoredMessage[]> {
    if (!isValidConversationId(id)) return [];
    const { rows } = await sql<Record<string, unknown>>`SELECT ${this.dialect.messageColumns} FROM messages WHERE conversation_id = ${id} ORDER BY seq`.execute(await this.q());
    return rows.map((r) => this.dialect.toMessage(r));
  }

  async append(id: string, message: StoredMessage): Promise<void> {
    assertMessage(message);
    if (!isValidConversationId(id)) throw notFound(id);
    await (await this.q()).transaction().execute((tx) => this.appendRow(tx, id, message));
  }

  /**
   * One message appended, with the count, preview and automatic title moved in the same
   * transaction, so list() never has to look at messages. SET expressions all see the row as it
   * was, hence the repeated title_state tests.
   */
  private async appendRow(tx: Db, id: string, m: StoredMessage): Promise<void> {
    const titles = titleCandidates(m);
    const userTitle = titles.userTitle === null ? null : text(titles.userTitle);
    const workflowTitle = titles.workflowTitle === null ? null : text(titles.workflowTitle);
    const userSet = sql`title_state = ${TitleState.DEFAULT} AND CAST(${userTitle} AS TEXT) IS NOT NULL`;
    const workflowSet = sql`title_state = ${TitleState.FROM_COMMAND} AND CAST(${workflowTitle} AS TEXT) IS NOT NULL`;
    const userIndex = userTitle === null ? null : this.dialect.titleIndex(userTitle);
    const workflowIndex = workflowTitle === null ? null : this.dialect.titleIndex(workflowTitle);
    const index =
      userIndex || workflowIndex
        ? sql`, title_search = CASE
              ${userIndex ? sql`WHEN ${userSet} THEN ${userIndex}` : sql``}
              ${workflowIndex ? sql`WHEN ${workflowSet} THEN ${workflowIndex}` : sql``}
              ELSE title_search END`
        : sql``;
    const { rows } = await sql<{ message_count: number }>`UPDATE conversations SET
          message_count = message_count + 1,
          updated_at = ${monotonicNow()},
          last_preview = COALESCE(CAST(${text(messagePreview(m))} AS TEXT), last_preview),
          title = CASE
            WHEN ${userSet} THEN CAST(${userTitle} AS TEXT)
            WHEN ${workflowSet} THEN CAST(${workflowTitle} AS TEXT)
            ELSE title END
          ${index},
          title_state = CASE
            WHEN ${userSet} THEN CAST(${titles.userState} AS INTEGER)
            WHEN title_state = ${TitleState.FROM_COMMAND} AND (CAST(${workflowTitle} AS TEXT) IS NOT NULL OR CAST(${userTitle} AS TEXT) IS NOT NULL) THEN CAST(${TitleState.AUTO} AS INTEGER)
            ELSE title_state END
        WHERE id = ${id}
        RETURNING message_count`.execute(tx);
    if (!rows[0]) throw notFound(id);
    const values = { conversation_id: id, seq: rows[0].message_count, ...this.dialect.messageValues(m) };
    const columns = Object.keys(values);
    await sql`INSERT INTO messages (${sql.join(columns.map((c) => sql.ref(c)))}) VALUES (${sql.join(columns.map((c) => (values as Record<string, unknown>)[c]))})`.execute(tx);
  }

  async setVariables(id: string, variables: Record<string, string>): Promise<void> {
    assertVariables(variables);
    if (!isValidConversationId(id)) throw notFound(id);
    const r = await sql`UPDATE conversations SET variables = ${JSON.stringify(variables)} WHERE id = ${id}`.execute(await this.q());
    if (affected(r) !== 1) throw notFound(id);
  }

  async addUsage(id: string, usage: Usage, cost?: number): Promise<void> {
    if (!isValidConversationId(id)) throw notFound(id);
    await (await this.q()).transaction().execute(async (tx) => {
      if (affected(await this.usageQuery(id, usage, cost).execute(tx)) !== 1) throw notFound(id);
      await this.ledgerQuery(id, usage, cost).execute(tx);
    });
  }

  /** One row of the usage ledger for a project conversation's model call (none for a bundle's). */
  private ledgerQuery(id: string, usage: Usage, cost?: number): RawBuilder<unknown> {
    const u = cleanUsage(usage);
    const c = cleanCost(cost);
    return sql`INSERT INTO usage_ledger (conversation_id, project_id, owner_id, at, prompt_tokens, completion_tokens, cached_tokens, cost)
      SELECT id, project_id, owner_id, ${new Date().toISOString()}, ${u.promptTokens}, ${u.completionTokens}, ${u.cachedTokens}, CAST(${c ?? null} AS DOUBLE PRECISION)
      FROM conversations WHERE id = ${id} AND project_id IS NOT NULL`;
  }

  async spend(filter: SpendFilter): Promise<SpendTotals> {
    if (filter.conversationIds && filter.conversationIds.length === 0) return emptySpend();
    const until = filter.until !== undefined ? sql` AND at < ${filter.until}` : sql``;
    const only = filter.conversationIds ? sql` AND conversation_id IN (${sql.join(filter.conversationIds)})` : sql``;
    const r = await sql<Record<string, unknown>>`SELECT COALESCE(SUM(prompt_tokens), 0) AS p, COALESCE(SUM(completion_tokens), 0) AS c, COALESCE(SUM(cached_tokens), 0) AS k,
        COALESCE(SUM(cost), 0) AS usd, COUNT(*) AS calls, COUNT(*) - COUNT(cost) AS unpriced
      FROM usage_ledger WHERE ${whereOf(filter)} AND at >= ${filter.since}${until}${only}`.execute(await this.q());
    const row = r.rows[0] ?? {};
    return {
      promptTokens: Number(row.p ?? 0),
      completionTokens: Number(row.c ?? 0),
      cachedTokens: Number(row.k ?? 0),
      cost: Number(row.usd ?? 0),
      calls: Number(row.calls ?? 0),
      unpriced: Number(row.unpriced ?? 0),
    };
  }

  async spendByOwner(filter: SpendFilter): Promise<(SpendTotals & { ownerId: string | null })[]> {
    if (filter.conversationIds && filter.conversationIds.length === 0) return [];
    const until = filter.until !== undefined ? sql` AND at < ${filter.until}` : sql``;
    const only = filter.conversationIds ? sql` AND conversation_id IN (${sql.join(filter.conversationIds)})` : sql``;
    const r = await sql<Record<string, unknown>>`SELECT owner_id AS o, COALESCE(SUM(prompt_tokens), 0) AS p, COALESCE(SUM(completion_tokens), 0) AS c, COALESCE(SUM(cached_tokens), 0) AS k,
        COALESCE(SUM(cost), 0) AS usd, COUNT(*) AS calls, COUNT(*) - COUNT(cost) AS unpriced
      FROM usage_ledger WHERE ${whereOf(filter)} AND at >= ${filter.since}${until}${only} GROUP BY owner_id`.execute(await this.q());
    return r.rows.map((row) => ({
      ownerId: typeof row.o === 'string' ? row.o : null,
      promptTokens: Number(row.p ?? 0),
      completionTokens: Number(row.c ?? 0),
      cachedTokens: Number(row.k ?? 0),
      cost: Number(row.usd ?? 0),
      calls: Number(row.calls ?? 0),
      unpriced: Number(row.unpriced ?? 0),
    }));
  }

  private usageQuery(id: string, usage: Usage, cost?: number): RawBuilder<unknown> {
    const u = cleanUsage(usage);
    const c = cleanCost(cost);
    return sql`UPDATE conversations SET prompt_tokens = prompt_tokens + ${u.promptTokens}, completion_tokens = completion_tokens + ${u.completionTokens},
        cached_tokens = cached_tokens + ${u.cachedTokens}, cost = CASE WHEN CAST(${c ?? null} AS DOUBLE PRECISION) IS NULL THEN cost ELSE COALESCE(cost, 0) + CAST(${c ?? null} AS DOUBLE PRECISION) END
      WHERE id = ${id}`;
  }

  async setModel(id: string, model: string | null): Promise<Conversation | null> {
    const m = prepareModel(model);
    if (!isValidConversationId(id)) return null;
    const r = await sql`UPDATE conversations SET model = ${m} WHERE id = ${id}`.execute(await this.q());
    return affected(r) === 1 ? this.get(id) : null;
  }

  async setShared(id: string, shared: boolean): Promise<Conversation | null> {
    if (!isValidConversationId(id)) return null;
    const r = await sql`UPDATE conversations SET shared = ${this.dialect.bool(shared)} WHERE id = ${id}`.execute(await this.q());
    return affected(r) === 1 ? this.get(id) : null;
  }

  async compact(id: string, marks: CompactionMark[]): Promise<void> {
    assertMarks(marks);
    if (!isValidConversationId(id)) throw notFound(id);
    await (await this.q()).transaction().execute(async (tx) => {
      const { rows } = await sql`SELECT 1 AS x FROM conversations WHERE id = ${id}`.execute(tx);
      if (!rows.length) throw notFound(id);
      for (const mark of marks) {
        const r = await sql`UPDATE messages SET compacted = ${JSON.stringify(mark.compacted)} WHERE conversation_id = ${id} AND id = ${text(mark.messageId)}`.execute(tx);
        if (affected(r) !== 1) throw new TypeError(`Cannot compact: conversation "${id}" has no message "${mark.messageId}".`);
      }
    });
  }

  async beginTurn(id: string, messages: StoredMessage[] = []): Promise<TurnLease | null> {
    messages.forEach(assertMessage);
    if (!isValidConversationId(id)) throw notFound(id);
    const token = randomUUID();
    // The lock and the turn's first messages in one transaction: the messages only when the lock was taken.
    const taken = await (await this.q()).transaction().execute(async (tx) => {
      const lock = await this.dialect.locks.take(tx, id, token);
      if (lock === 'missing') throw notFound(id);
      if (lock === 'busy') return false;
      for (const m of messages) await this.appendRow(tx, id, m);
      return true;
    });
    if (!taken) return null;
    this.held.set(id, token);
    this.dialect.locks.acquired(token);
    return { conversationId: id, token };
  }

  async endTurn(lease: TurnLease, outcome: TurnOutcome): Promise<void> {
    if (this.closed || !isValidConversationId(lease.conversationId)) return;
    await this.release(lease, outcome);
    this.dialect.afterTurn(this.db);
  }

  private async release(lease: TurnLease, outcome: TurnOutcome): Promise<void> {
    const { status, lastTurn } = endArgs(outcome);
    try {
      await this.dialect.locks.release(await this.q(), lease, status, lastTurn);
    } finally {
      // Not held any more even when the write failed: no heartbeat renews it, so it expires
      // (Postgres) rather than keeping the conversation busy for as long as this process runs.
      this.forget(lease);
    }
  }

  private forget(lease: TurnLease): void {
    if (this.held.get(lease.conversationId) === lease.token) this.held.delete(lease.conversationId);
    this.unwatch(lease.token);
  }

  private unwatch(token: string): void {
    this.watchers.delete(token);
    this.dialect.locks.unwatch(token);
  }

  async commit(id: string, batch: TurnBatch): Promise<void> {
    const messages = batch.messages ?? [];
    messages.forEach(assertMessage);
    if (!isValidConversationId(id)) throw notFound(id);
    if (batch.usage) {
      cleanUsage(batch.usage.usage);
      cleanCost(batch.usage.cost);
    }
    await (await this.q()).transaction().execute(async (tx) => {
      for (const m of messages) await this.appendRow(tx, id, m);
      if (batch.usage) {
        if (affected(await this.usageQuery(id, batch.usage.usage, batch.usage.cost).execute(tx)) !== 1) throw notFound(id);
        await this.ledgerQuery(id, batch.usage.usage, batch.usage.cost).execute(tx);
      }
      if (batch.end) {
        const { status, lastTurn } = endArgs(batch.end.outcome);
        await this.dialect.locks.release(tx, batch.end.lease, status, lastTurn);
      }
    });
    // The lease is ours no more once the transaction that ended it committed.
    if (batch.end) {
      this.forget(batch.end.lease);
      this.dialect.afterTurn(this.db);
    }
  }

  async truncateFrom(id: string, messageId: string): Promise<number> {
    if (!isValidConversationId(id)) throw notFound(id);
    if (typeof messageId !== 'string' || !messageId) throw unknownMessage(id, String(messageId));
    return (await this.q()).transaction().execute(async (tx) => {
      // Held until the end, so an append racing the truncation cannot take a seq it frees.
      const { rows: conv } = await sql`SELECT title_state FROM conversations WHERE id = ${id} ${this.dialect.forUpdate}`.execute(tx);
      if (!conv.length) throw notFound(id);
      const { rows: at } = await sql<{ seq: number }>`SELECT seq FROM messages WHERE conversation_id = ${id} AND id = ${text(messageId)} ORDER BY seq LIMIT 1`.execute(tx);
      if (!at.length) throw unknownMessage(id, messageId);
      const seq = at[0]!.seq;
      const { rows: keptRows } = await sql<Record<string, unknown>>`SELECT ${this.dialect.messageColumns} FROM messages WHERE conversation_id = ${id} AND seq < ${seq} ORDER BY seq`.execute(tx);
      const kept = keptRows.map((r) => this.dialect.toMessage(r));
      const removed = affected(await sql`DELETE FROM messages WHERE conversation_id = ${id} AND seq >= ${seq}`.execute(tx));
      const title = replayTitle(kept);
      const fixed = TitleState.FIXED;
      const index = this.dialect.titleIndex(title.title);
      // The count stays the number of rows, so the next append's seq (count + 1) follows the last kept one.
      await sql`UPDATE conversations SET message_count = message_count - ${removed}, last_preview = ${text(lastPreview(kept))}, updated_at = ${monotonicNow()},
          title = CASE WHEN title_state = ${fixed} THEN title ELSE ${text(title.title)} END
          ${index ? sql`, title_search = CASE WHEN title_state = ${fixed} THEN title_search ELSE ${index} END` : sql``},
          title_state = CASE WHEN title_state = ${fixed} THEN title_state ELSE CAST(${title.state} AS INTEGER) END
        WHERE id = ${id}`.execute(tx);
      return removed;
    });
  }

  async requestStop(id: string): Promise<boolean> {
    if (!isValidConversationId(id)) throw notFound(id);
    const db = await this.q();
    const token = await this.dialect.locks.requestStop(db, id);
    if (token === null) {
      const { rows } = await sql`SELECT 1 AS x FROM conversations WHERE id = ${id}`.execute(db);
      if (!rows.length) throw notFound(id);
      return false;
    }
    // A turn of this instance stops at once; another instance's hears it from its dialect.
    this.fire(token, 'stop');
    return true;
  }

  watchTurn(lease: TurnLease, on: (signal: TurnSignal) => void): () => void {
    const once = onceSignal(on);
    this.watchers.set(lease.token, once);
    this.dialect.locks.watching(lease.token, lease.conversationId);
    return () => {
      if (this.watchers.get(lease.token) === once) this.unwatch(lease.token);
    };
  }

  private fire(token: string, signal: TurnSignal): void {
    const watcher = this.watchers.get(token);
    if (signal === 'lost') for (const [c, t] of this.held) if (t === token) this.held.delete(c);
    if (!watcher) return;
    this.unwatch(token);
    watcher(signal);
  }

  async markClientChat(mark: ClientChatMark): Promise<void> {
    assertClientChatMark(mark);
    if (!isValidConversationId(mark.conversationId)) throw notFound(mark.conversationId);
    // One statement: the conversation must exist, and the newest mark of a key wins.
    const r = await sql`INSERT INTO client_chats (owner_id, chat, history, conversation_id, message_id, at)
        SELECT ${text(mark.owner)}, ${text(mark.chat)}, ${mark.history}, id, ${text(mark.messageId)}, ${new Date().toISOString()} FROM conversations WHERE id = ${mark.conversationId}
        ON CONFLICT (owner_id, chat, history) DO UPDATE SET conversation_id = excluded.conversation_id, message_id = excluded.message_id, at = excluded.at`.execute(await this.q());
    if (affected(r) !== 1) throw notFound(mark.conversationId);
  }

  async findClientChat(owner: string, chat: string, history: string): Promise<{ conversationId: string; messageId: string } | null> {
    const { rows } = await sql<{ conversation_id: string; message_id: string }>`SELECT conversation_id, message_id FROM client_chats
        WHERE owner_id = ${text(owner)} AND chat = ${text(chat)} AND history = ${text(history)}`.execute(await this.q());
    return rows[0] ? { conversationId: rows[0].conversation_id, messageId: rows[0].message_id } : null;
  }

  async health(): Promise<StoreHealth> {
    const h = await this.database.health();
    return { kind: this.dialect.kind, ok: h.ok && !this.closed, migrations: h.migrations };
  }

  /** Ends this instance's turns as interrupted and closes the database; later calls are no-ops. */
  async close(): Promise<void> {
    if (this.closed) return;
    const held = [...this.held];
    this.held.clear();
    await this.ready.catch(() => undefined);
    const { status, lastTurn } = endArgs('interrupted');
    for (const [conversationId, token] of held) {
      await this.dialect.locks.release(this.db, { conversationId, token }, status, lastTurn).catch(() => undefined);
    }
    this.closed = true;
    this.watchers.clear();
    await this.dialect.locks.close();
    await this.database.close();
  }

  protected toConversation(row: Row): Conversation {
    // A running turn whose holder is gone (its process died): interrupted until a turn takes the
    // conversation again; nothing has to write it.
    const since = row.status === 'running' ? this.dialect.abandonedSince(row) : null;
    const lastTurn: LastTurn | null = since !== null ? { status: 'interrupted', at: since } : row.last_turn !== null ? (JSON.parse(row.last_turn) as LastTurn) : null;
    return {
      id: row.id,
      agentId: row.agent_id,
      bundleName: row.bundle_name,
      ...(row.project_id !== null ? { projectId: row.project_id } : {}),
      title: row.title,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      status: since !== null ? 'interrupted' : row.status,
      ...(lastTurn ? { lastTurn } : {}),
      variables: JSON.parse(row.variables) as Record<string, string>,
      usage: { promptTokens: Number(row.prompt_tokens), completionTokens: Number(row.completion_tokens), cachedTokens: Number(row.cached_tokens) },
      ...(row.cost !== null ? { cost: row.cost } : {}),
      ...(row.model !== null ? { model: row.model } : {}),
      ...(row.owner_id !== null ? { ownerId: row.owner_id } : {}),
      ...(row.shared ? { shared: true } : {}),
      ...(row.workspace_id ? { workspaceId: row.workspace_id } : {}),
    };
  }

  protected toSummary(row: Row): ConversationSummary {
    const summary: ConversationSummary = { ...this.toConversation(row), messageCount: Number(row.message_count) };
    if (row.last_preview !== null) summary.lastMessagePreview = row.last_preview;
    return summary;
  }
}

/** Which project's (or every project's) and whose calls a spend sums. */
function whereOf(filter: SpendFilter): RawBuilder<unknown> {
  const parts = [...(filter.projectId !== undefined ? [sql`project_id = ${filter.projectId}`] : []), ...(filter.ownerId !== undefined ? [sql`owner_id = ${filter.ownerId}`] : [])];
  return parts.length ? sql.join(parts, sql` AND `) : sql`1 = 1`;
}

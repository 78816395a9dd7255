import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
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
  TurnSignal,
  TurnOutcome,
  Usage,
} from './types';
import { isValidConversationId, newConversationId } from './ids';
import {
  assertMarks,
  assertMessage,
  assertVariables,
  cleanCost,
  cleanUsage,
  TitleState,
  decodeCursor,
  duplicateId,
  encodeCursor,
  ftsQuery,
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
import { SCHEMA_VERSION, migrate } from './migrations';
import { isHolderAlive, registerHolder, type LeaseHolder } from './lease';

const CONVERSATION_COLUMNS =
  'id, agent_id, bundle_name, project_id, title, created_at, updated_at, status, last_turn, variables, prompt_tokens, completion_tokens, cached_tokens, cost, model, owner_id, shared';
const SUMMARY_COLUMNS = `${CONVERSATION_COLUMNS}, message_count, last_preview`;

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
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost: number | null;
  model: string | null;
  owner_id: string | null;
  shared: number;
}

interface SummaryRow extends ConversationRow {
  message_count: number;
  last_preview: string | null;
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
}

interface TurnRow {
  id: string;
  active_turn: string | null;
  turn_owner: string | null;
}

// list(): one statement per filter, with and without a cursor; each has an index that serves its
// WHERE and its ORDER BY together (explainList shows which).
const LIST_FILTERS = {
  all: [],
  agent: ['agent_id = @agentId'],
  project: ['project_id = @projectId'],
  projectAgent: ['project_id = @projectId', 'agent_id = @agentId'],
} as const satisfies Record<string, readonly string[]>;
type ListFilter = keyof typeof LIST_FILTERS;
type ListKind = `${ListFilter}:${'first' | 'after'}:${'all' | 'search'}`;

// A search keeps list()'s order and paging; the conversations it may return are those with an
// FTS match on their title or on one of their messages.
const SEARCH_FILTER = `id IN (SELECT conversation_id FROM search_docs WHERE id IN (SELECT rowid FROM search_fts WHERE search_fts MATCH @match))`;

function listSql(kind: ListKind): string {
  const [filter, from, search] = kind.split(':') as [ListFilter, 'first' | 'after', 'all' | 'search'];
  const where = [
    ...LIST_FILTERS[filter],
    ...(from === 'after' ? ['(updated_at, id) < (@updatedAt, @id)'] : []),
    ...(search === 'search' ? [SEARCH_FILTER] : []),
  ];
  return `SELECT ${SUMMARY_COLUMNS} FROM conversations${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
          ORDER BY updated_at DESC, id DESC LIMIT @limit`;
}

const LIST_KINDS = (Object.keys(LIST_FILTERS) as ListFilter[]).flatMap((f): ListKind[] =>
  (['first', 'after'] as const).flatMap((from) => (['all', 'search'] as const).map((q): ListKind => `${f}:${from}:${q}`)),
);

function listKind(options: Pick<ListOptions, 'agentId' | 'projectId'>, withCursor: boolean, search = false): ListKind {
  const byAgent = options.agentId !== undefined;
  const filter: ListFilter = options.projectId !== undefined ? (byAgent ? 'projectAgent' : 'project') : byAgent ? 'agent' : 'all';
  return `${filter}:${withCursor ? 'after' : 'first'}:${search ? 'search' : 'all'}`;
}

const MESSAGES_SQL = `SELECT id, role, content, tool_calls, tool_call_id, name, result, prompt_tokens, completion_tokens,
    cached_tokens, cost, profile, model, compacted, timestamp
  FROM messages WHERE conversation_id = ? ORDER BY seq`;

/** How often a running turn looks for a Stop asked through another process on the same file. */
const STOP_POLL_MS = 500;

export interface SqliteStoreOptions {
  /** How long a writer waits for another process's write lock before failing (ms). */
  busyTimeoutMs?: number;
}

/**
 * Conversations in one SQLite file (better-sqlite3, WAL). Every call is one short transaction,
 * so a crash at any point leaves either the whole change or none of it; WAL with
 * synchronous=NORMAL survives a killed process (a lost power supply may drop the last commits,
 * never corrupt the file).
 */
export class SqliteConversationStore implements ConversationStore {
  readonly file: string;
  private readonly db: Database.Database;
  private readonly holder: LeaseHolder;
  /** Leases this instance holds, so close() can end them. */
  private readonly held = new Map<string, string>();
  private closed = false;

  private readonly stmt: {
    insert: Database.Statement;
    get: Database.Statement<[string], ConversationRow>;
    list: Record<ListKind, Database.Statement<[Record<string, unknown>], SummaryRow>>;
    rename: Database.Statement<[string, string], ConversationRow>;
    delete: Database.Statement<[string]>;
    messages: Database.Statement<[string], MessageRow>;
    touch: Database.Statement<[Record<string, unknown>], { message_count: number }>;
    insertMessage: Database.Statement<[Record<string, unknown>]>;
    setVariables: Database.Statement<[string, string]>;
    addUsage: Database.Statement<[Record<string, unknown>]>;
    setModel: Database.Statement<[string | null, string], ConversationRow>;
    setShared: Database.Statement<[number, string], ConversationRow>;
    compact: Database.Statement<[string, string, string]>;
    begin: Database.Statement<[Record<string, unknown>]>;
    takeOver: Database.Statement<[Record<string, unknown>]>;
    turnOf: Database.Statement<[string], TurnRow>;
    held: Database.Statement<[], TurnRow>;
    end: Database.Statement<[Record<string, unknown>]>;
    seqOf: Database.Statement<[string, string], { seq: number }>;
    titleStateOf: Database.Statement<[string], { title_state: number; message_count: number }>;
    messagesBefore: Database.Statement<[string, number], MessageRow>;
    dropFrom: Database.Statement<[string, number]>;
    truncated: Database.Statement<[Record<string, unknown>]>;
    pending: Database.Statement<[number], { conversation_id: string; seq: number }>;
    unpend: Database.Statement<[string, number]>;
    addDoc: Database.Statement<[string, number | null]>;
    addFts: Database.Statement<[number | bigint, string]>;
    dropTitleDoc: Database.Statement<[string]>;
    dropTitleFts: Database.Statement<[string]>;
    messageText: Database.Statement<[string, number], { content: string | null }>;
    titleText: Database.Statement<[string], { title: string }>;
  };
  private readonly beginTx: (id: string, messages: StoredMessage[]) => TurnLease | null;
  private readonly commitTx: (id: string, batch: TurnBatch) => void;
  private readonly indexTx: Database.Transaction<(max: number) => number>;
  private indexTimer: NodeJS.Timeout | null = null;
  private readonly appendTx: (id: string, message: StoredMessage) => void;
  private readonly truncateTx: (id: string, messageId: string) => number;
  private readonly compactTx: (id: string, marks: CompactionMark[]) => void;

  constructor(file: string, options: SqliteStoreOptions = {}) {
    this.file = file;
    const busy = options.busyTimeoutMs ?? 5000;
    this.db = new Database(file, { timeout: busy });
    try {
      this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busy))}`);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.pragma('foreign_keys = ON');
      // Bounds the -wal file after a checkpoint, so a burst of big tool results does not leave it huge.
      this.db.pragma('journal_size_limit = 67108864');
      migrate(this.db);
    } catch (e) {
      this.db.close();
      throw e;
    }
    this.holder = registerHolder();

    const db = this.db;
    const endSql = `UPDATE conversations SET active_turn = NULL, turn_owner = NULL, turn_started_at = NULL, status = @status, last_turn = @lastTurn
       WHERE id = @id AND active_turn = @token`;
    this.stmt = {
      insert: db.prepare(
        `INSERT INTO conversations (id, agent_id, bundle_name, project_id, title, title_state, created_at, updated_at, model, owner_id)
         VALUES (@id, @agentId, @bundleName, @projectId, @title, @titleState, @now, @now, @model, @ownerId)`,
      ),
      get: db.prepare(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = ?`),
      list: Object.fromEntries(LIST_KINDS.map((k) => [k, db.prepare(listSql(k))])) as Record<ListKind, Database.Statement<[Record<string, unknown>], SummaryRow>>,
      rename: db.prepare(`UPDATE conversations SET title = ?, title_state = 0 WHERE id = ? RETURNING ${CONVERSATION_COLUMNS}`),
      delete: db.prepare('DELETE FROM conversations WHERE id = ?'),
      messages: db.prepare(MESSAGES_SQL),
      // One statement keeps the denormalised count, preview and automatic title in step with the
      // message insert (same transaction), so list() never has to look at messages. SET
      // expressions all see the row as it was, hence the repeated title_state tests.
      touch: db.prepare(
        `UPDATE conversations SET
           message_count = message_count + 1,
           updated_at = @now,
           last_preview = COALESCE(@preview, last_preview),
           title = CASE
             WHEN title_state = 1 AND @userTitle IS NOT NULL THEN @userTitle
             WHEN title_state = 2 AND @workflowTitle IS NOT NULL THEN @workflowTitle
             ELSE title END,
           title_state = CASE
             WHEN title_state = 1 AND @userTitle IS NOT NULL THEN @userState
             WHEN title_state = 2 AND (@workflowTitle IS NOT NULL OR @userTitle IS NOT NULL) THEN 3
             ELSE title_state END
         WHERE id = @id
         RETURNING message_count`,
      ),
      insertMessage: db.prepare(
        `INSERT INTO messages (conversation_id, seq, id, role, content, tool_calls, tool_call_id, name, result,
                               prompt_tokens, completion_tokens, cached_tokens, cost, profile, model, compacted, timestamp)
         VALUES (@conversationId, @seq, @id, @role, @content, @toolCalls, @toolCallId, @name, @result,
                 @promptTokens, @completionTokens, @cachedTokens, @cost, @profile, @model, @compacted, @timestamp)`,
      ),
      setVariables: db.prepare('UPDATE conversations SET variables = ? WHERE id = ?'),
      addUsage: db.prepare(
        `UPDATE conversations SET prompt_tokens = prompt_tokens + @prompt, completion_tokens = completion_tokens + @completion,
           cached_tokens = cached_tokens + @cached, cost = CASE WHEN @cost IS NULL THEN cost ELSE COALESCE(cost, 0) + @cost END
         WHERE id = @id`,
      ),
      setModel: db.prepare(`UPDATE conversations SET model = ? WHERE id = ? RETURNING ${CONVERSATION_COLUMNS}`),
      setShared: db.prepare(`UPDATE conversations SET shared = ? WHERE id = ? RETURNING ${CONVERSATION_COLUMNS}`),
      // (conversation_id, seq) is the key, so this visits one conversation's rows only.
      compact: db.prepare('UPDATE messages SET compacted = ? WHERE conversation_id = ? AND id = ?'),
      // The lock itself: only one writer can turn a NULL active_turn into its token.
      begin: db.prepare(
        `UPDATE conversations SET active_turn = @token, turn_owner = @owner, turn_started_at = @now, status = 'running', last_turn = NULL
         WHERE id = @id AND active_turn IS NULL`,
      ),
      takeOver: db.prepare(
        `UPDATE conversations SET active_turn = @token, turn_owner = @owner, turn_started_at = @now, status = 'running', last_turn = NULL
         WHERE id = @id AND active_turn = @stale`,
      ),
      turnOf: db.prepare('SELECT id, active_turn, turn_owner FROM conversations WHERE id = ?'),
      held: db.prepare('SELECT id, active_turn, turn_owner FROM conversations WHERE active_turn IS NOT NULL'),
      end: db.prepare(endSql),
      seqOf: db.prepare('SELECT seq FROM messages WHERE conversation_id = ? AND id = ? ORDER BY seq LIMIT 1'),
      titleStateOf: db.prepare('SELECT title_state, message_count FROM conversations WHERE id = ?'),
      messagesBefore: db.prepare(`${MESSAGES_SQL.replace('WHERE conversation_id = ?', 'WHERE conversation_id = ? AND seq < ?')}`),
      dropFrom: db.prepare('DELETE FROM messages WHERE conversation_id = ? AND seq >= ?'),
      // The count stays the number of rows, so the next append's seq (count + 1) follows the last kept one.
      truncated: db.prepare(
        `UPDATE conversations SET message_count = message_count - @removed, last_preview = @preview, updated_at = @now,
           title = CASE WHEN title_state = ${TitleState.FIXED} THEN title ELSE @title END,
           title_state = CASE WHEN title_state = ${TitleState.FIXED} THEN title_state ELSE @titleState END
         WHERE id = @id`,
      ),
      pending: db.prepare('SELECT conversation_id, seq FROM search_pending LIMIT ?'),
      unpend: db.prepare('DELETE FROM search_pending WHERE conversation_id = ? AND seq = ?'),
      addDoc: db.prepare('INSERT INTO search_docs (conversation_id, seq) VALUES (?, ?)'),
      addFts: db.prepare('INSERT INTO search_fts (rowid, text) VALUES (?, ?)'),
      dropTitleFts: db.prepare('DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE conversation_id = ? AND seq IS NULL)'),
      dropTitleDoc: db.prepare('DELETE FROM search_docs WHERE conversation_id = ? AND seq IS NULL'),
      messageText: db.prepare('SELECT content FROM messages WHERE conversation_id = ? AND seq = ?'),
      titleText: db.prepare('SELECT title FROM conversations WHERE id = ?'),
    };

    const appendRow = (id: string, m: StoredMessage) => {
      const titles = titleCandidates(m);
      const row = this.stmt.touch.get({
        id,
        now: monotonicNow(),
        preview: messagePreview(m),
        userTitle: titles.userTitle,
        userState: titles.userState,
        workflowTitle: titles.workflowTitle,
      });
      if (!row) throw notFound(id);
      this.stmt.insertMessage.run({
        conversationId: id,
        seq: row.message_count,
        id: m.id,
        role: m.role,
        content: m.role === 'tool' ? null : m.content,
        toolCalls: m.role === 'assistant' && m.toolCalls !== undefined ? JSON.stringify(m.toolCalls) : null,
        toolCallId: m.role === 'tool' ? m.toolCallId : null,
        name: m.role === 'tool' ? m.name : null,
        result: m.role === 'tool' ? JSON.stringify(m.result) : null,
        promptTokens: m.role === 'assistant' && m.usage ? m.usage.promptTokens : null,
        completionTokens: m.role === 'assistant' && m.usage ? m.usage.completionTokens : null,
        cachedTokens: m.role === 'assistant' && m.usage?.cachedTokens !== undefined ? m.usage.cachedTokens : null,
        cost: m.role === 'assistant' && m.cost !== undefined ? m.cost : null,
        profile: m.role === 'assistant' && m.profile !== undefined ? m.profile : null,
        model: m.role === 'assistant' && m.model !== undefined ? m.model : null,
        compacted: m.compacted !== undefined ? JSON.stringify(m.compacted) : null,
        timestamp: m.timestamp,
      });
    };
    this.appendTx = db.transaction(appendRow);

    this.beginTx = db.transaction((id: string, messages: StoredMessage[]): TurnLease | null => {
      const token = randomUUID();
      const args = { id, token, owner: this.holder.tag, now: new Date().toISOString() };
      if (this.stmt.begin.run(args).changes !== 1) {
        const row = this.stmt.turnOf.get(id);
        if (!row) throw notFound(id);
        // The holder died without releasing (another process was killed): take the lock over,
        // conditional on its token so two takers cannot both win.
        if (row.active_turn === null || isHolderAlive(row.turn_owner)) return null;
        if (this.stmt.takeOver.run({ ...args, stale: row.active_turn }).changes !== 1) return null;
      }
      for (const m of messages) appendRow(id, m);
      return { conversationId: id, token };
    });

    this.commitTx = db.transaction((id: string, batch: TurnBatch) => {
      for (const m of batch.messages ?? []) appendRow(id, m);
      if (batch.usage) this.addUsageRow(id, batch.usage.usage, batch.usage.cost);
      if (batch.end) this.release(batch.end.lease, batch.end.outcome);
    });

    // Search rows for what was written since the last batch (see search_pending).
    this.indexTx = db.transaction((max: number): number => {
      const rows = this.stmt.pending.all(max);
      for (const r of rows) {
        if (r.seq < 0) {
          this.stmt.dropTitleFts.run(r.conversation_id);
          this.stmt.dropTitleDoc.run(r.conversation_id);
          const title = this.stmt.titleText.get(r.conversation_id)?.title;
          if (title !== undefined) this.stmt.addFts.run(this.stmt.addDoc.run(r.conversation_id, null).lastInsertRowid, title);
        } else {
          const content = this.stmt.messageText.get(r.conversation_id, r.seq)?.content;
          if (content) this.stmt.addFts.run(this.stmt.addDoc.run(r.conversation_id, r.seq).lastInsertRowid, content);
        }
        this.stmt.unpend.run(r.conversation_id, r.seq);
      }
      return rows.length;
    });

    this.truncateTx = db.transaction((id: string, messageId: string): number => {
      const state = this.stmt.titleStateOf.get(id);
      if (!state) throw notFound(id);
      const at = this.stmt.seqOf.get(id, messageId);
      if (!at) throw unknownMessage(id, messageId);
      const kept = this.stmt.messagesBefore.all(id, at.seq).map(toMessage);
      const removed = this.stmt.dropFrom.run(id, at.seq).changes;
      const title = replayTitle(kept);
      this.stmt.truncated.run({ id, removed, preview: lastPreview(kept), now: monotonicNow(), title: title.title, titleState: title.state });
      return removed;
    });

    this.compactTx = db.transaction((id: string, marks: CompactionMark[]) => {
      for (const mark of marks) {
        if (this.stmt.compact.run(JSON.stringify(mark.compacted), id, mark.messageId).changes !== 1) {
          throw new TypeError(`Cannot compact: conversation "${id}" has no message "${mark.messageId}".`);
        }
      }
    });

    this.interruptAbandonedTurns();
  }

  async create(input: CreateConversationInput): Promise<Conversation> {
    const c = prepareCreate(input, newConversationId);
    const now = monotonicNow();
    try {
      this.stmt.insert.run({
        id: c.id,
        agentId: c.agentId,
        bundleName: c.bundleName,
        projectId: c.projectId ?? null,
        title: c.title,
        titleState: c.titleState,
        now,
        model: c.model ?? null,
        ownerId: c.ownerId ?? null,
      });
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw duplicateId(c.id);
      throw e;
    }
    return freshConversation(c, now);
  }

  async get(id: string): Promise<Conversation | null> {
    if (!isValidConversationId(id)) return null;
    const row = this.stmt.get.get(id);
    return row ? toConversation(row) : null;
  }

  async list(options?: ListOptions): Promise<Page<ConversationSummary>> {
    const limit = pageSize(options);
    const after = options?.cursor ? decodeCursor(options.cursor) : null;
    const search = options?.q !== undefined;
    const terms = searchTerms(options?.q);
    if (search && !terms.length) return { items: [] };
    if (search) this.indexPending();
    const kind = listKind(options ?? {}, after !== null, search);
    // One row more than the page says whether there is a next page without a COUNT.
    const rows = this.stmt.list[kind].all({
      limit: limit + 1,
      ...(search ? { match: ftsQuery(terms) } : {}),
      ...(options?.agentId !== undefined ? { agentId: options.agentId } : {}),
      ...(options?.projectId !== undefined ? { projectId: options.projectId } : {}),
      ...(after ? { updatedAt: after.updatedAt, id: after.id } : {}),
    });
    const page = rows.slice(0, limit);
    const items = page.map(toSummary);
    const last = page[page.length - 1];
    return rows.length > limit && last ? { items, nextCursor: encodeCursor({ updatedAt: last.updated_at, id: last.id }) } : { items };
  }

  async rename(id: string, title: string): Promise<Conversation | null> {
    const t = prepareRename(title);
    if (!isValidConversationId(id)) return null;
    const row = this.stmt.rename.get(t, id);
    return row ? toConversation(row) : null;
  }

  async delete(id: string): Promise<boolean> {
    if (!isValidConversationId(id)) return false;
    this.held.delete(id);
    return this.stmt.delete.run(id).changes === 1;
  }

  async messages(id: string): Promise<StoredMessage[]> {
    if (!isValidConversationId(id)) return [];
    return this.stmt.messages.all(id).map(toMessage);
  }

  async append(id: string, message: StoredMessage): Promise<void> {
    assertMessage(message);
    if (!isValidConversationId(id)) throw notFound(id);
    this.appendTx(id, message);
  }

  async setVariables(id: string, variables: Record<string, string>): Promise<void> {
    assertVariables(variables);
    if (!isValidConversationId(id) || this.stmt.setVariables.run(JSON.stringify(variables), id).changes !== 1) throw notFound(id);
  }

  async addUsage(id: string, usage: Usage, cost?: number): Promise<void> {
    if (!isValidConversationId(id)) throw notFound(id);
    this.addUsageRow(id, usage, cost);
  }

  private addUsageRow(id: string, usage: Usage, cost?: number): void {
    const u = cleanUsage(usage);
    const c = cleanCost(cost);
    if (this.stmt.addUsage.run({ id, prompt: u.promptTokens, completion: u.completionTokens, cached: u.cachedTokens, cost: c ?? null }).changes !== 1) {
      throw notFound(id);
    }
  }

  async commit(id: string, batch: TurnBatch): Promise<void> {
    batch.messages?.forEach(assertMessage);
    if (!isValidConversationId(id)) throw notFound(id);
    if (batch.usage) {
      cleanUsage(batch.usage.usage);
      cleanCost(batch.usage.cost);
    }
    this.commitTx(id, batch);
    if (batch.end) this.indexSoon();
  }

  /**
   * Indexes for search what was written since the last time, in batches of 500 rows: shortly
   * after a turn ends (never on its path) and before every search, so results stay complete.
   */
  indexPending(): void {
    if (this.indexTimer) {
      clearTimeout(this.indexTimer);
      this.indexTimer = null;
    }
    if (this.closed) return;
    // IMMEDIATE: it reads, then writes; another process indexing at once waits instead of failing.
    while (this.indexTx.immediate(500) === 500);
  }

  private indexSoon(): void {
    if (this.indexTimer || this.closed) return;
    this.indexTimer = setTimeout(() => {
      this.indexTimer = null;
      try {
        this.indexPending();
      } catch {
        // A busy database or a closed store: the next search indexes what is left.
      }
    }, 250);
    this.indexTimer.unref();
  }

  async setModel(id: string, model: string | null): Promise<Conversation | null> {
    const m = prepareModel(model);
    if (!isValidConversationId(id)) return null;
    const row = this.stmt.setModel.get(m, id);
    return row ? toConversation(row) : null;
  }

  async setShared(id: string, shared: boolean): Promise<Conversation | null> {
    if (!isValidConversationId(id)) return null;
    const row = this.stmt.setShared.get(shared ? 1 : 0, id);
    return row ? toConversation(row) : null;
  }

  async compact(id: string, marks: CompactionMark[]): Promise<void> {
    assertMarks(marks);
    if (!isValidConversationId(id) || !this.stmt.get.get(id)) throw notFound(id);
    this.compactTx(id, marks);
  }

  async beginTurn(id: string, messages: StoredMessage[] = []): Promise<TurnLease | null> {
    messages.forEach(assertMessage);
    if (!isValidConversationId(id)) throw notFound(id);
    const lease = this.beginTx(id, messages);
    if (lease) this.held.set(id, lease.token);
    return lease;
  }

  async endTurn(lease: TurnLease, outcome: TurnOutcome): Promise<void> {
    this.release(lease, outcome);
    this.indexSoon();
  }

  async truncateFrom(id: string, messageId: string): Promise<number> {
    if (!isValidConversationId(id)) throw notFound(id);
    if (typeof messageId !== 'string' || !messageId) throw unknownMessage(id, String(messageId));
    return this.truncateTx(id, messageId);
  }

  /** Ends this instance's turns as interrupted and closes the file; later calls are no-ops. */
  async close(): Promise<void> {
    // All in one go, no await: a call that comes in meanwhile cannot take a turn close() misses.
    if (this.closed) return;
    if (this.indexTimer) clearTimeout(this.indexTimer);
    this.indexTimer = null;
    for (const [conversationId, token] of this.held) this.release({ conversationId, token }, 'interrupted');
    this.held.clear();
    this.closed = true;
    this.holder.release();
    this.db.close();
  }

  async requestStop(id: string): Promise<boolean> {
    if (!isValidConversationId(id)) throw notFound(id);
    const row = this.stops.request.get(id);
    if (!row || !isHolderAlive(row.turn_owner)) {
      if (!this.stmt.get.get(id)) throw notFound(id);
      return false;
    }
    // A turn of this instance stops at once; one of another process on this file sees it on its next poll.
    this.stopWatchers.get(row.active_turn)?.('stop');
    return true;
  }

  watchTurn(lease: TurnLease, on: (signal: TurnSignal) => void): () => void {
    const once = onceSignal(on, () => end());
    // Another process may run the Stop route on this file: a cheap indexed read every half second.
    const timer = setInterval(() => {
      if (this.closed) return end();
      if (this.stops.asked.get(lease.conversationId, lease.token)) once('stop');
    }, STOP_POLL_MS);
    timer.unref?.();
    const end = () => {
      clearInterval(timer);
      if (this.stopWatchers.get(lease.token) === once) this.stopWatchers.delete(lease.token);
    };
    this.stopWatchers.set(lease.token, once);
    if (!this.closed && this.stops.asked.get(lease.conversationId, lease.token)) queueMicrotask(() => once('stop'));
    return end;
  }

  async health(): Promise<StoreHealth> {
    const applied = this.closed ? 0 : (this.db.pragma('user_version', { simple: true }) as number);
    return { kind: 'sqlite', ok: !this.closed, migrations: { applied, latest: SCHEMA_VERSION, current: applied === SCHEMA_VERSION } };
  }

  private readonly stopWatchers = new Map<string, (signal: TurnSignal) => void>();
  private stopStatements?: { request: Database.Statement<[string], { active_turn: string; turn_owner: string | null }>; asked: Database.Statement<[string, string], { x: number }> };
  private get stops() {
    this.stopStatements ??= {
      request: this.db.prepare('UPDATE conversations SET stop_turn = active_turn WHERE id = ? AND active_turn IS NOT NULL RETURNING active_turn, turn_owner'),
      asked: this.db.prepare('SELECT 1 AS x FROM conversations WHERE id = ? AND stop_turn = ?'),
    };
    return this.stopStatements;
  }

  private release(lease: TurnLease, outcome: TurnOutcome): void {
    if (this.closed || !isValidConversationId(lease.conversationId)) return;
    const { changes } = this.stmt.end.run({ id: lease.conversationId, token: lease.token, ...endArgs(outcome) });
    if (changes === 1 || this.held.get(lease.conversationId) === lease.token) this.held.delete(lease.conversationId);
  }

  /** EXPLAIN QUERY PLAN details of the statement list(options) runs; for tests and diagnostics. */
  explainList(options: Pick<ListOptions, 'agentId' | 'projectId'> & { withCursor?: boolean; search?: boolean } = {}): string[] {
    const sql = listSql(listKind(options, options.withCursor === true, options.search === true));
    const params: Record<string, unknown> = { limit: 21, agentId: options.agentId, projectId: options.projectId, updatedAt: '', id: '', match: '"x"*' };
    const used = Object.fromEntries(Object.entries(params).filter(([k]) => sql.includes(`@${k}`)));
    return this.explain(sql, used);
  }

  /** EXPLAIN QUERY PLAN details of messages(id). */
  explainMessages(): string[] {
    return this.explain(MESSAGES_SQL, 'x');
  }

  private explain(sql: string, params: unknown): string[] {
    const rows = this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[];
    return rows.map((r) => r.detail);
  }

  /** Turns whose holder is gone (the process was killed mid-turn) become interrupted, unlocked. */
  private interruptAbandonedTurns(): void {
    for (const row of this.stmt.held.all()) {
      if (row.active_turn !== null && !isHolderAlive(row.turn_owner)) {
        this.stmt.end.run({ id: row.id, token: row.active_turn, ...endArgs('interrupted') });
      }
    }
  }
}

function endArgs(outcome: TurnOutcome): { status: string; lastTurn: string | null } {
  const { status, lastTurn } = settleTurn(outcome, new Date().toISOString());
  return { status, lastTurn: lastTurn ? JSON.stringify(lastTurn) : null };
}

function toConversation(row: ConversationRow): Conversation {
  return {
    id: row.id,
    agentId: row.agent_id,
    bundleName: row.bundle_name,
    ...(row.project_id !== null ? { projectId: row.project_id } : {}),
    title: row.title,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    status: row.status,
    ...(row.last_turn !== null ? { lastTurn: JSON.parse(row.last_turn) as LastTurn } : {}),
    variables: JSON.parse(row.variables) as Record<string, string>,
    usage: { promptTokens: row.prompt_tokens, completionTokens: row.completion_tokens, cachedTokens: row.cached_tokens },
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
    default:
      return { id: row.id, role: row.role, content: row.content ?? '', timestamp: row.timestamp };
  }
}

import { randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { sql } from 'kysely';
import type { Compaction, ConversationStatus, StoredMessage, TurnLease, TurnSignal } from './types';
import { foldText } from './internal';
import { conversationDatabase } from './database';
import { SqlConversationStore, type ConversationRow, type StoreDialect, type TurnLocks } from './sql-store';
import type { AppDatabase } from '../db/database';
import type { PostgresDatabase } from '../db/store-database';
import { text } from '../db/text';
import type { Db } from '../db/postgres';
import { log } from '../../core/log';

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

interface PgRow extends ConversationRow {
  /** When the turn lease ends, and whether it is still live (by the database's clock). */
  lease_expires: Date | null;
  lease_live: boolean | null;
}

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


interface MessageRow {
  body: string;
  compacted: string | null;
  author_id: string | null;
  author_name: string | null;
}

function toMessage(row: MessageRow): StoredMessage {
  const m = JSON.parse(row.body) as StoredMessage;
  if (row.compacted !== null) m.compacted = JSON.parse(row.compacted) as Compaction;
  if (m.role === 'user' && row.author_id !== null) m.author = { id: row.author_id, name: row.author_name ?? '' };
  return m;
}

/** A tsvector of a text's words, as a value. */
function tsvector(words: string[] | null) {
  return sql`array_to_tsvector(CAST(${words} AS text[]))`;
}

/**
 * The turn lock is a lease row: taken in one INSERT … ON CONFLICT that only replaces an expired
 * lease, renewed while the turn runs, deleted when it ends. A Stop is written onto the lease;
 * the holder hears it by NOTIFY at once, or on its next heartbeat (every pollMs) where
 * notifications do not arrive (transaction-mode poolers). Times are the database's clock, so
 * instances on hosts with skewed clocks agree on expiry.
 */
class PgTurnLocks implements TurnLocks {
  readonly holderId = `${os.hostname()}/${process.pid}/${randomUUID()}`;
  private held: ReadonlyMap<string, string> = new Map();
  private fire: (token: string, signal: TurnSignal) => void = () => undefined;
  private timer: NodeJS.Timeout | null = null;
  private beating = false;
  private listener: pg.Client | null = null;
  private listening: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly database: AppDatabase,
    private readonly leaseMs: number,
    private readonly pollMs: number,
    private readonly listens: boolean,
  ) {}

  async take(tx: Db, id: string, token: string): Promise<'taken' | 'busy' | 'missing'> {
    // A new lease row, or an expired one replaced; a live lease (another instance's running
    // turn) makes the conflict clause change nothing.
    const { rows } = await sql`INSERT INTO turn_leases (conversation_id, token, holder, started_at, heartbeat_at, expires_at)
        SELECT ${id}, ${token}, ${this.holderId}, now(), now(), now() + ${this.leaseMs}::int * interval '1 millisecond'
        WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ${id})
        ON CONFLICT (conversation_id) DO UPDATE SET token = excluded.token, holder = excluded.holder, started_at = excluded.started_at,
          heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at, stop_requested_at = NULL
        WHERE turn_leases.expires_at <= now()
        RETURNING conversation_id`.execute(tx);
    if (!rows.length) {
      const { rows: exists } = await sql`SELECT 1 AS x FROM conversations WHERE id = ${id}`.execute(tx);
      return exists.length ? 'busy' : 'missing';
    }
    await sql`UPDATE conversations SET status = 'running', last_turn = NULL WHERE id = ${id}`.execute(tx);
    return 'taken';
  }

  async release(q: Db, lease: TurnLease, status: ConversationStatus, lastTurn: string | null): Promise<void> {
    await sql`WITH gone AS (DELETE FROM turn_leases WHERE conversation_id = ${lease.conversationId} AND token = ${text(String(lease.token))} RETURNING conversation_id)
        UPDATE conversations SET status = ${status}, last_turn = ${lastTurn} WHERE id IN (SELECT conversation_id FROM gone)`.execute(q);
  }

  async requestStop(q: Db, id: string): Promise<string | null> {
    // The notification goes out when the statement commits; the holder's heartbeat reads the
    // same row, so a lost notification only delays the Stop to the next beat.
    const { rows } = await sql<{ token: string }>`WITH s AS (UPDATE turn_leases SET stop_requested_at = now() WHERE conversation_id = ${id} AND expires_at > now() RETURNING token)
        SELECT token, pg_notify(${STOP_CHANNEL}, token) FROM s`.execute(q);
    return rows[0]?.token ?? null;
  }

  start(held: ReadonlyMap<string, string>, fire: (token: string, signal: TurnSignal) => void): void {
    this.held = held;
    this.fire = fire;
  }

  /**
   * The heartbeat starts once the lease is in the held map, never from inside the transaction
   * that takes it: a beat in between would find nothing held and stop for good.
   */
  acquired(): void {
    this.startHeartbeat();
  }

  watching(): void {
    void this.listen();
  }

  unwatch(): void {}

  async recover(): Promise<void> {
    // Nothing to write: a lease whose holder died expires, and reads show it interrupted.
  }

  abandonedSince(row: PgRow): string | null {
    return row.lease_live === true ? null : (row.lease_expires ?? new Date(row.updated_at)).toISOString();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopHeartbeat();
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
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
          WHERE token = ANY(${tokens}::text[]) RETURNING token, stop_requested_at IS NOT NULL AS stop`.execute(this.database.db);
      const renewed = new Map(rows.map((r) => [r.token, r.stop]));
      for (const token of tokens) {
        const stop = renewed.get(token);
        if (stop) this.fire(token, 'stop');
        // Gone while still held here: it expired (this process stalled longer than the lease)
        // and another instance took the conversation, or the conversation was deleted.
        else if (stop === undefined && [...this.held.values()].includes(token)) this.fire(token, 'lost');
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
      await this.database.ready();
      const client = new pg.Client({ connectionString: this.database.url! });
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

/**
 * Conversations in Postgres, for several instances on one database: the SQL store with
 * Postgres's search (tsvector + GIN, the words indexed as the other stores split them) and its
 * turn lease rows (see PgTurnLocks).
 */
export class PgConversationStore extends SqlConversationStore<PgRow> {
  readonly holderId: string;

  /** On the Postgres database `where` (its URL, or the stores' database there). */
  constructor(where: string | PostgresDatabase, options: PgStoreOptions = {}) {
    const leaseMs = Math.max(200, Math.min(DEFAULT_TURN_LEASE_MS, Math.floor(options.leaseMs ?? DEFAULT_TURN_LEASE_MS)));
    const pollMs = Math.max(20, Math.min(options.pollMs ?? DEFAULT_POLL_MS, Math.floor(leaseMs / 3)));
    const database = (typeof where === 'string' ? conversationDatabase({ url: where }) : where).open({ poolSize: options.poolSize });
    const locks = new PgTurnLocks(database, leaseMs, pollMs, options.listen !== false);
    const dialect: StoreDialect<PgRow> = {
      kind: 'postgres',
      from: sql`conversations c LEFT JOIN turn_leases l ON l.conversation_id = c.id`,
      lockColumns: sql`l.expires_at AS lease_expires, l.expires_at > now() AS lease_live`,
      abandonedSince: (row) => locks.abandonedSince(row),
      bool: (value) => value,
      forUpdate: sql`FOR UPDATE`,
      messageValues: (m) => ({
        id: text(m.id),
        role: m.role,
        body: messageBody(m),
        compacted: m.compacted !== undefined ? JSON.stringify(m.compacted) : null,
        author_id: m.role === 'user' && m.author ? text(m.author.id) : null,
        author_name: m.role === 'user' && m.author ? text(m.author.name) : null,
        search: tsvector(m.role === 'user' || m.role === 'assistant' ? indexWords(m.content) : null),
      }),
      messageColumns: sql`body, compacted, author_id, author_name`,
      toMessage: (row) => toMessage(row as unknown as MessageRow),
      titleIndex: (title) => tsvector(indexWords(title)),
      // Every word in one message or in the title, as in the SQLite store's FTS rows.
      searchFilter: (terms) =>
        sql`c.id IN (SELECT conversation_id FROM messages WHERE search @@ CAST(${prefixQuery(terms)} AS tsquery)
                     UNION SELECT id FROM conversations WHERE title_search @@ CAST(${prefixQuery(terms)} AS tsquery))`,
      beforeSearch: async () => undefined,
      afterTurn: () => undefined,
      locks,
    };
    super(database, dialect);
    this.holderId = locks.holderId;
  }
}

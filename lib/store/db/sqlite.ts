import Database from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely';
import type { Db } from './postgres';

export interface SqliteOptions {
  /** How long a writer waits for another process's write lock before failing (ms). */
  busyTimeoutMs?: number;
}

// Statements the store runs are few and fixed; texts that vary (an IN list of some length) are
// rare. Past this many, the oldest prepared statement is dropped.
const MAX_PREPARED = 500;

/**
 * better-sqlite3 as Kysely sees it, with its prepared statements kept: Kysely prepares every
 * query it runs, and preparing costs more than running the short statements a turn makes.
 */
function preparedOnce(raw: Database.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => raw.close(),
    prepare(text: string): SqliteStatement {
      let stmt = cache.get(text);
      if (stmt) {
        // Most recently used last, so the first entry is the one to drop.
        cache.delete(text);
      } else {
        stmt = raw.prepare(text) as unknown as SqliteStatement;
        if (cache.size >= MAX_PREPARED) cache.delete(cache.keys().next().value as string);
      }
      cache.set(text, stmt);
      return stmt;
    },
  };
}

/**
 * Kysely's SQLite driver with two changes:
 * - Transactions begin IMMEDIATE: the write lock is taken before the first read, so a
 *   transaction that reads, then writes, waits for another process's writer (busy_timeout)
 *   instead of failing when that writer committed in between, as a deferred one would.
 * - The one connection is handed to waiters in turn, first come first served. Kysely's own mutex
 *   wakes every waiter on each release and all but one wait again: quadratic in the queries
 *   waiting, which held the event loop for seconds with a few thousand queued.
 */
class ImmediateDriver extends SqliteDriver {
  private connection: DatabaseConnection | null = null;
  private busy = false;
  private waiters: (() => void)[] = [];
  private head = 0;

  override async init(): Promise<void> {
    await super.init();
    // Taken once and kept: from here on this class decides who holds the connection.
    this.connection = await super.acquireConnection();
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    // Woken by release, the connection is already ours: release hands it over without freeing it.
    if (this.busy) await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.busy = true;
    return this.connection!;
  }

  override async releaseConnection(): Promise<void> {
    if (this.head < this.waiters.length) {
      const next = this.waiters[this.head++]!;
      if (this.head > 1024 && this.head * 2 > this.waiters.length) {
        this.waiters = this.waiters.slice(this.head);
        this.head = 0;
      }
      next();
    } else {
      this.waiters = [];
      this.head = 0;
      this.busy = false;
    }
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** SQLite's DDL is transactional: a migration commits whole or not at all, under the write lock above. */
class TransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class AppSqliteDialect extends SqliteDialect {
  constructor(private readonly database: SqliteDatabase) {
    super({ database });
  }
  override createDriver(): Driver {
    return new ImmediateDriver({ database: this.database });
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlAdapter();
  }
}

/**
 * One SQLite file (WAL, synchronous=NORMAL, foreign keys on) with a Kysely instance over it.
 * `raw` is the same connection, for what Kysely does not do (pragmas, the schema's first
 * history). WAL with synchronous=NORMAL survives a killed process; a lost power supply may drop
 * the last commits, never corrupt the file.
 */
export function openSqlite(file: string, options: SqliteOptions = {}): { db: Db; raw: Database.Database } {
  const busy = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000));
  const raw = new Database(file, { timeout: busy });
  try {
    raw.pragma(`busy_timeout = ${busy}`);
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.pragma('foreign_keys = ON');
    // Bounds the -wal file after a checkpoint, so a burst of big tool results does not leave it huge.
    raw.pragma('journal_size_limit = 67108864');
  } catch (e) {
    raw.close();
    throw e;
  }
  return { db: new Kysely({ dialect: new AppSqliteDialect(preparedOnce(raw)) }), raw };
}

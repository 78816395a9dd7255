import path from 'node:path';
import type Database from 'better-sqlite3';
import { sql } from 'kysely';
import type pg from 'pg';
import { migratePostgres, migrateSqlite, migrationStatus, type MigrationStatus } from './migrate';
import type { SqlDialect } from './migrations';
import { openPostgres, type Db } from './postgres';
import { openSqlite } from './sqlite';
import { log } from '../../core/log';

export type DatabaseTarget =
  | {
      /** An SQLite file; created when missing. */
      file: string;
      busyTimeoutMs?: number;
      /**
       * Run on the raw connection before the migrations here: the history an SQLite file had
       * before this migration table existed (its owner brings the file up to where it starts).
       */
      base?: (raw: Database.Database) => void;
    }
  | { url: string; poolSize?: number };

export interface DatabaseHealth {
  ok: boolean;
  migrations: MigrationStatus;
}

/** One open database: a Postgres pool, or an SQLite connection every opener in this process shares. */
interface Connection {
  dialect: SqlDialect;
  db: Db;
  pool: pg.Pool | null;
  url: string | null;
  raw: Database.Database | null;
  attempt: Promise<void>;
  failedAt: number | null;
  bases: Set<(raw: Database.Database) => void>;
  users: number;
  key: string | null;
}

// SQLite files open in this process, by absolute path. Every store on one file shares one
// connection: a transaction spans awaits, and a second connection's write in the middle would
// wait for the lock synchronously, holding the event loop the first needs to commit (it fails
// after busy_timeout). Kept on globalThis so that a dev-mode module reload shares them too.
const OPEN_KEY = Symbol.for('bmad-orchestrator.db.openSqlite');
const openFiles: Map<string, Connection> = ((globalThis as Record<symbol, unknown>)[OPEN_KEY] ??= new Map<string, Connection>()) as Map<string, Connection>;

function migrate(c: Connection): Promise<void> {
  const attempt = (c.dialect === 'postgres' ? migratePostgres(c.db, c.pool!) : migrateSqlite(c.db)).then(() => {
    c.failedAt = null;
  });
  // Callers see the failure through ready(); it must not also be an unhandled rejection.
  attempt.catch((e: unknown) => {
    c.failedAt = Date.now();
    log.error('db.migrate_failed', { dialect: c.dialect, message: String((e as Error)?.message ?? e).slice(0, 300) });
  });
  return attempt;
}

function connect(target: DatabaseTarget): Connection {
  if ('url' in target) {
    const { db, pool } = openPostgres(target.url, { poolSize: target.poolSize });
    const c: Connection = { dialect: 'postgres', db, pool, url: target.url, raw: null, attempt: Promise.resolve(), failedAt: null, bases: new Set(), users: 1, key: null };
    c.attempt = migrate(c);
    return c;
  }
  const key = path.resolve(target.file);
  let c = openFiles.get(key);
  if (!c) {
    const { db, raw } = openSqlite(target.file, { busyTimeoutMs: target.busyTimeoutMs });
    c = { dialect: 'sqlite', db, pool: null, url: null, raw, attempt: Promise.resolve(), failedAt: null, bases: new Set(), users: 0, key };
    try {
      if (target.base) target.base(raw);
    } catch (e) {
      raw.close();
      throw e;
    }
    if (target.base) c.bases.add(target.base);
    c.attempt = migrate(c);
    openFiles.set(key, c);
  } else if (target.base && !c.bases.has(target.base)) {
    // Opened first by a user that does not know this history (accounts): it runs holding the
    // connection, so never inside another opener's transaction, then the migrations after it
    // again (they find nothing left to do, or what depended on it).
    const base = target.base;
    const conn = c;
    c.bases.add(base);
    c.attempt = c.attempt
      .catch(() => undefined)
      .then(() => conn.db.connection().execute(async () => base(conn.raw!)))
      .then(
        () => migrate(conn),
        (e: unknown) => {
          conn.bases.delete(base);
          throw e;
        },
      );
    c.attempt.catch(() => undefined);
  }
  c.users++;
  return c;
}

/**
 * One database for the stores, either dialect, behind one Kysely instance. Postgres migrates in
 * the background (calls wait for `ready()`, which tries again, at most once a second, after a
 * failure, so a database that comes up late is used once it is there). An SQLite file's first
 * history (`base`) runs before the constructor returns, so a broken or newer file fails at once;
 * the migrations after it run as Postgres's do. Each opener has its own handle and closes it;
 * an SQLite file's one connection closes with its last handle.
 */
export class AppDatabase {
  private readonly c: Connection;
  private closed = false;

  constructor(target: DatabaseTarget) {
    this.c = connect(target);
  }

  get dialect(): SqlDialect {
    return this.c.dialect;
  }
  get db(): Db {
    return this.c.db;
  }
  /** Postgres only: the URL (a LISTEN connection is opened apart from the pool). */
  get url(): string | null {
    return this.c.url;
  }
  /** SQLite only: the same connection Kysely uses, for what Kysely does not do. */
  get raw(): Database.Database | null {
    return this.c.raw;
  }

  /** Resolves once the schema is current. */
  ready(): Promise<void> {
    const c = this.c;
    if (c.failedAt !== null && Date.now() - c.failedAt > 1000 && !this.closed) {
      c.failedAt = null;
      c.attempt = migrate(c);
    }
    return c.attempt;
  }

  /** Reachable, and the schema current: one round trip (and the migration table's names). */
  async health(): Promise<DatabaseHealth> {
    const down: DatabaseHealth = { ok: false, migrations: { applied: 0, latest: 0, current: false } };
    if (this.closed) return down;
    try {
      await this.ready();
      await sql`SELECT 1`.execute(this.db);
      return { ok: true, migrations: await migrationStatus(this.db, this.dialect) };
    } catch {
      try {
        return { ...down, migrations: await migrationStatus(this.db, this.dialect) };
      } catch {
        return down;
      }
    }
  }

  /** Lets go of the database; the pool or file closes once migrations settled and no handle is left. Later calls are no-ops. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const c = this.c;
    if (--c.users > 0) return;
    if (c.key !== null && openFiles.get(c.key) === c) openFiles.delete(c.key);
    await c.attempt.catch(() => undefined);
    await c.db.destroy();
  }
}

import type Database from 'better-sqlite3';
import { sql } from 'kysely';
import type pg from 'pg';
import { migratePostgres, migrateSqlite, migrationStatus, type MigrationStatus } from './migrate';
import type { SqlDialect } from './migrations';
import { openPostgres, type Db } from './postgres';
import { openSqlite } from './sqlite';
import { log } from '../log';

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

/**
 * One database for the stores, either dialect, behind one Kysely instance. Postgres migrates in
 * the background (calls wait for `ready()`, which tries again, at most once a second, after a
 * failure, so a database that comes up late is used once it is there). An SQLite file's first
 * history (`base`) runs before the constructor returns, so a broken or newer file fails at once;
 * the migrations after it run as Postgres's do.
 */
export class AppDatabase {
  readonly dialect: SqlDialect;
  readonly db: Db;
  /** Postgres only: the URL and pool (a LISTEN connection is opened apart from the pool). */
  readonly url: string | null = null;
  readonly pool: pg.Pool | null = null;
  /** SQLite only: the same connection Kysely uses, for what Kysely does not do. */
  readonly raw: Database.Database | null = null;
  private attempt: Promise<void>;
  private failedAt: number | null = null;
  private closed = false;

  constructor(target: DatabaseTarget) {
    if ('url' in target) {
      const { db, pool } = openPostgres(target.url, { poolSize: target.poolSize });
      this.dialect = 'postgres';
      this.db = db;
      this.pool = pool;
      this.url = target.url;
      this.attempt = this.migrate();
      return;
    }
    const { db, raw } = openSqlite(target.file, { busyTimeoutMs: target.busyTimeoutMs });
    this.dialect = 'sqlite';
    this.db = db;
    this.raw = raw;
    try {
      target.base?.(raw);
    } catch (e) {
      raw.close();
      throw e;
    }
    this.attempt = this.migrate();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private migrate(): Promise<void> {
    const attempt = (this.dialect === 'postgres' ? migratePostgres(this.db, this.pool!) : migrateSqlite(this.db)).then(() => {
      this.failedAt = null;
    });
    // Callers see the failure through ready(); it must not also be an unhandled rejection.
    attempt.catch((e: unknown) => {
      this.failedAt = Date.now();
      log.error('db.migrate_failed', { dialect: this.dialect, message: String((e as Error)?.message ?? e).slice(0, 300) });
    });
    return attempt;
  }

  /** Resolves once the schema is current. */
  ready(): Promise<void> {
    if (this.failedAt !== null && Date.now() - this.failedAt > 1000 && !this.closed) {
      this.failedAt = null;
      this.attempt = this.migrate();
    }
    return this.attempt;
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

  /** Closes the pool or file once migrations settled; later calls are no-ops. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.attempt.catch(() => undefined);
    await this.db.destroy();
  }
}

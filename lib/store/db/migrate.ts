import { Migrator, type Migration } from 'kysely';
import type pg from 'pg';
import { CodeMigrationProvider, MIGRATIONS, type SqlDialect } from './migrations';
import type { Db } from './postgres';
import { log } from '../../core/log';

export const MIGRATION_TABLE = 'app_migrations';
export const MIGRATION_LOCK_TABLE = 'app_migrations_lock';

// One number for the whole app: pg_advisory_lock keys are per database, so this only has to
// differ from other advisory locks the app takes.
const MIGRATION_LOCK_KEY = 7_420_001;

function migrator(db: Db, migrations: Readonly<Record<string, Migration>>): Migrator {
  return new Migrator({ db, provider: new CodeMigrationProvider(migrations), migrationTableName: MIGRATION_TABLE, migrationLockTableName: MIGRATION_LOCK_TABLE });
}

export interface MigrationStatus {
  /** Migrations this database has run, and those this code knows. */
  applied: number;
  latest: number;
  current: boolean;
}

async function runMigrations(db: Db, dialect: SqlDialect): Promise<string[]> {
  const { error, results } = await migrator(db, MIGRATIONS[dialect]).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  const applied = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  if (applied.length) log.info('db.migrated', { dialect, applied: applied.length, names: applied.join(',') });
  return applied;
}

/**
 * Brings a Postgres database to the latest schema. Instances starting together on an empty
 * database queue on a session advisory lock first: Kysely's own lock table has to be created
 * before it can lock anything, and two concurrent CREATE TABLE IF NOT EXISTS can both fail. The
 * first instance migrates; the others find nothing left to do. Resolves with the names this call ran.
 */
export async function migratePostgres(db: Db, pool: pg.Pool): Promise<string[]> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      return await runMigrations(db, 'postgres');
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}

/**
 * Brings an SQLite file to the latest schema: one transaction begun IMMEDIATE (see lib/store/db/sqlite),
 * so a second process opening the file at once waits for the first and then finds nothing to do.
 */
export function migrateSqlite(db: Db): Promise<string[]> {
  return runMigrations(db, 'sqlite');
}

/** What the database has run of the migrations this code knows: one small query (health checks call it often). */
export async function migrationStatus(db: Db, dialect: SqlDialect = 'postgres'): Promise<MigrationStatus> {
  const known = Object.keys(MIGRATIONS[dialect]);
  let ran: string[] = [];
  if (known.length) {
    try {
      ran = (await db.selectFrom(MIGRATION_TABLE).select('name').execute()).map((r: { name: string }) => r.name);
    } catch (e) {
      // No migration table yet: nothing ran (Postgres says 42P01, SQLite says so in words).
      const code = (e as { code?: string }).code;
      if (code !== '42P01' && !/no such table/i.test(String((e as Error)?.message))) throw e;
    }
  }
  const applied = known.filter((name) => ran.includes(name)).length;
  return { applied, latest: known.length, current: applied === known.length };
}

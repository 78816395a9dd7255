import { Migrator } from 'kysely';
import type pg from 'pg';
import { CodeMigrationProvider, POSTGRES_MIGRATIONS } from './migrations';
import type { Db } from './postgres';
import { log } from '../log';

export const MIGRATION_TABLE = 'app_migrations';
export const MIGRATION_LOCK_TABLE = 'app_migrations_lock';

// One number for the whole app: pg_advisory_lock keys are per database, so this only has to
// differ from other advisory locks the app takes.
const MIGRATION_LOCK_KEY = 7_420_001;

function migrator(db: Db): Migrator {
  return new Migrator({ db, provider: new CodeMigrationProvider(), migrationTableName: MIGRATION_TABLE, migrationLockTableName: MIGRATION_LOCK_TABLE });
}

export interface MigrationStatus {
  /** Migrations this database has run, and those this code knows. */
  applied: number;
  latest: number;
  current: boolean;
}

/**
 * Brings the database to the latest schema. Instances starting together on an empty database
 * queue on a session advisory lock first: Kysely's own lock table has to be created before it
 * can lock anything, and two concurrent CREATE TABLE IF NOT EXISTS can both fail. The first
 * instance migrates; the others find nothing left to do. Resolves with the names this call ran.
 */
export async function migratePostgres(db: Db, pool: pg.Pool): Promise<string[]> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const { error, results } = await migrator(db).migrateToLatest();
      if (error) throw error instanceof Error ? error : new Error(String(error));
      const applied = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
      if (applied.length) log.info('db.migrated', { applied: applied.length, names: applied.join(',') });
      return applied;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}

/** What the database has run of the migrations this code knows: one small query (health checks call it often). */
export async function migrationStatus(db: Db): Promise<MigrationStatus> {
  const known = Object.keys(POSTGRES_MIGRATIONS);
  let ran: string[] = [];
  try {
    ran = (await db.selectFrom(MIGRATION_TABLE).select('name').execute()).map((r: { name: string }) => r.name);
  } catch (e) {
    // No migration table yet: nothing ran.
    if ((e as { code?: string }).code !== '42P01') throw e;
  }
  const applied = known.filter((name) => ran.includes(name)).length;
  return { applied, latest: known.length, current: applied === known.length };
}

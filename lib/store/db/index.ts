import { migratePostgres } from './migrate';
import { openPostgres } from './postgres';

export { openPostgres, isPostgresUrl, type Db } from './postgres';
export { openSqlite } from './sqlite';
export { AppDatabase, type DatabaseTarget, type DatabaseHealth } from './database';
export { migratePostgres, migrationStatus, type MigrationStatus } from './migrate';
export { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS, type SqlDialect } from './migrations';
export { DATABASE_FILE, openDatabase, storeDatabase, type StoreDatabase, type SqliteDatabase, type PostgresDatabase, type SqlStoreDatabase, type StoreTarget, type FirstHistory, type DatabaseSettings } from './store-database';
export { registerHolder, isHolderAlive, isHolderOnThisHost, encodeHolder, processStartTime, type LeaseHolder, type HolderIdentity } from './lease';
export { text } from './text';

/** Brings the database at `url` to the latest schema on a pool of its own, closed after. */
export async function migrateDatabase(url: string): Promise<{ applied: string[] } | { error: string }> {
  const { db, pool } = openPostgres(url, { poolSize: 2 });
  try {
    return { applied: await migratePostgres(db, pool) };
  } catch (e) {
    return { error: String((e as Error)?.message ?? e).slice(0, 300) };
  } finally {
    await db.destroy();
  }
}

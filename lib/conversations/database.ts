import { AppDatabase } from '../db/database';
import { migrate as migrateFirstHistory } from './migrations';

/**
 * The database the stores share: an SQLite file (brought through its first, numbered history
 * here, since that history replays conversation titles) or Postgres. Each store opens its own
 * handle; the migrations are locked, so handles opening together migrate once.
 */
export function openStoreDatabase(target: { file: string; busyTimeoutMs?: number } | { url: string; poolSize?: number }): AppDatabase {
  return new AppDatabase('file' in target ? { ...target, base: migrateFirstHistory } : target);
}

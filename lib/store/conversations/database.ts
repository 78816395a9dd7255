import type Database from 'better-sqlite3';
import { storeDatabase, type PostgresDatabase, type SqliteDatabase, type SqlStoreDatabase, type StoreTarget } from '../db/store-database';
import { migrate } from './migrations';

/**
 * The SQLite file's first, numbered history, written by the conversations before the migration
 * table existed (it replays conversation titles, so it lives with them); whoever opens the
 * stores' database passes it on.
 */
export const conversationHistory: (raw: Database.Database) => void = migrate;

/** The stores' database at `target`, brought through the conversations' first history. */
export function conversationDatabase(target: { file: string; busyTimeoutMs?: number }): SqliteDatabase;
export function conversationDatabase(target: { url: string; poolSize?: number }): PostgresDatabase;
export function conversationDatabase(target: StoreTarget): SqlStoreDatabase;
export function conversationDatabase(target: StoreTarget): SqlStoreDatabase {
  return storeDatabase(target, conversationHistory);
}

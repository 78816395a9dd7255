import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { AppDatabase } from './database';

/** The SQLite file in DATA_DIR that every store shares (named after its first user). */
export const DATABASE_FILE = 'conversations.db';

export type StoreTarget = { file: string; busyTimeoutMs?: number } | { url: string; poolSize?: number };

/**
 * An SQLite file's history from before the migration table (see DatabaseTarget.base). It runs
 * whichever store opens the file first, because the migrations after it build on its tables.
 */
export type FirstHistory = (raw: Database.Database) => void;

/**
 * The stores' one database: where it is, and its history. Every store takes a handle of its own
 * (`open`): on SQLite the handles share the file's one connection, on Postgres each is a pool of
 * its own size, so a busy queue never takes the connections a chat turn waits for.
 */
export type StoreDatabase = { kind: 'memory' } | SqliteDatabase | PostgresDatabase;

export interface SqliteDatabase {
  kind: 'sqlite';
  file: string;
  open(options?: { busyTimeoutMs?: number }): AppDatabase;
}

export interface PostgresDatabase {
  kind: 'postgres';
  url: string;
  open(options?: { poolSize?: number }): AppDatabase;
}

export type SqlStoreDatabase = SqliteDatabase | PostgresDatabase;

/** The database at `target`, each handle brought through `history` before the migrations. */
export function storeDatabase(target: { file: string; busyTimeoutMs?: number }, history?: FirstHistory): SqliteDatabase;
export function storeDatabase(target: { url: string; poolSize?: number }, history?: FirstHistory): PostgresDatabase;
export function storeDatabase(target: StoreTarget, history?: FirstHistory): SqlStoreDatabase;
export function storeDatabase(target: StoreTarget, history?: FirstHistory): SqlStoreDatabase {
  if ('url' in target) {
    return { kind: 'postgres', url: target.url, open: (o = {}) => new AppDatabase({ url: target.url, poolSize: o.poolSize ?? target.poolSize }) };
  }
  return {
    kind: 'sqlite',
    file: target.file,
    open: (o = {}) => new AppDatabase({ file: target.file, busyTimeoutMs: o.busyTimeoutMs ?? target.busyTimeoutMs, ...(history ? { base: history } : {}) }),
  };
}

export interface DatabaseSettings {
  store: 'sqlite' | 'memory' | 'postgres';
  dataDir: string;
  databaseUrl?: string;
}

/**
 * The configured database: Postgres with DATABASE_URL, memory for the memory store, else
 * `<dataDir>/conversations.db` (the folder is created; the file when a store opens it).
 */
export function openDatabase(settings: DatabaseSettings, history?: FirstHistory): StoreDatabase {
  if (settings.store === 'memory') return { kind: 'memory' };
  if (settings.store === 'postgres' && settings.databaseUrl) return storeDatabase({ url: settings.databaseUrl }, history);
  fs.mkdirSync(settings.dataDir, { recursive: true });
  return storeDatabase({ file: path.join(settings.dataDir, DATABASE_FILE) }, history);
}

import type { ConversationStore } from './types';
import { MemoryConversationStore } from './memory-store';
import { SqliteConversationStore } from './sqlite-store';
import { PgConversationStore } from './pg-store';
import { conversationHistory } from './database';
import { openDatabase, type DatabaseSettings, type StoreDatabase } from '../db/store-database';

export type * from './types';
export { MemoryConversationStore } from './memory-store';
export { SqliteConversationStore } from './sqlite-store';
export { PgConversationStore } from './pg-store';
export { isValidConversationId, newConversationId } from './ids';
export { conversationHistory, conversationDatabase } from './database';
/** The list cursor that resumes after this conversation (for lists filtered after the store). */
export { encodeCursor as cursorAfter } from './internal';

/**
 * The store on the stores' database (by default the configured one: SQLite in
 * `<dataDir>/conversations.db`, the folder created). Postgres (DATABASE_URL) migrates in the
 * background; its calls wait for that.
 */
export function openConversationStore(
  config: DatabaseSettings & { turnLeaseMs?: number },
  database: StoreDatabase = openDatabase(config, conversationHistory),
): ConversationStore {
  if (database.kind === 'memory') return new MemoryConversationStore();
  if (database.kind === 'postgres') return new PgConversationStore(database, { leaseMs: config.turnLeaseMs });
  return new SqliteConversationStore(database);
}

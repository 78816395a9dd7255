import fs from 'node:fs';
import path from 'node:path';
import type { ConversationStore } from './types';
import { MemoryConversationStore } from './memory-store';
import { SqliteConversationStore } from './sqlite-store';
import { PgConversationStore } from './pg-store';

export type * from './types';
export { MemoryConversationStore } from './memory-store';
export { SqliteConversationStore } from './sqlite-store';
export { PgConversationStore } from './pg-store';
export { isValidConversationId, newConversationId } from './ids';
/** The list cursor that resumes after this conversation (for lists filtered after the store). */
export { encodeCursor as cursorAfter } from './internal';

export const DATABASE_FILE = 'conversations.db';

/**
 * The configured store; SQLite lives in `<dataDir>/conversations.db` (the folder is created).
 * Postgres (DATABASE_URL) migrates in the background; its calls wait for that.
 */
export function openConversationStore(config: { store: 'sqlite' | 'memory' | 'postgres'; dataDir: string; databaseUrl?: string; turnLeaseMs?: number }): ConversationStore {
  if (config.store === 'memory') return new MemoryConversationStore();
  if (config.store === 'postgres' && config.databaseUrl) return new PgConversationStore(config.databaseUrl, { leaseMs: config.turnLeaseMs });
  fs.mkdirSync(config.dataDir, { recursive: true });
  return new SqliteConversationStore(path.join(config.dataDir, DATABASE_FILE));
}

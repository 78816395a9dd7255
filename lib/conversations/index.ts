import fs from 'node:fs';
import path from 'node:path';
import type { ConversationStore } from './types';
import { MemoryConversationStore } from './memory-store';
import { SqliteConversationStore } from './sqlite-store';

export type * from './types';
export { MemoryConversationStore } from './memory-store';
export { SqliteConversationStore } from './sqlite-store';
export { isValidConversationId, newConversationId } from './ids';
/** The list cursor that resumes after this conversation (for lists filtered after the store). */
export { encodeCursor as cursorAfter } from './internal';

export const DATABASE_FILE = 'conversations.db';

/** The configured store; SQLite lives in `<dataDir>/conversations.db` (the folder is created). */
export function openConversationStore(config: { store: 'sqlite' | 'memory'; dataDir: string }): ConversationStore {
  if (config.store === 'memory') return new MemoryConversationStore();
  fs.mkdirSync(config.dataDir, { recursive: true });
  return new SqliteConversationStore(path.join(config.dataDir, DATABASE_FILE));
}

import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_FILE } from '../conversations';
import { MemoryRunStore } from './memory-store';
import { SqliteRunStore } from './sqlite-store';
import type { RunStore } from './types';

export * from './types';
export { RunService, runSettings, ANSWER_RULE, type RunSettings, type RunEvent, type SubmitInput } from './service';
export { NotHeadlessError, resolveTarget, firstMessage, type RunTarget, type RunInputs } from './target';
export { headlessContract, headlessContracts } from './contract';
export { readAnswer, lastJsonObject, trailingQuestion, type Reading } from './result';
export { signature, deliverWebhook, webhookProblem, type WebhookSettings } from './webhook';
export { MemoryRunStore } from './memory-store';
export { SqliteRunStore } from './sqlite-store';

/** The runs' store beside the conversations: the same SQLite file, or memory with a memory store. */
/**
 * The runs' queue. With the conversations on Postgres it still lives in DATA_DIR's SQLite file,
 * which the instances of one host share (its leases hold across processes); a Postgres run store
 * is the step that lets instances on several hosts share one queue.
 */
export function openRunStore(config: { store: 'sqlite' | 'memory' | 'postgres'; dataDir: string }): RunStore {
  if (config.store === 'memory') return new MemoryRunStore();
  fs.mkdirSync(config.dataDir, { recursive: true });
  return new SqliteRunStore(path.join(config.dataDir, DATABASE_FILE));
}

import type { StoreDatabase } from '../../store/db/store-database';
import { MemoryRunStore } from './memory-store';
import { SqlRunStore } from './sql-store';
import type { RunStore } from './types';

export * from './types';
export { RunService, runSettings, ANSWER_RULE, type RunSettings, type RunEvent, type SubmitInput } from './service';
export { NotHeadlessError, resolveTarget, firstMessage, type RunTarget, type RunInputs } from './target';
export { headlessContract, headlessContracts } from './contract';
export { BUILD_SKILLS, REVIEW_SKILLS, BUILD_ANSWER_RULE, isBuildRun, buildTarget, buildMessage, readBuildTurn, storyNamedIn, type BuildVerdict, type BuildJudge } from './build';
export { readAnswer, lastJsonObject, trailingQuestion, type Reading } from './result';
export { signature, deliverWebhook, webhookProblem, type WebhookSettings } from './webhook';
export { MemoryRunStore } from './memory-store';
export { SqlRunStore, toRun } from './sql-store';

/**
 * The runs' queue, in the stores' database: Postgres with DATABASE_URL (one queue for the
 * instances of every host), else DATA_DIR's SQLite file (shared by the instances of one host, its
 * leases holding across processes), or memory with a memory store.
 */
export function openRunStore(database: StoreDatabase): RunStore {
  if (database.kind === 'memory') return new MemoryRunStore();
  // The queue does little and briefly: a few connections, beside the conversation store's pool.
  return SqlRunStore.open(database, 4);
}

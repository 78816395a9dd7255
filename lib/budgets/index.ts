import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_FILE } from '../conversations';
import { MemoryBudgetStore } from './memory-store';
import { SqlBudgetStore } from './sql-store';
import type { BudgetStore } from './types';

export * from './types';
export { monthOf, projectStop, runStop, runBudgetProblem, type BudgetStop } from './check';
export { MemoryBudgetStore } from './memory-store';
export { SqlBudgetStore } from './sql-store';

/** Projects' budgets, in the database the conversations use (memory with a memory store). */
export function openBudgetStore(config: { store: 'sqlite' | 'memory' | 'postgres'; dataDir: string; databaseUrl?: string }): BudgetStore {
  if (config.store === 'memory') return new MemoryBudgetStore();
  if (config.store === 'postgres' && config.databaseUrl) return SqlBudgetStore.open({ url: config.databaseUrl, poolSize: 2 });
  fs.mkdirSync(config.dataDir, { recursive: true });
  return SqlBudgetStore.open({ file: path.join(config.dataDir, DATABASE_FILE) });
}

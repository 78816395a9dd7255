import type { StoreDatabase } from '../db/store-database';
import { MemoryBudgetStore } from './memory-store';
import { SqlBudgetStore } from './sql-store';
import type { BudgetStore } from './types';

export * from './types';
export { monthOf, projectStop, runStop, personStop, serverStop, runBudgetProblem, type BudgetStop } from './check';
export { MemoryBudgetStore } from './memory-store';
export { SqlBudgetStore } from './sql-store';

/** Projects' budgets in the stores' database (as lib/engine/runs' openRunStore). */
export function openBudgetStore(database: StoreDatabase): BudgetStore {
  if (database.kind === 'memory') return new MemoryBudgetStore();
  return SqlBudgetStore.open(database, 2);
}

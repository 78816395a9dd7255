/**
 * Budgets: a project's monthly limits and a run's own. A limit is a number of tokens (prompt and
 * completion: cached prompt tokens are prompt tokens) or of US dollars (from the model
 * profiles' prices); null or absent is no limit.
 */

export interface ProjectBudget {
  projectId: string;
  monthlyTokens: number | null;
  monthlyUsd: number | null;
  updatedAt: string | null;
  updatedBy: string | null;
}

/** A change of a project's limits: a field left out keeps its value, null removes the limit. */
export interface BudgetPatch {
  monthlyTokens?: number | null;
  monthlyUsd?: number | null;
}

/** A run's own limit, for the whole run (every turn of its conversation). */
export interface RunBudget {
  tokens?: number;
  usd?: number;
}

/** What was used: tokens, and dollars of the priced calls. */
export interface Used {
  tokens: number;
  usd: number;
}

export interface BudgetStore {
  /** The project's limits; no limits (nulls) when none were set. */
  get(projectId: string): Promise<ProjectBudget>;
  set(projectId: string, patch: BudgetPatch, by: string): Promise<ProjectBudget>;
  close(): Promise<void>;
}

export function noBudget(projectId: string): ProjectBudget {
  return { projectId, monthlyTokens: null, monthlyUsd: null, updatedAt: null, updatedBy: null };
}

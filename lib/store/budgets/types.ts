/**
 * Budgets: a project's monthly limits and a run's own. A limit is a number of tokens (prompt and
 * completion: cached prompt tokens are prompt tokens) or of US dollars (from the model
 * profiles' prices); null or absent is no limit.
 */

/** Monthly limits; null is no limit. */
export interface Limits {
  monthlyTokens: number | null;
  monthlyUsd: number | null;
}

export interface ProjectBudget extends Limits {
  projectId: string;
  /** What each person may spend in the project in a month (their conversations and runs). */
  perPerson: Limits;
  updatedAt: string | null;
  updatedBy: string | null;
}

/** The server's own limits (admins): its whole month, and each person's month over every project. */
export interface ServerBudget extends Limits {
  perPerson: Limits;
  updatedAt: string | null;
  updatedBy: string | null;
}

/** A change of limits: a field left out keeps its value, null removes the limit. */
export interface BudgetPatch {
  monthlyTokens?: number | null;
  monthlyUsd?: number | null;
  perPerson?: { monthlyTokens?: number | null; monthlyUsd?: number | null };
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
  /** The server's limits; none (nulls) when none were set. */
  getServer(): Promise<ServerBudget>;
  setServer(patch: BudgetPatch, by: string): Promise<ServerBudget>;
  close(): Promise<void>;
}

const NO_LIMITS: Limits = { monthlyTokens: null, monthlyUsd: null };

export function noBudget(projectId: string): ProjectBudget {
  return { projectId, monthlyTokens: null, monthlyUsd: null, perPerson: { ...NO_LIMITS }, updatedAt: null, updatedBy: null };
}

export function noServerBudget(): ServerBudget {
  return { monthlyTokens: null, monthlyUsd: null, perPerson: { ...NO_LIMITS }, updatedAt: null, updatedBy: null };
}

/** Limits after a patch: what it leaves out kept. */
export function patched<T extends Limits & { perPerson: Limits }>(now: T, patch: BudgetPatch): Pick<T, 'monthlyTokens' | 'monthlyUsd' | 'perPerson'> {
  const pick = <K extends keyof Limits>(from: Partial<Limits> | undefined, base: Limits, k: K) => (from && from[k] !== undefined ? from[k]! : base[k]) as Limits[K];
  return {
    monthlyTokens: pick(patch, now, 'monthlyTokens'),
    monthlyUsd: pick(patch, now, 'monthlyUsd'),
    perPerson: { monthlyTokens: pick(patch.perPerson, now.perPerson, 'monthlyTokens'), monthlyUsd: pick(patch.perPerson, now.perPerson, 'monthlyUsd') },
  };
}

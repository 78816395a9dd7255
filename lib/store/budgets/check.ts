import type { Limits, ProjectBudget, RunBudget, Used } from './types';

/** Which budget stopped (or refuses) a run, in words a person reads. */
export interface BudgetStop {
  budget: 'run' | 'project' | 'person' | 'server';
  message: string;
}

/** The calendar month (UTC) `now` falls in: its name and its span as ISO times. */
export function monthOf(now: Date = new Date()): { month: string; since: string; until: string } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { month: start.toISOString().slice(0, 7), since: start.toISOString(), until: next.toISOString() };
}

const tokens = (n: number) => `${n.toLocaleString('en-US')} tokens`;
const usd = (n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`;

/** The project's monthly budget, when this month's spend has reached one of its limits. */
export function projectStop(budget: ProjectBudget, spent: Used, month: string): BudgetStop | null {
  if (budget.monthlyTokens !== null && spent.tokens >= budget.monthlyTokens) {
    return { budget: 'project', message: `The project's monthly token budget is spent: ${tokens(spent.tokens)} of ${tokens(budget.monthlyTokens)} in ${month} (UTC).` };
  }
  if (budget.monthlyUsd !== null && spent.usd >= budget.monthlyUsd) {
    return { budget: 'project', message: `The project's monthly budget of ${usd(budget.monthlyUsd)} is spent: ${usd(spent.usd)} in ${month} (UTC).` };
  }
  return null;
}

/** The run's own budget, when what the run used has reached one of its limits. */
export function runStop(budget: RunBudget | undefined, used: Used): BudgetStop | null {
  if (budget?.tokens !== undefined && used.tokens >= budget.tokens) {
    return { budget: 'run', message: `The run's token budget is spent: ${tokens(used.tokens)} used of ${tokens(budget.tokens)}.` };
  }
  if (budget?.usd !== undefined && used.usd >= budget.usd) {
    return { budget: 'run', message: `The run's budget of ${usd(budget.usd)} is spent: ${usd(used.usd)} used.` };
  }
  return null;
}

/**
 * A run's budget as given: whole tokens of at least 1, dollars above 0; the problem in words
 * (naming the field) otherwise.
 */
export function runBudgetProblem(budget: unknown): { field: string; message: string } | null {
  if (budget === undefined) return null;
  if (budget === null || typeof budget !== 'object' || Array.isArray(budget)) return { field: 'budget', message: 'budget must be an object: { tokens?, usd? }.' };
  const b = budget as Record<string, unknown>;
  for (const key of Object.keys(b)) if (key !== 'tokens' && key !== 'usd') return { field: `budget.${key}`, message: `budget has no field "${key.slice(0, 40)}" (tokens, usd).` };
  if (b.tokens !== undefined && (typeof b.tokens !== 'number' || !Number.isSafeInteger(b.tokens) || b.tokens < 1)) {
    return { field: 'budget.tokens', message: 'budget.tokens must be a whole number of at least 1.' };
  }
  if (b.usd !== undefined && (typeof b.usd !== 'number' || !Number.isFinite(b.usd) || b.usd <= 0)) return { field: 'budget.usd', message: 'budget.usd must be a number above 0.' };
  return null;
}

/**
 * A person's monthly limits, when this month's spend has reached one: `where` says whose limits
 * (the project's for each person, or the server's over every project).
 */
export function personStop(limits: Limits, spent: Used, month: string, where: 'project' | 'server'): BudgetStop | null {
  const scope = where === 'project' ? 'in this project' : 'on this server';
  if (limits.monthlyTokens !== null && spent.tokens >= limits.monthlyTokens) {
    return { budget: 'person', message: `The monthly token budget per person ${scope} is spent for this person: ${tokens(spent.tokens)} of ${tokens(limits.monthlyTokens)} in ${month} (UTC).` };
  }
  if (limits.monthlyUsd !== null && spent.usd >= limits.monthlyUsd) {
    return { budget: 'person', message: `The monthly budget per person ${scope} of ${usd(limits.monthlyUsd)} is spent for this person: ${usd(spent.usd)} in ${month} (UTC).` };
  }
  return null;
}

/** The server's own monthly limits (every project together), when this month's spend has reached one. */
export function serverStop(limits: Limits, spent: Used, month: string): BudgetStop | null {
  if (limits.monthlyTokens !== null && spent.tokens >= limits.monthlyTokens) {
    return { budget: 'server', message: `The server's monthly token budget is spent: ${tokens(spent.tokens)} of ${tokens(limits.monthlyTokens)} in ${month} (UTC).` };
  }
  if (limits.monthlyUsd !== null && spent.usd >= limits.monthlyUsd) {
    return { budget: 'server', message: `The server's monthly budget of ${usd(limits.monthlyUsd)} is spent: ${usd(spent.usd)} in ${month} (UTC).` };
  }
  return null;
}

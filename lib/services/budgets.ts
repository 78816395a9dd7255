import type { Caller } from '../core/access';
import { monthOf, type ProjectBudget, type BudgetPatch } from '../store/budgets';
import { AppError } from '../core/errors';
import { getRuntime, projectBudgetStop } from '../engine/runtime';
import type { BudgetView, SpendView } from '../../types/api';
import { projectOf, type BodyOf } from './access';

/** A spend as the API shows it: dollars null when no call of it had a price. */
function spendView(s: { promptTokens: number; completionTokens: number; cost: number; calls: number; unpriced: number }): SpendView {
  return { tokens: s.promptTokens + s.completionTokens, usd: s.calls > 0 && s.unpriced === s.calls ? null : s.cost };
}

async function budgetView(budget: ProjectBudget): Promise<BudgetView> {
  const month = monthOf();
  const { store, accounts } = getRuntime();
  const filter = { projectId: budget.projectId, since: month.since, until: month.until };
  const [spent, owners] = await Promise.all([store.spend(filter), store.spendByOwner(filter)]);
  const ids = owners.map((o) => o.ownerId).filter((id): id is string => !!id);
  const people = accounts && ids.length ? await accounts.personSummaries(ids) : new Map<string, { name: string | null }>();
  const byPerson = owners
    .map((o) => ({ id: o.ownerId, name: o.ownerId ? (people.get(o.ownerId)?.name ?? null) : null, spent: spendView(o) }))
    .sort((a, b) => b.spent.tokens - a.spent.tokens);
  return { monthlyTokens: budget.monthlyTokens, monthlyUsd: budget.monthlyUsd, spent: spendView(spent), month: month.month, byPerson };
}

/** A project's monthly budget and this month's spend (UTC): whoever sees the project. */
export async function getBudget(caller: Caller, projectId: string): Promise<BudgetView> {
  const project = await projectOf(caller, projectId, 'read');
  return budgetView(await getRuntime().budgets.get(project.id));
}

/** A limit as given: a number of at least 0 (whole for tokens), or null to remove it. */
function limitOf(value: unknown, field: 'monthlyTokens' | 'monthlyUsd'): number | null | undefined {
  if (value === undefined || value === null) return value;
  const whole = field === 'monthlyTokens';
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (whole && !Number.isSafeInteger(value))) {
    throw new AppError('E_VALIDATION', `${field} must be ${whole ? 'a whole number' : 'a number'} of at least 0, or null to remove the limit.`, { field });
  }
  return value;
}

/**
 * Sets a project's monthly limits (its owners and admins); a field left out keeps its value, null
 * removes the limit. The body is read after the access check.
 */
export async function putBudget(caller: Caller, projectId: string, body: BodyOf<Record<string, unknown>>): Promise<BudgetView> {
  const project = await projectOf(caller, projectId, 'own');
  const raw = await body();
  for (const key of Object.keys(raw)) {
    if (key !== 'monthlyTokens' && key !== 'monthlyUsd') throw new AppError('E_VALIDATION', `A budget has no field "${key.slice(0, 40)}" (monthlyTokens, monthlyUsd).`, { field: key.slice(0, 40) });
  }
  const patch: BudgetPatch = {};
  const tokens = limitOf(raw.monthlyTokens, 'monthlyTokens');
  const usd = limitOf(raw.monthlyUsd, 'monthlyUsd');
  if (tokens !== undefined) patch.monthlyTokens = tokens;
  if (usd !== undefined) patch.monthlyUsd = usd;
  return budgetView(await getRuntime().budgets.set(project.id, patch, caller.id));
}

/**
 * Refuses new work on a project whose month is spent: 402 E_BUDGET naming the limit. What starts
 * a run (POST /api/runs through the run service, a story's start) calls it before making anything.
 */
export async function assertBudget(projectId: string): Promise<void> {
  const stop = await projectBudgetStop(getRuntime(), projectId);
  if (stop) throw new AppError('E_BUDGET', stop.message, { budget: stop.budget });
}

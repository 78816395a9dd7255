import type { Caller } from '../core/access';
import { monthOf, type BudgetPatch, type Limits, type ProjectBudget, type ServerBudget } from '../store/budgets';
import type { SpendFilter } from '../store/conversations/types';
import { AppError } from '../core/errors';
import { budgetStop, getRuntime, personBudgetState as personBudgetStateOf } from '../engine/runtime';
import type { BudgetView, ServerBudgetView, SpendView } from '../../types/api';
import { projectOf, requireAdmin, type BodyOf } from './access';

/** A spend as the API shows it: dollars null when no call of it had a price. */
function spendView(s: { promptTokens: number; completionTokens: number; cost: number; calls: number; unpriced: number }): SpendView {
  return { tokens: s.promptTokens + s.completionTokens, usd: s.calls > 0 && s.unpriced === s.calls ? null : s.cost };
}

/** This month's spend (of a project, or of every project) in total and by person. */
async function spendOf(projectId?: string): Promise<{ spent: SpendView; month: string; byPerson: BudgetView['byPerson'] }> {
  const month = monthOf();
  const { store, accounts } = getRuntime();
  const filter: SpendFilter = { ...(projectId !== undefined ? { projectId } : {}), since: month.since, until: month.until };
  const [spent, owners] = await Promise.all([store.spend(filter), store.spendByOwner(filter)]);
  const ids = owners.map((o) => o.ownerId).filter((id): id is string => !!id);
  const people = accounts && ids.length ? await accounts.personSummaries(ids) : new Map<string, { name: string | null }>();
  const byPerson = owners
    .map((o) => ({ id: o.ownerId, name: o.ownerId ? (people.get(o.ownerId)?.name ?? null) : null, spent: spendView(o) }))
    .sort((a, b) => b.spent.tokens - a.spent.tokens);
  return { spent: spendView(spent), month: month.month, byPerson };
}

const limitsView = (l: Limits) => ({ monthlyTokens: l.monthlyTokens, monthlyUsd: l.monthlyUsd });

async function budgetView(budget: ProjectBudget): Promise<BudgetView> {
  const { spent, month, byPerson } = await spendOf(budget.projectId);
  return { monthlyTokens: budget.monthlyTokens, monthlyUsd: budget.monthlyUsd, spent, month, byPerson, perPerson: limitsView(budget.perPerson) };
}

async function serverBudgetView(budget: ServerBudget): Promise<ServerBudgetView> {
  const { spent, month, byPerson } = await spendOf();
  return { monthlyTokens: budget.monthlyTokens, monthlyUsd: budget.monthlyUsd, perPerson: limitsView(budget.perPerson), spent, month, byPerson };
}

/** A project's monthly budget and this month's spend (UTC): whoever sees the project. */
export async function getBudget(caller: Caller, projectId: string): Promise<BudgetView> {
  const project = await projectOf(caller, projectId, 'read');
  return budgetView(await getRuntime().budgets.get(project.id));
}

/** A limit as given: a number of at least 0 (whole for tokens), or null to remove it. */
function limitOf(value: unknown, field: string, whole: boolean): number | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (whole && !Number.isSafeInteger(value))) {
    throw new AppError('E_VALIDATION', `${field} must be ${whole ? 'a whole number' : 'a number'} of at least 0, or null to remove the limit.`, { field });
  }
  return value;
}

/** A PUT's body as a patch: `monthlyTokens`, `monthlyUsd` and `perPerson: { monthlyTokens?, monthlyUsd? }`, each checked and named. */
function patchOf(raw: Record<string, unknown>): BudgetPatch {
  for (const key of Object.keys(raw)) {
    if (key !== 'monthlyTokens' && key !== 'monthlyUsd' && key !== 'perPerson') {
      throw new AppError('E_VALIDATION', `A budget has no field "${key.slice(0, 40)}" (monthlyTokens, monthlyUsd, perPerson).`, { field: key.slice(0, 40) });
    }
  }
  const patch: BudgetPatch = {};
  const tokens = limitOf(raw.monthlyTokens, 'monthlyTokens', true);
  const usd = limitOf(raw.monthlyUsd, 'monthlyUsd', false);
  if (tokens !== undefined) patch.monthlyTokens = tokens;
  if (usd !== undefined) patch.monthlyUsd = usd;
  if (raw.perPerson !== undefined) {
    const pp = raw.perPerson;
    if (pp === null || typeof pp !== 'object' || Array.isArray(pp)) throw new AppError('E_VALIDATION', 'perPerson must be an object: { monthlyTokens?, monthlyUsd? }.', { field: 'perPerson' });
    const p = pp as Record<string, unknown>;
    for (const key of Object.keys(p)) {
      if (key !== 'monthlyTokens' && key !== 'monthlyUsd') throw new AppError('E_VALIDATION', `perPerson has no field "${key.slice(0, 40)}" (monthlyTokens, monthlyUsd).`, { field: `perPerson.${key.slice(0, 40)}` });
    }
    const pt = limitOf(p.monthlyTokens, 'perPerson.monthlyTokens', true);
    const pu = limitOf(p.monthlyUsd, 'perPerson.monthlyUsd', false);
    patch.perPerson = { ...(pt !== undefined ? { monthlyTokens: pt } : {}), ...(pu !== undefined ? { monthlyUsd: pu } : {}) };
  }
  return patch;
}

/**
 * Sets a project's monthly limits and its limits per person (its owners and admins); a field
 * left out keeps its value, null removes the limit. The body is read after the access check.
 */
export async function putBudget(caller: Caller, projectId: string, body: BodyOf<Record<string, unknown>>): Promise<BudgetView> {
  const project = await projectOf(caller, projectId, 'own');
  const patch = patchOf(await body());
  return budgetView(await getRuntime().budgets.set(project.id, patch, caller.id));
}

/** The server's monthly limits and this month's spend over every project (admins). */
export async function getServerBudget(caller: Caller): Promise<ServerBudgetView> {
  requireAdmin(caller);
  return serverBudgetView(await getRuntime().budgets.getServer());
}

/** Sets the server's monthly limits (admins): every project together, and each person over every project. */
export async function putServerBudget(caller: Caller, body: BodyOf<Record<string, unknown>>): Promise<ServerBudgetView> {
  requireAdmin(caller);
  const patch = patchOf(await body());
  return serverBudgetView(await getRuntime().budgets.setServer(patch, caller.id));
}

/**
 * Refuses new work whose month is spent: 402 E_BUDGET naming the limit — the project's, and with
 * `personId` that person's (in the project, on the server) and the server's. What starts a run
 * (POST /api/runs through the run service, a story's start, an answer) calls it before making anything.
 */
export async function assertBudget(projectId: string, personId?: string): Promise<void> {
  const stop = await budgetStop(getRuntime(), projectId, personId);
  if (stop) throw new AppError('E_BUDGET', stop.message, { budget: stop.budget });
}

/**
 * Whether a person's budgets (the project's per person, the server's per person and its own
 * month, and the project's) let them start more work in the project: for the autopilot, whose
 * runs are the person's who enabled it.
 */
export function personBudgetState(projectId: string, personId: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  return personBudgetStateOf(getRuntime(), projectId, personId);
}

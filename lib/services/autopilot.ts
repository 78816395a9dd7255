import { LOCAL_CALLER, type Caller } from '../core/access';
import { AppError } from '../core/errors';
import { getRuntime } from '../engine/runtime';
import type { ActingPerson, AutopilotHands, AutopilotSettings, DecisionAction } from '../engine/autopilot';
import { DEFAULT_SETTINGS } from '../engine/autopilot';
import type { AutopilotView } from '../../types/api';
import { committerOf, projectOf, type BodyOf } from './access';
import { startStory } from './board';
import { mergeWorkspace } from './workspaces';
import { autopilotView } from './presenters/autopilot';

/**
 * The person who enabled the autopilot, as a caller again: every start and merge it makes goes
 * through the same checks as theirs would (a person who lost the project, or was deactivated,
 * can no longer act; the decision says so).
 */
async function callerFor(person: ActingPerson): Promise<Caller> {
  if (person.id === LOCAL_CALLER.id) return LOCAL_CALLER;
  const accounts = getRuntime().accounts;
  const found = accounts ? await accounts.personById(person.id) : null;
  if (!found || found.status !== 'active') throw new AppError('E_FORBIDDEN', `${person.name}, who enabled the autopilot, can no longer act in this project; enable it again.`);
  return { kind: 'session', id: found.id, email: found.email, name: found.name, role: found.role };
}

/** The board's start and merge, lent to the engine's autopilot. */
const hands: AutopilotHands = {
  async startStory(projectId, key, person) {
    const started = await startStory(await callerFor(person), projectId, key, async () => ({}));
    return { runId: started.runId, workspaceId: started.workspace.id };
  },
  async merge(projectId, workspaceId, person) {
    await mergeWorkspace(await callerFor(person), projectId, workspaceId);
  },
  async identityOf(person) {
    return committerOf(await callerFor(person).catch(() => ({ ...LOCAL_CALLER, kind: 'session' as const, id: person.id, name: person.name })));
  },
};

/** Starts the autopilot of the process's runtime (idempotent): the server's start calls it, and every use case below. */
export function startAutopilot(): void {
  const autopilot = getRuntime().autopilot;
  if (!autopilot.attached) autopilot.attach(hands);
}

const personOf = (caller: Caller): ActingPerson => ({ id: caller.id, name: caller.name || caller.email || caller.id });

async function viewOf(projectId: string): Promise<AutopilotView> {
  const autopilot = getRuntime().autopilot;
  const [state, rows, decisions, ctx] = await Promise.all([
    autopilot.store.get(projectId),
    autopilot.store.stories(projectId),
    autopilot.store.decisions(projectId, { open: true }),
    autopilot.context(projectId).catch(() => null),
  ]);
  return autopilotView(state, rows, decisions, ctx?.plan.problems ?? []);
}

/** The autopilot of a project (whoever sees the project): settings, who it acts as, the stories it has, its problems and decisions. */
export async function getAutopilot(caller: Caller, projectId: string): Promise<AutopilotView> {
  const project = await projectOf(caller, projectId, 'read');
  startAutopilot();
  return viewOf(project.id);
}

export type AutopilotPatch = Partial<Omit<AutopilotSettings, 'merge'>> & { merge?: Partial<AutopilotSettings['merge']> };

/**
 * Changes the autopilot (owners and admins); fields left out keep their values. Enabling it makes
 * the caller the person it acts as (their budget pays its runs) and lifts a pause; disabling it
 * starts nothing new (work under way goes on: Stop all stops it).
 */
export async function putAutopilot(caller: Caller, projectId: string, body: BodyOf<AutopilotPatch>): Promise<AutopilotView> {
  const project = await projectOf(caller, projectId, 'own');
  const patch = await body();
  const rt = getRuntime();
  if (patch.reviewModel && !rt.config.models.profiles.has(patch.reviewModel)) {
    throw new AppError('E_VALIDATION', `Unknown model profile "${patch.reviewModel}". GET /api/models lists them.`, { field: 'reviewModel' });
  }
  if (patch.enabled && !(await rt.workspaces.getBuild(project.id)).enabled) throw new AppError('E_BUILD_DISABLED', 'Build is not enabled for this project.');
  const was = await rt.autopilot.store.get(project.id);
  const old = was?.settings ?? DEFAULT_SETTINGS;
  const next: AutopilotSettings = {
    ...old,
    ...Object.fromEntries(Object.entries(patch).filter(([k, v]) => v !== undefined && k !== 'merge')),
    merge: { ...old.merge, ...(patch.merge ?? {}) },
  } as AutopilotSettings;
  const enabling = patch.enabled === true;
  await rt.autopilot.store.putSettings(project.id, next, enabling ? personOf(caller) : undefined);
  if (enabling) await rt.autopilot.store.setPaused(project.id, null);
  startAutopilot();
  rt.autopilot.kick();
  return viewOf(project.id);
}

/** A person's answer to one of the autopilot's decisions (owners and editors). */
export async function decideAutopilot(caller: Caller, projectId: string, decisionId: string, body: BodyOf<{ action: DecisionAction; answer?: string }>): Promise<AutopilotView> {
  const project = await projectOf(caller, projectId, 'write');
  const rt = getRuntime();
  const decision = (await rt.autopilot.store.decisions(project.id)).find((d) => d.id === decisionId);
  if (!decision) throw new AppError('E_NOT_FOUND', 'Decision not found.');
  const { action, answer } = await body();
  if (!decision.actions.includes(action)) throw new AppError('E_VALIDATION', `This decision takes ${decision.actions.join(', ')}.`, { field: 'action' });
  if (action === 'answer' && !answer?.trim()) throw new AppError('E_VALIDATION', 'answer is required to answer.', { field: 'answer' });
  if (decision.resolvedAt) throw new AppError('E_CONFLICT', 'This decision was already taken.');
  startAutopilot();
  if (!(await rt.autopilot.resolve(decision, action, answer, personOf(caller)))) throw new AppError('E_CONFLICT', 'This decision was already taken.');
  return viewOf(project.id);
}

/** Stop all (owners and editors): the autopilot is turned off and the runs of its stories under way are cancelled. */
export async function stopAutopilot(caller: Caller, projectId: string): Promise<AutopilotView> {
  const project = await projectOf(caller, projectId, 'write');
  startAutopilot();
  await getRuntime().autopilot.stopAll(project.id);
  return viewOf(project.id);
}

import { roleAllows, type Caller, type Need } from '../core/access';
import type { Run } from '../engine/runs';
import { getRuntime } from '../engine/runtime';
import type { DecisionView } from '../../types/api';
import { projectOf } from './access';

/** How many of a project's latest runs the decisions are looked for in. */
const LOOKED_AT = 100;

/**
 * Whether the caller may see a waiting run (or, with `need`, answer it): by their role in its
 * project, not by its conversation. A run that waits on a person waits on the team: every member
 * sees what it asks, every editor may answer (the answer is stored under their name); the
 * conversation itself stays its owner's to open.
 */
export async function runAllows(caller: Caller, run: Run, need: Need = 'read'): Promise<boolean> {
  const role = await getRuntime().access.projectRole(caller, run.projectId);
  return !!role && roleAllows(role, need);
}

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v : null);

/** What a blocked run waits on: its question, or why it is blocked. */
export function decisionOf(run: Run): DecisionView {
  const result = run.result ?? {};
  const question = text(result.question);
  return {
    runId: run.id,
    storyKey: run.storyKey ?? null,
    kind: question ? 'question' : 'blocked',
    text: question ?? text(result.message) ?? text(result.reason) ?? text(result.blocking_condition) ?? run.error?.message ?? 'The run is blocked.',
    since: run.endedAt ?? run.updatedAt,
  };
}

/**
 * The project's runs that wait on a person, newest first: blocked ones, whether by a question
 * nobody answered, a budget or the skill's own blocking condition.
 */
export async function listDecisions(caller: Caller, projectId: string): Promise<DecisionView[]> {
  // Seeing the project is seeing its waiting runs (runAllows): one check for them all.
  const project = await projectOf(caller, projectId, 'read');
  const runs = await getRuntime().runs.store.list({ projectId: project.id, limit: LOOKED_AT });
  const out = runs.filter((run) => run.status === 'blocked').map(decisionOf);
  return out.sort((a, b) => (a.since < b.since ? 1 : a.since > b.since ? -1 : 0));
}

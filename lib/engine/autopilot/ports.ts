/**
 * What the autopilot uses from parts built beside it, in one place: the event bus, the build
 * settings' `test` line, the per-person budgets and the forges' publish. Each stands in here with
 * what the server has until the runtime puts its own in (the budgets and the forges need the
 * runtime's stores, which this module may not import); the engine calls only the functions below,
 * and a test may put a stand-in in their place.
 */
import { emitProjectEvent as emitToBus } from '../events';
import type { BuildSettings } from '../workspaces';

/** A person the autopilot acts as (who enabled it). */
export interface ActingPerson {
  id: string;
  name: string;
}

export type BudgetState = { ok: true } | { ok: false; reason: string };

export interface AutopilotPorts {
  emitProjectEvent(projectId: string, event: { type: 'autopilot'; storyKey: string | null }): void;
  personBudgetState(projectId: string, personId: string): Promise<BudgetState>;
  buildTestLine(build: BuildSettings): string | null;
  publishWorkspace(input: { projectId: string; workspaceId: string; by: ActingPerson; draft?: boolean }): Promise<{ branch: string; pullRequest: { number: number; url: string } }>;
}

export const ports: AutopilotPorts = {
  emitProjectEvent: (projectId, event) => emitToBus(projectId, event),
  // The runtime puts the person's, the project's and the server's budgets here once it is made
  // (they need its stores); until then only the project's budget, checked beside this, limits.
  personBudgetState: async () => ({ ok: true }),
  buildTestLine: (build) => (build.test && build.test.trim() ? build.test : null),
  // The runtime puts the forges' publish here (it needs the runtime's forges).
  publishWorkspace: async () => {
    throw Object.assign(new Error('Publishing pull requests is not available on this server.'), { code: 'E_UNAVAILABLE' });
  },
};

/** Told of every change of a story's pipeline (the project's event stream). */
export function emitProjectEvent(projectId: string, event: { type: 'autopilot'; storyKey: string | null }): void {
  try {
    ports.emitProjectEvent(projectId, event);
  } catch {
    // An event is a nudge; the state is the store's.
  }
}

/** Whether a person's own monthly budget has room (runs count against who enabled the autopilot). */
export function personBudgetState(projectId: string, personId: string): Promise<BudgetState> {
  return ports.personBudgetState(projectId, personId);
}

/** The build settings' `test` line (one shell line, no network); null: none. */
export function buildTestLine(build: BuildSettings): string | null {
  return ports.buildTestLine(build);
}

/** Publishes a story's workspace as a pull request, as the person (pull-request mode). */
export function publishWorkspace(input: { projectId: string; workspaceId: string; by: ActingPerson; draft?: boolean }): ReturnType<AutopilotPorts['publishWorkspace']> {
  return ports.publishWorkspace(input);
}

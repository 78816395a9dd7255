/**
 * What the autopilot uses from parts built beside it, in one place: the lead rewires these when
 * the parts land (the forges' publish, the build settings' `test` line, the event bus, the
 * per-person budgets). Until then each stands in with what the server already has.
 */
import type { BuildSettings } from '../workspaces';

/** A person the autopilot acts as (who enabled it). */
export interface ActingPerson {
  id: string;
  name: string;
}

/** The build settings' `test` line (one shell line, no network); null: none. */
export function buildTestLine(build: BuildSettings): string | null {
  const line = (build as BuildSettings & { test?: unknown }).test;
  return typeof line === 'string' && line.trim() ? line : null;
}

/** Told of every change of a story's pipeline (the project's event stream). */
export function emitProjectEvent(projectId: string, event: { type: 'autopilot'; storyKey: string | null }): void {
  void projectId;
  void event;
}

/** Whether a person's own monthly budget has room (runs count against who enabled the autopilot). */
export async function personBudgetState(projectId: string, personId: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  void projectId;
  void personId;
  return { ok: true };
}

/** The pull request of a story's workspace, published as the person (pull-request mode). */
export interface PublishPort {
  publishWorkspace(input: { projectId: string; workspaceId: string; by: ActingPerson; draft?: boolean }): Promise<{ branch: string; pullRequest: { number: number; url: string } }>;
}

/** Until the forges' publish is wired in, pull-request mode has nothing to publish with. */
export const publishPort: PublishPort = {
  async publishWorkspace() {
    throw Object.assign(new Error('Publishing pull requests is not available on this server.'), { code: 'E_UNAVAILABLE' });
  },
};

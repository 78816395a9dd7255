import type { Caller } from '../core/access';
import { log } from '../core/log';
import { getRuntime } from '../engine/runtime';
import { publishWorkspace as publish, pullRequestOutcome, webLink, type PullRequestOutcome, type StoredPullRequest } from '../engine/remotes';
import type { PublishView, PullRequestView } from '../../types/api';
import { projectOf, type BodyOf } from './access';

/** A pull request as the API shows it; its links only http(s) ones, whatever a store or forge held. */
export function pullRequestView(pr: PullRequestOutcome): PullRequestView {
  return {
    number: pr.number,
    url: webLink(pr.url) ?? '',
    state: pr.state,
    ...(pr.draft !== undefined ? { draft: pr.draft } : {}),
    checks: pr.checks ? { state: pr.checks.state, checks: pr.checks.checks.map((c) => ({ name: c.name, state: c.state, ...(webLink(c.url) ? { url: webLink(c.url)! } : {}) })) } : null,
    ...(pr.updatedAt ? { updatedAt: pr.updatedAt } : {}),
    ...(pr.note ? { note: pr.note } : {}),
  };
}

/** The pull requests of a project's workspaces, by workspace id (the board's cards). */
export async function pullRequestsOf(projectId: string): Promise<Map<string, PullRequestView>> {
  const rows: StoredPullRequest[] = await getRuntime()
    .forges.store.list(projectId)
    .catch(() => []);
  return new Map(rows.map((r) => [r.workspaceId, pullRequestView(pullRequestOutcome(r))]));
}

/**
 * Publishes a workspace as a pull request into its base (owners and editors; 404 for whoever may
 * not see the project): its own branch pushed, one pull request opened or updated.
 */
export async function publishWorkspace(caller: Caller, projectId: string, workspaceId: string, body: BodyOf<{ draft?: boolean }>): Promise<PublishView> {
  const project = await projectOf(caller, projectId, 'write');
  const input = await body();
  const out = await publish(getRuntime(), { projectId: project.id, workspaceId, by: { id: caller.id, name: caller.name || caller.email || caller.id }, ...(input.draft !== undefined ? { draft: input.draft } : {}) });
  return { branch: out.branch, pullRequest: pullRequestView(out.pullRequest) };
}

/**
 * A forge's webhook delivery (POST /api/forge/:projectId/hook): no person's credentials; the
 * project's webhook secret is its proof (401 and nothing changed without it; 404 for a project
 * that does not exist or has no remote).
 */
export async function receiveForgeHook(projectId: string, headers: Headers, raw: () => Promise<Uint8Array>): Promise<{ duplicate: boolean; event?: string; changed?: boolean }> {
  const out = await getRuntime().forges.receive(projectId, headers, raw);
  if (out.duplicate) log.info('forge.hook_repeated', { project: projectId });
  return out;
}

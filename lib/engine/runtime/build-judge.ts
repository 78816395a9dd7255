import { log } from '../../core/log';
import type { ProjectCatalog } from '../../content/projects';
import type { BuildVerdict, Run } from '../runs';
import { buildResultOf, setStoryStatus, sprintProjectOf, type SprintActor } from '../sprint';
import type { WorkspaceService } from '../workspaces';
import type { RemoteService } from '../remotes';

const failed = (reason: string): BuildVerdict => ({ outcome: 'failed', status: null, reason, file: null });

/**
 * A build run's end, read from its workspace's checkout (or the project folder, for a run outside one) (the story's file, its specs, build-auto's
 * result file). A story run that came to done/review moves its story to `review` in the base
 * branch's sprint status here, before the run service writes the run's end: whoever sees the run
 * ended sees the board already moved. A status change refused (the project folder's own edits to
 * the file) is logged and leaves the run's result as the files say.
 */
export async function judgeBuildRun(deps: { projects: Pick<ProjectCatalog, 'get'>; workspaces: WorkspaceService; remotes?: Pick<RemoteService, 'sprintRemote'> }, run: Run, actor: SprintActor): Promise<BuildVerdict> {
  if (!run.storyKey) return failed('The run names no story, so its result cannot be read from a story file.');
  const project = await deps.projects.get(run.projectId);
  if (!project) return failed('The project is gone.');
  // A run in the project folder itself reads its files there.
  let sprint = sprintProjectOf(project, (await deps.workspaces.getBuild(project.id)).baseBranch);
  let root = project.root;
  if (run.workspaceId) {
    const ws = await deps.workspaces.store.get(run.workspaceId);
    if (!ws || ws.projectId !== project.id) return failed("The run's workspace is gone.");
    sprint = sprintProjectOf(project, ws.base);
    root = deps.workspaces.projectRootIn({ id: project.id, root: project.root }, ws);
  }
  const verdict = await buildResultOf({ root, artifacts: sprint.artifacts }, run.storyKey);
  if (verdict.outcome === 'complete') {
    // With a remote, the move is pushed there (lib/engine/sprint).
    const remote = deps.remotes ? await deps.remotes.sprintRemote({ id: project.id, root: project.root }).catch(() => null) : null;
    if (remote) sprint = { ...sprint, remote };
    await setStoryStatus(sprint, run.storyKey, 'review', actor).catch((e: unknown) => {
      log.warn('sprint.review_failed', { runId: run.id, story: run.storyKey, message: String((e as Error)?.message ?? e).slice(0, 200) });
    });
  }
  return verdict;
}

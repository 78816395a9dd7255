import { authorOf, type Caller } from '../core/access';
import { AppError, isAppError } from '../core/errors';
import { repositoryInfo } from '../sandbox/git';
import { log } from '../core/log';
import type { Project } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import type { SetupOutcome, Workspace, WorkspaceDetail, WorkspaceSummary } from '../engine/workspaces';
import type { RepositoryView, RunWorkspaceView, WorkspaceDetailView, WorkspaceDiffView, WorkspaceListItemView, WorkspaceMergeView, WorkspaceView } from '../../types/api';
import { committerOf, projectOf } from './access';
import { refuseDuringSetup, runWorkspaceSetup, setupStarting } from './setup';
import { appendOnlyFiles, applyWorkspaceStatusChanges, hasSprintStatus, readBoard, setStoryStatus, sprintNeutralHead, sprintProjectOf, storyFilesHead, type SprintProject } from '../engine/sprint';
import { sprintOfProject, workspaceStart } from './remotes';

const ref = (p: Project) => ({ id: p.id, root: p.root });

export function workspaceView(ws: Workspace): WorkspaceView {
  return {
    id: ws.id,
    name: ws.name,
    branch: ws.branch,
    base: ws.base,
    baseCommit: ws.baseCommit,
    status: ws.status,
    createdBy: ws.createdBy,
    setup: ws.setup ? { ...ws.setup } : null,
    ...mergedFields(ws),
    createdAt: ws.createdAt,
    updatedAt: ws.updatedAt,
  };
}

/** Where a merged workspace went: its commit, the base it was merged into, when, by whom. */
function mergedFields(ws: Workspace): Pick<WorkspaceView, 'mergedCommit' | 'mergedInto' | 'mergedAt' | 'mergedBy'> {
  if (!ws.mergedCommit) return {};
  return {
    mergedCommit: ws.mergedCommit,
    // Merged before the base was recorded: a workspace always merges into its base.
    mergedInto: ws.mergedInto ?? ws.base,
    ...(ws.mergedAt ? { mergedAt: ws.mergedAt } : {}),
    ...(ws.mergedBy ? { mergedBy: ws.mergedBy } : {}),
  };
}

/** A list's item: the workspace, its ahead/behind, and its setup's outcome without the output. */
function listItemView(ws: WorkspaceSummary): WorkspaceListItemView {
  const { setup, ...view } = workspaceView(ws);
  let summary: WorkspaceListItemView['setup'] = null;
  if (setup) {
    const { output: _output, ...rest } = setup;
    void _output;
    summary = rest;
  }
  return { ...view, ahead: ws.ahead, behind: ws.behind, setup: summary };
}

function detailView(ws: WorkspaceDetail): WorkspaceDetailView {
  return {
    ...workspaceView(ws),
    head: ws.head,
    ahead: ws.ahead,
    behind: ws.behind,
    files: ws.files.map((f) => ({ path: f.path, status: f.status, additions: f.additions, deletions: f.deletions })),
    commits: ws.commits.map((c) => ({ sha: c.sha, subject: c.subject, author: c.author, date: c.date })),
  };
}

/** The project folder's repository as the project view shows it: branch, head, clean; never its path. */
export async function repositoryView(project: { root: string }): Promise<RepositoryView | null> {
  const info = await repositoryInfo(project.root);
  return info ? { branch: info.branch, head: info.head, clean: info.clean } : null;
}

/**
 * Makes a workspace (owners and editors): a checkout of its own on `bmad/<name>`. The project's
 * setup line, when it has one, runs after the answer: the workspace answers with
 * `setup.status: "running"` until it is done, and no turn starts in it meanwhile.
 */
export async function createWorkspace(caller: Caller, projectId: string, input: { name: unknown }): Promise<WorkspaceView> {
  const project = await projectOf(caller, projectId, 'write');
  const rt = getRuntime();
  // With a remote, the base is fetched first and the workspace starts from the remote's head.
  const ws = await rt.workspaces.create(ref(project), { name: input.name, createdBy: caller.name || caller.email || caller.id, startAt: workspaceStart(project, caller) });
  const build = await rt.workspaces.getBuild(project.id);
  if (!build.setup) return workspaceView(ws);
  const running: SetupOutcome = setupStarting();
  const row = (await rt.workspaces.recordSetup(ws.id, running)) ?? { ...ws, setup: running };
  runWorkspaceSetup(ref(project), row, build);
  return workspaceView(row);
}

/** The project's workspaces, newest first, with ahead/behind and without setup outputs (whoever sees the project). */
export async function listWorkspaces(caller: Caller, projectId: string): Promise<WorkspaceListItemView[]> {
  const project = await projectOf(caller, projectId, 'read');
  return (await getRuntime().workspaces.summaries(ref(project))).map(listItemView);
}

/** One workspace with its head, ahead/behind, changed files, commits and setup outcome. */
export async function getWorkspace(caller: Caller, projectId: string, id: string): Promise<WorkspaceDetailView> {
  const project = await projectOf(caller, projectId, 'read');
  return detailView(await getRuntime().workspaces.get(ref(project), id));
}

/** The workspace's unified diff against its base (one file with `path`), at most 1 MB. */
export async function workspaceDiff(caller: Caller, projectId: string, id: string, opts: { path?: string }): Promise<WorkspaceDiffView> {
  const project = await projectOf(caller, projectId, 'read');
  const d = await getRuntime().workspaces.diff(ref(project), id, opts.path !== undefined ? { path: opts.path } : {});
  return { diff: d.diff, cut: d.cut, bytes: d.bytes };
}

/**
 * Merges the workspace into its base (owners and editors); a merge commit is the caller's. The
 * workspace's edits to the sprint status are taken first as status changes (one commit each in the
 * base), and the merged head carries the base's own file, so that file never conflicts. A story's
 * workspace that merges moves its story to `done` (its story files say `done` in the merged head);
 * one that conflicts leaves its story in `review`. Append-only files (deferred-work.md, the build
 * settings' `appendOnly`) merge as the union of both sides' lines.
 */
export async function mergeWorkspace(caller: Caller, projectId: string, id: string): Promise<WorkspaceMergeView> {
  const project = await projectOf(caller, projectId, 'write');
  const rt = getRuntime();
  refuseDuringSetup(await rt.workspaces.find(ref(project), id), rt.config.commands.timeoutMs);
  const person = committerOf(caller);
  // A stale git lock or a branch its clone could not be brought to refuses the merge before the
  // sprint status changes are taken.
  await rt.workspaces.readyToMerge(ref(project), id);
  const sprint = await sprintOfWorkspace(project, id, person);
  // Push mode: the base caught up with the remote first, the merge pushed before the base moves.
  const pushed = await rt.workspaces.find(ref(project), id).then((ws) => rt.remotes.pushModeMerge(ref(project), ws.base));
  const build = await rt.workspaces.getBuild(project.id);
  const appendOnly = appendOnlyFiles(sprintProjectOf(project, build.baseBranch), build.appendOnly);
  const headFor = sprint
    ? async (head: string) => {
        const neutral = await sprintNeutralHead(sprint.project, head, person);
        // The story merged as done: its own files say so too.
        return sprint.story ? storyFilesHead(sprint.project, neutral, sprint.story, 'done', person) : neutral;
      }
    : undefined;
  const m = await rt.workspaces
    .merge(ref(project), id, person, { appendOnly, ...(headFor ? { headFor } : {}), ...(pushed ? { publish: pushed.publish } : {}) })
    .catch(async (e: unknown) => {
      if (isAppError(e) && e.code === 'E_MERGE_CONFLICT') {
        if (sprint?.story) await storyTo(sprint.project, sprint.story, 'review', person, true);
        // The conflicting paths are part of the answer (repository-relative; never a server path).
        throw new AppError(e.code, e.message, { ...e.details, response: { paths: e.details?.paths ?? [] } });
      }
      throw e;
    });
  if (sprint?.story) await storyTo(sprint.project, sprint.story, 'done', person, false);
  log.info('workspace.merged', { project: project.id, workspace: id, fastForward: m.fastForward, by: authorOf(caller) });
  return { workspace: workspaceView(m.workspace), commit: m.commit, fastForward: m.fastForward, checkoutUpdated: m.checkoutUpdated };
}

/** The story a workspace was made for: the story of the runs the board started in it. */
async function storyOf(projectId: string, workspaceId: string): Promise<string | null> {
  const runs = await getRuntime().runs.store.storyRuns(projectId);
  return runs.find((r) => r.workspaceId === workspaceId)?.storyKey ?? null;
}

/**
 * Before a merge: the workspace's sprint status edits applied to its base as status changes, by
 * the person merging. Null when the base has no sprint status (nothing to keep apart).
 */
async function sprintOfWorkspace(project: Project, id: string, person: { name: string; email: string }): Promise<{ project: SprintProject; story: string | null } | null> {
  const rt = getRuntime();
  const ws = await rt.workspaces.find(ref(project), id);
  if (ws.status !== 'open') return null;
  const sprint = await sprintOfProject(project, ws.base);
  if (!(await hasSprintStatus(sprint).catch(() => false))) return null;
  await rt.workspaces.syncOrRefuse(ref(project), ws);
  const story = await storyOf(project.id, ws.id);
  const { applied, ignored } = await applyWorkspaceStatusChanges(sprint, ws.branch, person);
  if (applied.length || ignored.length) log.info('workspace.sprint_changes', { project: project.id, workspace: ws.id, applied: applied.filter((c) => c.changed).length, ignored: ignored.length });
  return { project: sprint, story };
}

/** A story moved after a merge (or its conflict); a move the base refuses is logged, the merge's answer stands. */
async function storyTo(sprint: SprintProject, key: string, status: string, person: { name: string; email: string }, onlyPast: boolean): Promise<void> {
  try {
    // After a conflict the story stays where review put it; a story a person moved back is not pushed forward.
    if (onlyPast) {
      const board = await readBoard(sprint);
      const now = board.epics.flatMap((e) => e.stories).find((s) => s.key === key)?.status;
      if (now !== 'done') return;
    }
    await setStoryStatus(sprint, key, status, person);
  } catch (e) {
    log.warn('workspace.story_move_failed', { story: key, to: status, message: String((e as Error)?.message ?? e).slice(0, 200) });
  }
}

/** Discards the workspace's checkout and branch (owners and editors). */
export async function discardWorkspace(caller: Caller, projectId: string, id: string): Promise<WorkspaceView> {
  const project = await projectOf(caller, projectId, 'write');
  refuseDuringSetup(await getRuntime().workspaces.find(ref(project), id), getRuntime().config.commands.timeoutMs);
  return workspaceView(await getRuntime().workspaces.discard(ref(project), id));
}

/**
 * The workspace a headless run is to run in: `workspaceId` (an open one of the project), or a new
 * one made with `workspace.name` (its setup runs first; the run waits for it). Owners and editors.
 */
export async function workspaceForRun(caller: Caller, projectId: string, input: { workspaceId?: string; workspace?: { name: unknown } }): Promise<string | undefined> {
  if (input.workspaceId !== undefined && input.workspace !== undefined) throw new AppError('E_VALIDATION', 'Give workspaceId or workspace, not both.', { field: 'workspace' });
  if (input.workspace !== undefined) return (await createWorkspace(caller, projectId, input.workspace)).id;
  if (input.workspaceId === undefined) return undefined;
  const project = await projectOf(caller, projectId, 'write');
  const ws = await getRuntime().workspaces.find(ref(project), input.workspaceId);
  if (ws.status !== 'open') throw new AppError('E_CONFLICT', `Workspace "${ws.name}" is ${ws.status}; agents work only in open workspaces.`, { field: 'workspaceId' });
  return ws.id;
}

/** What a run's view says of the workspace it worked in (the caller was allowed the run). */
export async function runWorkspaceView(projectId: string, id: string): Promise<RunWorkspaceView | null> {
  const project = await getRuntime().projects.get(projectId);
  if (!project) return null;
  try {
    const d = await getRuntime().workspaces.get(ref(project), id);
    return { id: d.id, branch: d.branch, ahead: d.ahead, files: d.files.map((f) => ({ path: f.path, status: f.status, additions: f.additions, deletions: f.deletions })) };
  } catch (e) {
    if (isAppError(e)) return null;
    throw e;
  }
}

import path from 'node:path';
import type { Caller } from '../core/access';
import { AppError, isAppError } from '../core/errors';
import { log } from '../core/log';
import { withFileLock } from '../core/paths';
import type { Project } from '../content/projects';
import { runBudgetProblem } from '../store/budgets';
import { buildTarget, type Run } from '../engine/runs';
import { getRuntime } from '../engine/runtime';
import { classifyKey, readBoard, setStoryStatus, validateChange, type Board, type BoardStory, type SprintProject } from '../engine/sprint';
import { MAX_NAME } from '../engine/workspaces/names';
import type { Workspace } from '../engine/workspaces';
import type { BoardStoryView, BoardView, DecisionView, SpendView, StoryStartView } from '../../types/api';
import { committerOf, projectOf, type BodyOf } from './access';
import { createWorkspace, discardWorkspace } from './workspaces';
import { assertBudget } from './budgets';
import { listDecisions } from './decisions';
import { freshenForBoard, sprintOfProject } from './remotes';
import { pullRequestsOf } from './forges';
import type { PullRequestView } from '../../types/api';
import { pipelineView } from './presenters/autopilot';

const storyNotFound = () => new AppError('E_STORY_NOT_FOUND', 'Story not found.');

/** The project's sprint as the base branch of its build settings holds it. */
async function sprintOf(project: Project): Promise<SprintProject> {
  return sprintOfProject(project);
}

/** What the runs the app made for stories say of each story: its latest run, its workspace, its spend. */
interface StoryWork {
  latest: Run;
  spend: SpendView;
}

function workByStory(runs: Run[]): Map<string, StoryWork> {
  const out = new Map<string, StoryWork>();
  // Newest first: the first run seen of a story is its latest.
  for (const run of runs) {
    if (!run.storyKey) continue;
    let w = out.get(run.storyKey);
    if (!w) out.set(run.storyKey, (w = { latest: run, spend: { tokens: 0, usd: 0 } }));
    const tokens = run.usage.promptTokens + run.usage.completionTokens;
    w.spend.tokens += tokens;
    if (run.cost !== undefined && w.spend.usd !== null) w.spend.usd += run.cost;
    else if (tokens > 0) w.spend.usd = null;
  }
  return out;
}

async function storyView(story: BoardStory, work: StoryWork | undefined, workspaces: Map<string, Workspace | null>, pullRequests?: Map<string, PullRequestView>): Promise<BoardStoryView> {
  const view: BoardStoryView = { key: story.key, title: story.title, status: story.status, file: story.file };
  if (!work) return view;
  view.run = { id: work.latest.id, status: work.latest.status };
  view.spend = work.spend;
  const wid = work.latest.workspaceId;
  if (wid) {
    if (!workspaces.has(wid)) workspaces.set(wid, await getRuntime().workspaces.store.get(wid));
    const ws = workspaces.get(wid);
    if (ws) view.workspace = { id: ws.id, branch: ws.branch, status: ws.status };
    const pr = ws ? pullRequests?.get(ws.id) : undefined;
    if (pr) view.pullRequest = pr;
  }
  return view;
}

async function viewOf(caller: Caller, project: Project, board: Board): Promise<BoardView> {
  const work = workByStory(await getRuntime().runs.store.storyRuns(project.id));
  // Where the autopilot has each story it took.
  const pipeline = new Map((await getRuntime().autopilot.store.stories(project.id)).map((r) => [r.storyKey, pipelineView(r)]));
  const workspaces = new Map<string, Workspace | null>();
  const pullRequests = await pullRequestsOf(project.id);
  const epics = [];
  for (const e of board.epics) {
    const stories = [];
    for (const s of e.stories) {
      const view = await storyView(s, work.get(s.key), workspaces, pullRequests);
      const step = pipeline.get(s.key);
      stories.push(step ? { ...view, pipeline: step } : view);
    }
    epics.push({ key: e.key, status: e.status, retrospective: e.retrospective, stories });
  }
  const remote = await getRuntime()
    .remotes.get(project.id)
    .catch(() => null);
  return {
    source: board.source,
    epics,
    decisions: await listDecisions(caller, project.id),
    ...(board.uncommitted ? { uncommitted: true } : {}),
    ...(remote?.forge && remote.mode === 'pull-request' ? { pullRequests: { forge: remote.forge } } : {}),
  };
}

/**
 * The sprint board (whoever sees the project): the base branch's `sprint-status.yaml`, each story
 * with its title and file, and its latest run, workspace and spend from the runs made for it. A
 * project without a sprint status (or not in git) has no epics: sprint planning makes one.
 */
export async function getBoard(caller: Caller, projectId: string): Promise<BoardView> {
  const project = await projectOf(caller, projectId, 'read');
  let board: Board;
  try {
    // With a remote, the board reads what was fetched: fetched now unless that was moments ago.
    await freshenForBoard(project);
    board = await readBoard(await sprintOf(project));
  } catch (e) {
    if (isAppError(e) && e.code === 'E_NOT_A_REPOSITORY') return { source: null, epics: [], decisions: [] };
    throw e;
  }
  return viewOf(caller, project, board);
}

function findStory(board: Board, key: string): BoardStory | null {
  for (const e of board.epics) for (const s of e.stories) if (s.key === key) return s;
  return null;
}

/** One story of the board as it is now, with its run, workspace and spend. */
async function currentStory(project: Project, sprint: SprintProject, key: string): Promise<BoardStoryView> {
  const story = findStory(await readBoard(sprint), key);
  if (!story) throw storyNotFound();
  const work = workByStory((await getRuntime().runs.store.storyRuns(project.id)).filter((r) => r.storyKey === key));
  return storyView(story, work.get(key), new Map(), await pullRequestsOf(project.id));
}

/**
 * Moves a story (owners and editors): only that key changes in the base branch's sprint status,
 * one commit by the person. A status the key cannot have is a 400; an unknown story a 404.
 */
export async function moveStory(caller: Caller, projectId: string, key: string, body: BodyOf<{ status: string }>): Promise<BoardStoryView> {
  const project = await projectOf(caller, projectId, 'write');
  const change = validateChange(key, (await body()).status);
  if (classifyKey(change.key)?.kind !== 'story') throw storyNotFound();
  const sprint = await sprintOf(project);
  await setStoryStatus(sprint, change.key, change.status, committerOf(caller));
  return currentStory(project, sprint, change.key);
}

export interface StartInput {
  skill?: string;
  model?: string;
  inputs?: string;
  budget?: { tokens?: number; usd?: number };
}

/** Starts of one story made by this process, so two at once cannot both pass the busy check. */
const starting = new Set<string>();

/** `1-2-account-management` → a workspace name (the name rules of workspaces), with `-2`, `-3`... on a collision. */
function workspaceName(key: string, attempt: number): string {
  const suffix = attempt ? `-${attempt + 1}` : '';
  const base = key.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/\.{2,}/g, '.').replace(/^[.-]+/, '').slice(0, MAX_NAME - suffix.length).replace(/[.-]+$/, '');
  return `${base || 'story'}${suffix}`;
}

const NAME_ATTEMPTS = 20;

async function storyWorkspace(caller: Caller, project: Project, key: string): Promise<{ id: string; branch: string }> {
  for (let attempt = 0; attempt < NAME_ATTEMPTS; attempt++) {
    try {
      const ws = await createWorkspace(caller, project.id, { name: workspaceName(key, attempt) });
      return { id: ws.id, branch: ws.branch };
    } catch (e) {
      if (isAppError(e) && e.code === 'E_CONFLICT' && e.details?.field === 'name') continue;
      throw e;
    }
  }
  throw new AppError('E_CONFLICT', `Every workspace name tried for story "${key}" is taken; discard old workspaces of the story.`);
}

function checkBudget(budget: StartInput['budget']): void {
  const problem = runBudgetProblem(budget);
  if (problem) throw new AppError('E_VALIDATION', problem.message, { field: problem.field });
}

/**
 * Starts building a story (owners and editors): a new workspace named after the story, a headless
 * run in it with the project's build skill (or `skill`), and the story `in-progress` in the base
 * branch at once. Everything that can refuse the start is checked before anything is made; what
 * was made is undone when a later step fails, so a refused start leaves nothing behind.
 */
export async function startStory(caller: Caller, projectId: string, key: string, body: BodyOf<StartInput>): Promise<StoryStartView> {
  const project = await projectOf(caller, projectId, 'write');
  const input = await body();
  if (classifyKey(key)?.kind !== 'story') throw storyNotFound();
  const lock = `${project.id}\0${key}`;
  if (starting.has(lock)) throw new AppError('E_STORY_BUSY', `Story "${key}" is being started.`);
  starting.add(lock);
  // The check that no run builds the story and the run's making are one step on every instance: a
  // start on another instance waits here, then finds this one's run and is refused.
  try {
    return await withFileLock(path.join(project.root, '.story-start', key), () => startLocked(caller, project, key, input));
  } finally {
    starting.delete(lock);
  }
}

async function startLocked(caller: Caller, project: Project, key: string, input: StartInput): Promise<StoryStartView> {
  const rt = getRuntime();
  const build = await rt.workspaces.getBuild(project.id);
  if (!build.enabled) throw new AppError('E_BUILD_DISABLED', 'Build is not enabled for this project.');
  const sprint = await sprintOfProject(project, build.baseBranch);
  const board = await readBoard(sprint);
  const story = findStory(board, key);
  if (!story) throw storyNotFound();
  if (board.uncommitted) throw new AppError('E_BASE_DIRTY', 'The project folder has uncommitted changes to the sprint status; commit or discard them first.');
  const busy = (await rt.runs.store.storyRuns(project.id)).find((r) => r.storyKey === key && (r.status === 'queued' || r.status === 'running'));
  if (busy) throw new AppError('E_STORY_BUSY', `Story "${key}" has a ${busy.status} run (${busy.id}).`, { response: { runId: busy.id } });
  if (input.model !== undefined && !rt.config.models.profiles.has(input.model)) {
    throw new AppError('E_VALIDATION', `Unknown model profile "${input.model}". GET /api/models lists them.`, { field: 'model' });
  }
  checkBudget(input.budget);
  await assertBudget(project.id, caller.id);
  await buildTarget(rt.projects, project, input.skill);

  const person = committerOf(caller);
  const ws = await storyWorkspace(caller, project, key);
  const undoWorkspace = () => discardWorkspace(caller, project.id, ws.id).catch((e: unknown) => log.warn('board.undo_failed', { workspace: ws.id, message: String((e as Error)?.message ?? e).slice(0, 200) }));
  let moved = false;
  try {
    moved = (await setStoryStatus(sprint, key, 'in-progress', person)).changed;
    const { run } = await rt.runs.submit({
      projectId: project.id,
      ownerId: caller.id,
      skill: input.skill ?? '',
      inputs: input.inputs ?? '',
      ...(input.model ? { model: input.model } : {}),
      workspaceId: ws.id,
      ...(input.budget ? { budget: input.budget } : {}),
      story: { key, file: story.file, artifacts: sprint.artifacts },
    });
    log.info('board.story_started', { project: project.id, story: key, run: run.id, workspace: ws.id });
    return { runId: run.id, workspace: ws };
  } catch (e) {
    await undoWorkspace();
    if (moved && story.status) await setStoryStatus(sprint, key, story.status, person).catch(() => undefined);
    throw e;
  }
}

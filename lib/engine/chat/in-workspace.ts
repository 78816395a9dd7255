import fs from 'node:fs';
import path from 'node:path';
import type { ResolvedAgent } from '../../content/agents';
import { isInside } from '../../core/paths';
import type { CommandContext } from '../tools';
import type { Config } from '../../core/config';
import { AppError } from '../../core/errors';
import type { ProjectCatalog } from '../../content/projects';
import { log } from '../../core/log';
import { readBoard, sprintProjectOf, titleFromKey } from '../sprint';
import type { BuildSettings, Person, ProjectRef, SyncResult, Workspace, WorkspaceService } from '../workspaces';

/** What the turn's end knows of the turn: its commit is titled and described from it. */
export interface EndedTurn {
  /** The agent's id (`bmad-agent-dev`). */
  agent: string;
  conversationId: string;
  /** The user message the turn answered (its request). */
  request: string;
  /** The stored id of that message. */
  turnId?: string;
}

/** What the turn's end has to tell: server notes for the conversation (the model reads them next turn). */
export interface TurnEndReport {
  notes: string[];
}

/** A story a run builds, as its commits name it. */
export interface StoryRef {
  key: string;
  title: string;
}

/**
 * A turn in a workspace: the one override of where a project's agent works. `{project-root}`
 * is the project's folder inside the workspace's checkout; every file tool, the method's scripts
 * and run_command act there, and the project folder and other workspaces stay untouched.
 */
export interface TurnWorkspace {
  id: string;
  /** The project folder (server path) whose places move into the checkout. */
  projectFolder: string;
  /** `{project-root}` inside the checkout (server path). */
  projectRoot: string;
  /** The workspace's temp folder: the sandbox's /tmp, read back as `{tmp}`. */
  tmpRoot: string;
  /** Set when the project has build enabled: run_command is offered and runs in the checkout. */
  commands?: CommandContext;
  /**
   * Called once the turn has ended, however it ended: commits what it left (titled after the story
   * or the request) and syncs the branch; says what the sync left out or refused.
   */
  end(turn?: EndedTurn): Promise<TurnEndReport>;
}

/** The agent as it works in the workspace: the project's places moved into the checkout. */
export function inCheckout(resolved: ResolvedAgent, tw: TurnWorkspace): ResolvedAgent {
  const ws = resolved.workspace;
  const moved = (p: string) => (isInside(tw.projectFolder, p) ? path.join(tw.projectRoot, path.relative(tw.projectFolder, p)) : p);
  // The method is read where the checkout has it; a method left out of the repository is read from the project.
  const method = (p: string) => {
    const m = moved(p);
    return m !== p && fs.existsSync(m) ? m : p;
  };
  const outputRoot = ws.outputRoot;
  return {
    ...resolved,
    workspace: {
      ...ws,
      bundleRoot: method(ws.bundleRoot),
      coreRoot: method(ws.coreRoot),
      projectRoot: tw.projectRoot,
      outputRoot: (conversationId) => moved(outputRoot(conversationId)),
      writable: ws.writable ?? [],
      inCheckout: true,
    },
  };
}

/** A workspace's own temp folder (the sandbox's /tmp and HOME): beside the checkouts, never in one. */
export function workspaceTmp(workspacesRoot: string, ws: Pick<Workspace, 'id'>): string {
  return path.join(workspacesRoot, '.tmp', ws.id);
}

const MAX_TITLE = 100;
const MAX_REQUEST = 60;

/** One line of text: control characters and runs of blanks become one space. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim();
}

/** Cut at `max` characters on a word where one is near, with an ellipsis. */
function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** `1-2-flag-from-name` → `1-2`; another key as it is. */
function storyNumber(key: string): string {
  const m = /^(\d+)-(\d+)(?:-|$)/.exec(key);
  return m ? `${m[1]}-${m[2]}` : key;
}

/**
 * The turn's commit message: a title naming the story a run builds (`Story 1-2: flagFromName
 * helper — bmad-agent-dev`), else the request's first line, shortened, with the agent; one line,
 * at most 100 characters. The body names the conversation and the turn.
 */
export function turnCommitMessage(turn: EndedTurn | undefined, story?: StoryRef | null): string {
  const agent = shorten(oneLine(turn?.agent ?? ''), 40);
  const by = agent ? ` — ${agent}` : '';
  const room = Math.max(20, MAX_TITLE - by.length);
  let title: string;
  if (story) {
    const head = `Story ${oneLine(storyNumber(story.key))}`;
    const name = oneLine(story.title);
    title = shorten(name ? `${head}: ${name}` : head, room);
  } else {
    const first = oneLine((turn?.request ?? '').split(/\r?\n/).find((l) => l.trim()) ?? '');
    title = first ? shorten(first, Math.min(room, MAX_REQUEST)) : 'Agent turn';
  }
  const body = [
    ...(story ? [`Story: ${oneLine(story.key).slice(0, 200)}`] : []),
    ...(turn ? [`Conversation: ${oneLine(turn.conversationId).slice(0, 200)}`] : []),
    ...(turn?.turnId ? [`Turn: ${oneLine(turn.turnId).slice(0, 200)}`] : []),
    ...(turn?.agent ? [`Agent: ${oneLine(turn.agent).slice(0, 200)}`] : []),
  ];
  return body.length ? `${title}${by}\n\n${body.join('\n')}\n` : `${title}${by}\n`;
}

/** What a turn's sync has to tell the conversation: method changes left out, a branch not carried. */
export function syncNotes(sync: SyncResult, branch: string): string[] {
  const notes: string[] = [];
  if (sync.dropped) {
    const d = sync.dropped;
    const paths = d.paths.map((p) => `\`${p}\``).join(', ') + (d.more ? ', …' : '');
    notes.push(
      `${d.commits} commit(s) of this workspace changed the installed BMAD method (${paths}). The method is read-only: those changes were left out of the project's branch ${branch}, whose commits carry the rest of the work with the method as the base has it. Do not change _bmad/ or the skill folders (the render folder _bmad/render/ is yours).`,
    );
  }
  if (sync.refused) notes.push(`The workspace's work was not carried to the project's branch ${branch}: ${sync.refused.message}`);
  return notes;
}

/**
 * The turn's place in a workspace: the checkout, the commands (build is on for every workspace
 * that can be found), and at the turn's end the commit of what the turn left, by the person the
 * turn is for, and the one sync of its branch (readers sync before they read: nothing is synced
 * after each command).
 */
export function workspaceTurn(
  deps: { workspaces: WorkspaceService; config: Pick<Config, 'commands' | 'workspacesRoot'> },
  project: ProjectRef,
  ws: Workspace,
  build: BuildSettings,
  person: Person,
  opts: { story?: () => Promise<StoryRef | null> } = {},
): TurnWorkspace {
  const tmpRoot = workspaceTmp(deps.config.workspacesRoot, ws);
  fs.mkdirSync(tmpRoot, { recursive: true });
  return {
    id: ws.id,
    projectFolder: project.root,
    projectRoot: deps.workspaces.projectRootIn(project, ws),
    tmpRoot,
    ...(build.enabled ? { commands: { checkout: deps.workspaces.checkoutPath(ws), settings: deps.config.commands, env: build.env, gitIdentity: person } } : {}),
    end: async (turn) => {
      const story = opts.story ? await opts.story().catch(() => null) : null;
      const sync = await deps.workspaces.sync(project, ws, { commit: { ...person, message: turnCommitMessage(turn, story) } });
      return { notes: syncNotes(sync, ws.branch) };
    },
  };
}

/** The story `key` as the base branch's sprint board names it (its key made a title when the board has none). */
async function storyOfBoard(project: Parameters<typeof sprintProjectOf>[0], base: string, key: string): Promise<StoryRef> {
  try {
    const board = await readBoard(sprintProjectOf(project, base));
    const story = board.epics.flatMap((e) => e.stories).find((s) => s.key === key);
    if (story?.title) return { key, title: story.title };
  } catch (e) {
    log.warn('workspace.story_title_failed', { story: key.slice(0, 100), message: String((e as Error)?.message ?? e).slice(0, 200) });
  }
  return { key, title: titleFromKey(key) };
}

/** The app's own git identity: commits of the single-user mode (AUTH=off), where there is no person to name. */
export const APP_IDENTITY: Person = Object.freeze({ name: 'BMAD Orchestrator', email: 'bmad@localhost' });

/**
 * The place of a headless run in its workspace: an open one, after its setup (a run queued right
 * after the workspace was made waits for the setup, which no turn may run beside).
 */
export async function placeForRun(
  deps: { workspaces: WorkspaceService; config: Pick<Config, 'commands' | 'workspacesRoot'>; projects: Pick<ProjectCatalog, 'get'> },
  run: { projectId: string; workspaceId: string; storyKey?: string },
  person: Person,
): Promise<TurnWorkspace> {
  const project = await deps.projects.get(run.projectId);
  if (!project) throw new AppError('E_PROJECT_NOT_FOUND', `No project with id "${run.projectId}".`);
  const ref = { id: project.id, root: project.root };
  let ws = await deps.workspaces.find(ref, run.workspaceId);
  const until = Date.now() + deps.config.commands.timeoutMs + 60_000;
  while (ws.setup?.status === 'running' && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 500));
    ws = await deps.workspaces.find(ref, run.workspaceId);
  }
  if (ws.status !== 'open') throw new AppError('E_CONFLICT', `Workspace "${ws.name}" is ${ws.status}; agents work only in open workspaces.`);
  const storyKey = run.storyKey;
  const base = ws.base;
  return workspaceTurn(deps, ref, ws, await deps.workspaces.getBuild(project.id), person, storyKey ? { story: () => storyOfBoard(project, base, storyKey) } : {});
}

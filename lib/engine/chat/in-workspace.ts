import fs from 'node:fs';
import path from 'node:path';
import type { ResolvedAgent } from '../../content/agents';
import { isInside } from '../../core/paths';
import type { CommandContext } from '../tools';
import type { Config } from '../../core/config';
import { AppError } from '../../core/errors';
import type { ProjectCatalog } from '../../content/projects';
import type { BuildSettings, Person, ProjectRef, Workspace, WorkspaceService } from '../workspaces';

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
  /** Called once the turn has ended, however it ended: commits what it left and syncs the branch. */
  end(): Promise<void>;
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

/**
 * The turn's place in a workspace: the checkout, the commands (build is on for every workspace
 * that can be found), the sync after every command, and at the turn's end the commit of what
 * the file tools left, by the person the turn is for.
 */
export function workspaceTurn(
  deps: { workspaces: WorkspaceService; config: Pick<Config, 'commands' | 'workspacesRoot'> },
  project: ProjectRef,
  ws: Workspace,
  build: BuildSettings,
  person: Person,
): TurnWorkspace {
  const tmpRoot = workspaceTmp(deps.config.workspacesRoot, ws);
  fs.mkdirSync(tmpRoot, { recursive: true });
  const sync = async () => {
    await deps.workspaces.sync(project, ws);
  };
  return {
    id: ws.id,
    projectFolder: project.root,
    projectRoot: deps.workspaces.projectRootIn(project, ws),
    tmpRoot,
    ...(build.enabled
      ? { commands: { checkout: deps.workspaces.checkoutPath(ws), settings: deps.config.commands, env: build.env, gitIdentity: person, afterCommand: sync } }
      : {}),
    end: async () => {
      await deps.workspaces.sync(project, ws, { commit: { ...person, message: 'Changes of an agent turn' } });
    },
  };
}

/** The app's own git identity: commits of the single-user mode (AUTH=off), where there is no person to name. */
export const APP_IDENTITY: Person = Object.freeze({ name: 'BMAD Orchestrator', email: 'bmad@localhost' });

/**
 * The place of a headless run in its workspace: an open one, after its setup (a run queued right
 * after the workspace was made waits for the setup, which no turn may run beside).
 */
export async function placeForRun(
  deps: { workspaces: WorkspaceService; config: Pick<Config, 'commands' | 'workspacesRoot'>; projects: Pick<ProjectCatalog, 'get'> },
  run: { projectId: string; workspaceId: string },
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
  return workspaceTurn(deps, ref, ws, await deps.workspaces.getBuild(project.id), person);
}

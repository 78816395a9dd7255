import type { Caller } from '../access';
import { workspaceTurn, type TurnWorkspace } from '../chat';
import { isValidConversationId } from '../conversations';
import { AppError } from '../errors';
import type { Project } from '../projects';
import { getRuntime } from '../runtime';
import type { Person, Workspace } from '../workspaces';
import { committerOf, projectOf } from './access';
import { setupOf } from './setup';

/** A setup still `running` in the store that no process runs any more (its server went down) blocks nothing past this. */
const STALE_SETUP_MS = 60_000;

/** Refuses a workspace a turn cannot run in: merged, discarded, or still running its setup. */
function usable(ws: Workspace, timeoutMs: number): void {
  if (ws.status !== 'open') throw new AppError('E_CONFLICT', `Workspace "${ws.name}" is ${ws.status}; agents work only in open workspaces.`, { field: 'workspaceId' });
  if (ws.setup?.status !== 'running') return;
  const stale = !setupOf(ws.id) && Date.now() - Date.parse(ws.setup.at) > timeoutMs + STALE_SETUP_MS;
  if (!stale) throw new AppError('E_CONFLICT', `Workspace "${ws.name}" is still running its setup; try again when it is done (GET .../workspaces/${ws.id} shows it).`, { field: 'workspaceId' });
}

/** The turn's place in a workspace of `project`, for the person it is for. */
export async function placeIn(project: Project, ws: Workspace, person: Person): Promise<TurnWorkspace> {
  const rt = getRuntime();
  usable(ws, rt.config.commands.timeoutMs);
  const build = await rt.workspaces.getBuild(project.id);
  return workspaceTurn(rt, { id: project.id, root: project.root }, ws, build, person);
}

/**
 * Where a chat turn runs: the workspace named by `workspaceId`, or the one its conversation
 * remembers; none for the project folder. A workspace of a project the caller cannot write in,
 * of another project, or unknown is a 404 like the project's; build off is a 409.
 */
export async function turnWorkspace(caller: Caller, target: { projectId?: string; conversationId?: string; workspaceId?: string }): Promise<TurnWorkspace | undefined> {
  const rt = getRuntime();
  let projectId = target.projectId;
  let workspaceId = target.workspaceId;
  if (workspaceId === undefined && target.conversationId && isValidConversationId(target.conversationId)) {
    const conversation = await rt.store.get(target.conversationId);
    // Access to the conversation itself is decided by the turn's own check; only its place is read here.
    if (conversation?.workspaceId && conversation.projectId) {
      workspaceId = conversation.workspaceId;
      projectId = conversation.projectId;
    }
  }
  if (workspaceId === undefined) return undefined;
  if (!projectId) throw new AppError('E_VALIDATION', 'workspaceId needs the projectId of its project.', { field: 'projectId' });
  const project = await projectOf(caller, projectId, 'write');
  const ws = await rt.workspaces.find({ id: project.id, root: project.root }, workspaceId);
  return placeIn(project, ws, committerOf(caller));
}

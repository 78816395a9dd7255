import { authorOf, roleAllows, type Caller, type Need, type ProjectRole } from '../core/access';
import type { Accounts } from '../store/auth';
import { isValidConversationId, type Conversation } from '../store/conversations';
import { AppError } from '../core/errors';
import type { Project } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import { APP_IDENTITY } from '../engine/chat';

export { APP_IDENTITY };

export const projectNotFound = (id: string) =>
  new AppError('E_PROJECT_NOT_FOUND', `No project with id "${String(id).slice(0, 80)}". GET /api/projects lists the projects.`);

/**
 * The project `id` as the caller may use it for `need`: E_PROJECT_NOT_FOUND when it does not
 * exist or the caller may not see it (a token limited to other projects included: the policy
 * answers no role), E_FORBIDDEN when they see it but their role does not allow `need`.
 */
export async function projectOf(caller: Caller, id: string, need: Need = 'read'): Promise<Project> {
  const rt = getRuntime();
  const project = await rt.projects.get(id);
  if (!project) throw projectNotFound(id);
  const role = await rt.access.projectRole(caller, project.id);
  if (!role) throw projectNotFound(id);
  if (!roleAllows(role, need)) throw new AppError('E_FORBIDDEN', `Your role in project "${project.id}" (${role}) does not allow this.`);
  return project;
}

/** Who commits for a caller: the person (merges, turn ends); the app itself in the single-user mode. */
export function committerOf(caller: Caller): { name: string; email: string } {
  if (caller.kind === 'local') return APP_IDENTITY;
  return { name: caller.name || caller.email || caller.id, email: caller.email || `${caller.id}@users.bmad.invalid` };
}

export const conversationNotFound = (id: string) => new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${id.slice(0, 80)}".`);

/**
 * The conversation `id` as the caller may use it for `need`: E_CONVERSATION_NOT_FOUND when it does
 * not exist or the caller may not read it (never a 403: a private conversation does not leak),
 * E_FORBIDDEN when they read it but may not do `need` with it.
 */
export async function conversationOf(caller: Caller, id: string, need: Need = 'read'): Promise<Conversation> {
  const rt = getRuntime();
  const conversation = isValidConversationId(id) ? await rt.store.get(id) : null;
  if (!conversation) throw conversationNotFound(id);
  if (await rt.access.conversation(caller, conversation, need)) return conversation;
  if (need === 'read' || !(await rt.access.conversation(caller, conversation, 'read'))) throw conversationNotFound(id);
  throw readOnly(caller, conversation);
}

/** A write into a conversation the caller reads but may not write in: a 403 saying so. */
function readOnly(caller: Caller, conversation: { ownerId?: string; projectId?: string }): AppError {
  if (conversation.ownerId === caller.id) {
    return new AppError('E_FORBIDDEN', `You can read this conversation but no longer write in it: your role in project "${conversation.projectId}" does not allow chatting.`);
  }
  return new AppError('E_FORBIDDEN', 'You can read this conversation but not write in it (it is someone else\'s); continue in a copy.');
}

/** The owner fields a turn's new conversation, its user message and its versions take. */
export interface TurnOwner {
  ownerId?: string;
  author?: string;
  messageAuthor?: { id: string; name: string };
}

/**
 * Whether the caller may chat there, for every way in (POST /api/chat, the MCP chat tool): a
 * token limited to projects chats in them only (a bundle's conversation would be out of its
 * reach), and a turn writes, so the caller must be allowed to chat in the project and on the
 * conversation (its owner only: 403 for one who reads it, 404 for one who does not).
 */
export async function turnAccess(caller: Caller, target: { projectId?: string; conversationId?: string }): Promise<TurnOwner> {
  if (target.conversationId && !isValidConversationId(target.conversationId)) throw conversationNotFound(target.conversationId);
  if (caller.projectIds && !target.projectId) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects: give one of them as projectId.');
  if (target.projectId) await projectOf(caller, target.projectId, 'write');
  if (target.conversationId) await conversationOf(caller, target.conversationId, 'write');
  // A token's words are its owner's: the message names the person, not the token.
  return caller.kind !== 'local' ? { ownerId: caller.id, author: authorOf(caller), messageAuthor: { id: caller.id, name: caller.name || caller.email || caller.id } } : {};
}

/** Whether the caller can open a conversation: it exists and they may read it (what a link to it needs). */
export function canOpenConversation(caller: Caller): (id: string) => Promise<boolean> {
  const rt = getRuntime();
  return async (id) => {
    const conversation = isValidConversationId(id) ? await rt.store.get(id) : null;
    return !!conversation && (await rt.access.conversation(caller, conversation, 'read'));
  };
}

/** The accounts service; E_NOT_FOUND in the single-user mode, which has no people or tokens. */
export function accountsOf(): Accounts {
  const { accounts } = getRuntime();
  if (!accounts) throw new AppError('E_NOT_FOUND', 'Accounts are off on this server (AUTH=off): there are no people or tokens.');
  return accounts;
}

/**
 * The caller, who must be an admin (E_FORBIDDEN otherwise: admin pages are not secret). A token
 * limited to projects is not an admin whatever its owner is: it was made to reach those projects only.
 */
export function requireAdmin(caller: Caller): Caller {
  if (caller.role !== 'admin') throw new AppError('E_FORBIDDEN', 'Only an admin may do this.');
  if (caller.kind === 'token' && caller.projectIds) {
    throw new AppError('E_FORBIDDEN', 'This token is limited to projects; people are managed by an admin who is signed in, or with an unrestricted token.');
  }
  return caller;
}

/**
 * An admin who is signed in: what can take or end an account (passwords, roles, deactivating,
 * deleting) is never done with an API token, so a token that leaks cannot take over anyone.
 */
export function requireSignedInAdmin(caller: Caller): Caller {
  requireAdmin(caller);
  if (caller.kind === 'token') throw new AppError('E_FORBIDDEN', 'Sign in as an admin to do this; an API token cannot set passwords, change roles, deactivate or delete people.');
  return caller;
}

/** The projects the caller may see, each with their role; the others do not exist for them. */
export async function visibleProjects(caller: Caller): Promise<{ project: Project; role: ProjectRole }[]> {
  const { projects, access } = getRuntime();
  const list = await projects.list();
  const roles = await Promise.all(list.map((p) => access.projectRole(caller, p.id)));
  return list.flatMap((project, i) => (roles[i] ? [{ project, role: roles[i] }] : []));
}

/**
 * A request body read only after the access checks: whoever may not see a resource learns that
 * first, whatever they sent (a route passes `() => readJson(request, Schema)`).
 */
export type BodyOf<T> = () => Promise<T>;

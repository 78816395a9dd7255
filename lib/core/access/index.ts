/**
 * Who asks, and what they may do. Every route resolves its caller first (app/api/_lib/caller.ts)
 * and asks the runtime's `AccessPolicy` before it touches a project or a conversation. A project
 * or conversation the caller may not see is answered exactly like one that does not exist.
 */

export type Role = 'admin' | 'member';
export type ProjectRole = 'owner' | 'editor' | 'viewer';

/** What a route is about to do with a project or a conversation. */
export type Need = 'read' | 'write' | 'own';

export interface Caller {
  /** `local`: the single-user mode (no accounts); `session`: a signed-in browser; `token`: an API token. */
  kind: 'local' | 'session' | 'token';
  /** The person's id (`local` in the single-user mode). */
  id: string;
  email?: string;
  name?: string;
  role: Role;
  /** An API token's id, when the caller came with one. */
  tokenId?: string;
  /** A token limited to these projects; absent: whatever its owner may. */
  projectIds?: string[];
}

/** The caller of the single-user mode: the person at the machine, allowed everything. */
export const LOCAL_CALLER: Caller = Object.freeze({ kind: 'local', id: 'local', name: 'local', role: 'admin' }) as Caller;

/** How versions, audit lines and messages name who caused them. */
export function authorOf(caller: Caller): string {
  const who = caller.name || caller.email || caller.id;
  return caller.kind === 'token' ? `${who} (token)` : who;
}

/** What a project role allows. */
export function roleAllows(role: ProjectRole, need: Need): boolean {
  if (need === 'read') return true;
  if (need === 'write') return role === 'owner' || role === 'editor';
  return role === 'owner';
}

/** The owner fields of a conversation that access is decided on. */
export interface ConversationAccessInfo {
  id: string;
  projectId?: string;
  ownerId?: string;
  shared?: boolean;
}

export interface AccessPolicy {
  /** The caller's role in a project, or null when the project must look absent to them. */
  projectRole(caller: Caller, projectId: string): Promise<ProjectRole | null>;
  /** Whether the caller may do `need` with a conversation (false: it must look absent). */
  conversation(caller: Caller, conversation: ConversationAccessInfo, need: Need): Promise<boolean>;
}

/** The single-user mode: everyone who reaches the server is its owner. */
export const openAccess: AccessPolicy = {
  projectRole: async () => 'owner',
  conversation: async () => true,
};

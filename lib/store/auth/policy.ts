import { roleAllows, type AccessPolicy, type Caller, type ConversationAccessInfo, type Need, type ProjectRole } from '../../core/access';

/** Where the policy reads memberships from (the Accounts service). */
export interface MembershipSource {
  projectRoleOf(projectId: string, userId: string): Promise<ProjectRole | null>;
}

/**
 * The accounts policy. Admins see and do everything; a person sees the projects they are a member
 * of, with their role; a token does no more than its owner, and only on its projects when it
 * names some. A conversation is its owner's: only they write in it. Admins read every one;
 * shared, the project's members read it. Anything else looks absent (the routes answer 404).
 */
export function accountsPolicy(members: MembershipSource): AccessPolicy {
  const tokenAllows = (caller: Caller, projectId: string | undefined) =>
    !caller.projectIds || (projectId !== undefined && caller.projectIds.includes(projectId));

  async function projectRole(caller: Caller, projectId: string): Promise<ProjectRole | null> {
    if (caller.kind === 'local') return 'owner';
    if (!tokenAllows(caller, projectId)) return null;
    if (caller.role === 'admin') return 'owner';
    return members.projectRoleOf(projectId, caller.id);
  }

  async function conversation(caller: Caller, c: ConversationAccessInfo, need: Need): Promise<boolean> {
    if (caller.kind === 'local') return true;
    if (!tokenAllows(caller, c.projectId)) return false;
    if (caller.role === 'admin') {
      // Admins read everything, but write only in their own conversations (and in those started
      // before accounts, which are nobody's): words in someone's conversation are theirs.
      if (need === 'read' || c.ownerId === undefined || c.ownerId === caller.id) return true;
      return false;
    }
    const role = c.projectId !== undefined ? await projectRole(caller, c.projectId) : null;
    // A project conversation needs a place in the project, whoever started it.
    if (c.projectId !== undefined && !role) return false;
    if (c.ownerId === caller.id) {
      // A viewer (demoted since) reads their own conversation but no longer chats in it.
      return need === 'read' || c.projectId === undefined || roleAllows(role!, 'write');
    }
    return need === 'read' && c.shared === true && c.projectId !== undefined;
  }

  return { projectRole, conversation };
}

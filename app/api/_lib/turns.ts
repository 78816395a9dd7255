import { authorOf, type Caller } from '@/lib/access';
import { isValidConversationId } from '@/lib/conversations';
import { AppError } from '@/lib/errors';
import { projectOr404 } from './projects';
import { conversationOr404 } from './conversations';

/**
 * What a turn asks of its caller, for every way in (POST /api/chat, the MCP server's chat tool):
 * a token limited to projects chats in them only (a bundle's conversation would be out of its
 * reach), and a turn writes, so the caller must be allowed to chat in the project and on the
 * conversation (its owner only: 403 for one who reads it, 404 for one who does not). Answers the
 * owner fields the turn's new conversation, its user message and its versions take.
 */
export async function turnAccess(
  caller: Caller,
  target: { projectId?: string; conversationId?: string },
): Promise<{ ownerId?: string; author?: string; messageAuthor?: { id: string; name: string } }> {
  if (target.conversationId && !isValidConversationId(target.conversationId)) {
    throw new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${String(target.conversationId).slice(0, 80)}".`);
  }
  if (caller.projectIds && !target.projectId) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects: give one of them as projectId.');
  if (target.projectId) await projectOr404(target.projectId, caller, 'write');
  if (target.conversationId) await conversationOr404(target.conversationId, caller, 'write');
  // A token's words are its owner's: the message names the person, not the token.
  return caller.kind !== 'local' ? { ownerId: caller.id, author: authorOf(caller), messageAuthor: { id: caller.id, name: caller.name || caller.email || caller.id } } : {};
}

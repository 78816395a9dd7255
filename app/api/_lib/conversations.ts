import { getRuntime } from '@/lib/runtime';
import { isValidConversationId } from '@/lib/conversations';
import { AppError } from '@/lib/errors';
import type { Caller, Need } from '@/lib/access';
import { outputRootOf } from '@/lib/outputs';

export function notFound(id: string): AppError {
  return new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${id.slice(0, 80)}".`);
}

/**
 * The conversation of a route's `[id]` as the caller may use it: 404 when it does not exist or
 * the caller may not do `need` with it (never a 403: a private conversation does not leak).
 */
export async function conversationOr404(id: string, caller: Caller, need: Need = 'read') {
  const rt = getRuntime();
  const conversation = isValidConversationId(id) ? await rt.store.get(id) : null;
  if (!conversation || !(await rt.access.conversation(caller, conversation, need))) throw notFound(id);
  return conversation;
}


/**
 * Where a conversation's files are: its own folder for a bundle agent, the project's shared
 * output folder for a project agent (a project gone since leaves nothing to list).
 */
export async function filesRootOf(conversation: { id: string; projectId?: string }): Promise<string | null> {
  const rt = getRuntime();
  if (!conversation.projectId) return outputRootOf(rt.config, conversation.id);
  const project = await rt.projects.get(conversation.projectId);
  return project ? project.install.outputRoot : null;
}

/** Whether the caller can open a conversation: it exists and they may read it (what a link to it needs). */
export function canOpenConversation(caller: Caller): (id: string) => Promise<boolean> {
  const rt = getRuntime();
  return async (id) => {
    const conversation = isValidConversationId(id) ? await rt.store.get(id) : null;
    return !!conversation && (await rt.access.conversation(caller, conversation, 'read'));
  };
}

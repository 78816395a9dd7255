import { getRuntime } from '@/lib/runtime';
import { isValidConversationId } from '@/lib/conversations';
import { AppError } from '@/lib/errors';

export function notFound(id: string): AppError {
  return new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${id.slice(0, 80)}".`);
}

export async function conversationOr404(id: string) {
  const conversation = isValidConversationId(id) ? await getRuntime().store.get(id) : null;
  if (!conversation) throw notFound(id);
  return conversation;
}


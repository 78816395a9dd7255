import { getRuntime } from '@/lib/runtime';
import { cursorAfter, isValidConversationId, type ConversationSummary, type ListOptions, type Page } from '@/lib/conversations';
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
 * One page of the conversations the caller may read. With everything visible (no accounts, an
 * admin) it is the store's page; otherwise the store's pages are read on, in order, until `limit`
 * visible ones are found or the list ends, so paging skips what the caller may not see.
 */
export async function visiblePage(caller: Caller, options: ListOptions & { limit: number }): Promise<Page<ConversationSummary>> {
  const rt = getRuntime();
  const open = caller.kind === 'local' || (caller.role === 'admin' && !caller.projectIds);
  if (open) return rt.store.list(options);
  const items: ConversationSummary[] = [];
  let cursor = options.cursor;
  for (;;) {
    const page = await rt.store.list({ ...options, cursor, limit: 100 });
    for (let i = 0; i < page.items.length; i++) {
      const c = page.items[i]!;
      if (!(await rt.access.conversation(caller, c, 'read'))) continue;
      items.push(c);
      if (items.length === options.limit) {
        // More may follow: this item's cursor resumes after it.
        const more = i < page.items.length - 1 || page.nextCursor !== undefined;
        return more ? { items, nextCursor: cursorAfter(c) } : { items };
      }
    }
    if (!page.nextCursor) return { items };
    cursor = page.nextCursor;
  }
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

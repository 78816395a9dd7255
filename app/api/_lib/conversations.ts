import { getRuntime } from '@/lib/runtime';
import { cursorAfter, isValidConversationId, type Conversation, type ConversationSummary, type ListOptions, type Page, type StoredMessage } from '@/lib/conversations';
import { peopleIn, toDetailView, toSummaryView } from '@/lib/chat/views';
import type { ConversationDetail, ConversationSummaryView, PersonRef } from '@/types/api';
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
  if (!conversation) throw notFound(id);
  if (await rt.access.conversation(caller, conversation, need)) return conversation;
  if (need === 'read' || !(await rt.access.conversation(caller, conversation, 'read'))) throw notFound(id);
  throw readOnly(caller, conversation);
}

/** A write into a conversation the caller reads but may not write in: a 403 saying so. */
function readOnly(caller: Caller, conversation: { ownerId?: string; projectId?: string }): AppError {
  if (conversation.ownerId === caller.id) {
    return new AppError('E_FORBIDDEN', `You can read this conversation but no longer write in it: your role in project "${conversation.projectId}" does not allow chatting.`);
  }
  return new AppError('E_FORBIDDEN', 'You can read this conversation but not write in it (it is someone else\'s); continue in a copy.');
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

/** How a person gone since is named where no name of theirs was kept. */
const GONE = 'a removed person';

type Statuses = Map<string, NonNullable<PersonRef['status']>>;

/**
 * People's current names and whether they are still here, by id, in one look-up (null without
 * accounts: then nobody is named). Read when a view is made, so a renamed person shows their new
 * name, a deactivated or deleted one is marked so.
 */
async function namesOf(ids: readonly string[]): Promise<{ names: Map<string, string>; statuses: Statuses } | null> {
  const { accounts } = getRuntime();
  if (!accounts) return null;
  const names = new Map<string, string>();
  const statuses: Statuses = new Map();
  const found = ids.length ? await accounts.personSummaries(ids) : new Map();
  for (const [id, p] of found) {
    if (p.name) names.set(id, p.name);
    // Only the marks: someone still here is shown by name alone.
    if (p.status !== 'active') statuses.set(id, p.status);
  }
  return { names, statuses };
}

/** The owner as a view names them: current name, else the name a message of theirs kept. */
function ownerRef(ownerId: string | undefined, people: { names: ReadonlyMap<string, string>; statuses: Statuses }, history: StoredMessage[] = []): PersonRef | undefined {
  if (!ownerId) return undefined;
  const kept = history.find((m): m is Extract<StoredMessage, { role: 'user' }> => m.role === 'user' && m.author?.id === ownerId)?.author?.name;
  const status = people.statuses.get(ownerId);
  return { id: ownerId, name: people.names.get(ownerId) ?? (kept || GONE), ...(status ? { status } : {}) };
}

/** A conversation as the caller sees it: messages with their authors, its owner, whether they may write in it. */
export async function detailFor(conversation: Conversation, caller: Caller, history?: StoredMessage[]): Promise<ConversationDetail> {
  const rt = getRuntime();
  const messages = history ?? (await rt.store.messages(conversation.id));
  const people = await namesOf(peopleIn(conversation, messages));
  const canWrite = await rt.access.conversation(caller, conversation, 'write');
  // Without accounts nobody is named (a message kept from when they were on has no author to show).
  if (!people) return toDetailView(conversation, messages, { canWrite });
  const owner = ownerRef(conversation.ownerId, people, messages);
  return toDetailView(conversation, messages, { ...people, canWrite, ...(owner ? { owner } : {}) });
}

/** List items as the caller sees them: with their owner's name and whether the caller may write in each. */
export async function summariesFor(items: ConversationSummary[], caller: Caller): Promise<ConversationSummaryView[]> {
  const rt = getRuntime();
  const names = await namesOf([...new Set(items.map((c) => c.ownerId).filter((id): id is string => !!id))]);
  return Promise.all(
    items.map(async (c) => {
      const owner = names ? ownerRef(c.ownerId, names) : undefined;
      return { ...toSummaryView(c), ...(owner ? { owner } : {}), canWrite: await rt.access.conversation(caller, c, 'write') };
    }),
  );
}

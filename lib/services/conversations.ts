import type { Caller } from '../core/access';
import { deleteAudit, readAudit, type AuditEntry } from '../store/audit';
import { checkProfile } from '../engine/chat/model-choice';
import { cursorAfter, newConversationId, type Conversation, type ConversationSummary, type ListOptions, type Page, type StoredMessage } from '../store/conversations';
import { AppError } from '../core/errors';
import { copyOutputs, outputRootOf, removeOutputs } from '../content/outputs';
import { getRuntime } from '../engine/runtime';
import type { ConversationCopyData, ConversationDetail, ConversationListData, ConversationSummaryView, PersonRef } from '../../types/api';
import { conversationNotFound, conversationOf, projectOf } from './access';
import { peopleIn, toDetailView, toSummaryView } from './presenters/conversations';
import { conversationMarkdown, exportFileName } from './presenters/export';

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

/** How a person gone since is named where no name of theirs was kept. */
const GONE = 'a removed person';

type Statuses = Map<string, NonNullable<PersonRef['status']>>;
type People = { names: Map<string, string>; statuses: Statuses };

/**
 * People's current names and whether they are still here, by id, in one look-up (null without
 * accounts: then nobody is named). Read when a view is made, so a renamed person shows their new
 * name, a deactivated or deleted one is marked so.
 */
async function namesOf(ids: readonly string[]): Promise<People | null> {
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
function ownerRef(ownerId: string | undefined, people: People, history: StoredMessage[] = []): PersonRef | undefined {
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

export interface ConversationQuery {
  agentId?: string;
  projectId?: string;
  limit?: number;
  cursor?: string;
  q?: string;
}

/** A page of the conversations the caller may read, of a project they see when one is named; `q` searches. */
export async function listConversations(caller: Caller, query: ConversationQuery): Promise<ConversationListData> {
  if (query.projectId !== undefined) await projectOf(caller, query.projectId);
  // An empty search box lists everything, as no q does.
  const q = query.q?.trim() || undefined;
  const page = await visiblePage(caller, {
    agentId: query.agentId,
    ...(query.projectId !== undefined ? { projectId: query.projectId } : {}),
    ...(q !== undefined ? { q } : {}),
    limit: query.limit ?? 20,
    cursor: query.cursor,
  });
  return { items: await summariesFor(page.items, caller), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}

export async function getConversation(caller: Caller, id: string): Promise<ConversationDetail> {
  return detailFor(await conversationOf(caller, id), caller);
}

export interface ConversationPatch {
  title?: string;
  /** A profile name, or null to go back to choosing per turn (command, agent, default). */
  model?: string | null;
  /** true: the project's members may read it; false: private again (its owner and admins only). */
  shared?: boolean;
}

/** Renames, picks a model for, or shares a conversation: its owner's alone, as every write (sharing is `own`). */
export async function updateConversation(caller: Caller, id: string, patch: ConversationPatch): Promise<ConversationDetail> {
  await conversationOf(caller, id, patch.shared !== undefined ? 'own' : 'write');
  const rt = getRuntime();
  if (patch.model) checkProfile(rt.config.models, patch.model);
  let updated = patch.title !== undefined ? await rt.store.rename(id, patch.title) : await rt.store.get(id);
  if (updated && patch.model !== undefined) updated = await rt.store.setModel(id, patch.model);
  if (updated && patch.shared !== undefined) {
    if (!updated.projectId && patch.shared) throw new AppError('E_VALIDATION', 'Only a project conversation can be shared (with the project\'s members).', { field: 'shared' });
    updated = await rt.store.setShared(id, patch.shared);
  }
  if (!updated) throw conversationNotFound(id);
  return detailFor(updated, caller);
}

/** Deletes a conversation with its outputs and audit log (its owner); never while a turn runs on it. */
export async function deleteConversation(caller: Caller, id: string): Promise<{ id: string; deleted: true }> {
  await conversationOf(caller, id, 'own');
  const rt = getRuntime();
  if ((await rt.store.get(id))?.status === 'running') {
    throw new AppError('E_CONVERSATION_BUSY', 'A turn is running on this conversation; stop it before deleting.');
  }
  await rt.store.delete(id);
  await Promise.all([removeOutputs(outputRootOf(rt.config, id)), deleteAudit(rt.auditDir, id)]);
  return { id, deleted: true };
}

/**
 * What a turn asks of its caller: a token limited to projects chats in them only, and a turn
 * writes, so the caller must be allowed to chat in the project. Answers the owner fields a new
 * conversation of theirs takes.
 */
async function chatOwner(caller: Caller, projectId: string | undefined): Promise<{ ownerId?: string }> {
  if (caller.projectIds && !projectId) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects: give one of them as projectId.');
  if (projectId) await projectOf(caller, projectId, 'write');
  return caller.kind !== 'local' ? { ownerId: caller.id } : {};
}

/**
 * Continue in a copy: a new conversation of the caller's, with the agent, project, model profile,
 * loaded variables and every stored message of one they may read (the model's history stays as
 * it was, tool calls with their results, authors kept), which they can chat in. The caller must be
 * allowed to chat where the conversation lives; one they may not read is a 404. A bundle
 * conversation's own files are copied too (refused, E_TOO_LARGE, over outputs' COPY_LIMITS).
 */
export async function copyConversation(caller: Caller, id: string): Promise<ConversationCopyData> {
  const source = await conversationOf(caller, id);
  const owner = await chatOwner(caller, source.projectId);
  const rt = getRuntime();
  // A running turn's history is half written (a tool call may wait for its result).
  if (source.status === 'running') throw new AppError('E_CONVERSATION_BUSY', 'A turn is running on this conversation; copy it once it has finished.');
  const messages = await rt.store.messages(id);
  const copyId = newConversationId();
  await rt.store.create({
    id: copyId,
    agentId: source.agentId,
    bundleName: source.bundleName,
    title: source.title,
    ...(source.projectId ? { projectId: source.projectId } : {}),
    ...(source.model ? { model: source.model } : {}),
    ...(owner.ownerId ? { ownerId: owner.ownerId } : {}),
  });
  try {
    await rt.store.setVariables(copyId, source.variables);
    if (messages.length) await rt.store.commit(copyId, { messages });
    // A bundle conversation's files are its own (a project's are the project's, shared): the
    // copy gets them too, or the messages would point at files it does not have.
    if (!source.projectId) await copyOutputs(outputRootOf(rt.config, id), outputRootOf(rt.config, copyId));
  } catch (e) {
    await rt.store.delete(copyId).catch(() => false);
    await removeOutputs(outputRootOf(rt.config, copyId)).catch(() => undefined);
    throw e;
  }
  return { id: copyId };
}

/**
 * Stops the conversation's running turn, on whichever instance runs it: the request is recorded
 * in the store and that instance ends the turn as a local Stop does (stored `stopped`, the
 * partial answer kept). `stopping` is false when no turn was running. Its writer stops it, and so
 * does an admin who can see it.
 */
export async function stopConversation(caller: Caller, id: string): Promise<{ conversationId: string; stopping: boolean }> {
  // An admin writes only in their own conversations but must be able to stop a runaway turn in anyone's.
  await conversationOf(caller, id, caller.role === 'admin' ? 'read' : 'write');
  return { conversationId: id, stopping: await getRuntime().store.requestStop(id) };
}

/** The conversation as a file to keep: markdown to read, or the detail view as JSON. */
export async function exportConversation(caller: Caller, id: string, format: 'md' | 'json'): Promise<{ name: string; body: string; contentType: string }> {
  const conversation = await conversationOf(caller, id);
  const history = await getRuntime().store.messages(id);
  const body = format === 'md' ? conversationMarkdown(conversation, history) : `${JSON.stringify(await detailFor(conversation, caller, history), null, 2)}\n`;
  return { name: exportFileName(conversation, format), body, contentType: format === 'md' ? 'text/markdown; charset=utf-8' : 'application/json; charset=utf-8' };
}

/** The audit log of a conversation the caller may read. */
export async function conversationAudit(caller: Caller, id: string): Promise<AuditEntry[]> {
  await conversationOf(caller, id);
  return readAudit(getRuntime().auditDir, id);
}

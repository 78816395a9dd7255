import { randomUUID } from 'node:crypto';
import type {
  ClientChatMark,
  CompactionMark,
  Conversation,
  ConversationStatus,
  ConversationStore,
  ConversationSummary,
  CreateConversationInput,
  ListOptions,
  Page,
  SpendFilter,
  SpendTotals,
  StoreHealth,
  StoredMessage,
  TurnBatch,
  TurnLease,
  TurnSignal,
  TurnOutcome,
  Usage,
} from './types';
import { isValidConversationId, newConversationId } from './ids';
import {
  TitleState,
  assertClientChatMark,
  assertMarks,
  assertMessage,
  assertVariables,
  cleanCost,
  cleanUsage,
  decodeCursor,
  duplicateId,
  emptySpend,
  encodeCursor,
  lastPreview,
  messagePreview,
  monotonicNow,
  nextTitle,
  notFound,
  pageSize,
  freshConversation,
  onceSignal,
  prepareCreate,
  prepareModel,
  prepareRename,
  replayTitle,
  searchTerms,
  settleTurn,
  textMatches,
  titleCandidates,
  unknownMessage,
} from './internal';

interface Entry {
  conversation: Conversation;
  titleState: TitleState;
  messages: StoredMessage[];
  preview: string | null;
  turn: string | null;
  /** The turn a Stop was asked for, so a watch that starts later still hears it. */
  stopTurn?: string;
}

const clientChatKey = (owner: string, chat: string, history: string) => JSON.stringify([owner, chat, history]);

/**
 * Conversations in this process's memory, for tests and throwaway runs. Same contract as the
 * SQLite store; everything handed in or out is a copy, so callers cannot change stored state
 * behind the store's back (as they could not with a database).
 */
export class MemoryConversationStore implements ConversationStore {
  private readonly entries = new Map<string, Entry>();
  /** Watchers of running turns, by lease token. */
  private readonly watchers = new Map<string, (signal: TurnSignal) => void>();
  /** The usage ledger: one entry per model call of a project conversation. */
  /** Client chat marks by owner, chat and history. */
  private readonly clientChats = new Map<string, { conversationId: string; messageId: string }>();
  private readonly ledger: { conversationId: string; projectId: string; ownerId: string | null; at: string; usage: Required<Usage>; cost?: number }[] = [];

  async create(input: CreateConversationInput): Promise<Conversation> {
    const c = prepareCreate(input, newConversationId);
    if (this.entries.has(c.id)) throw duplicateId(c.id);
    const now = monotonicNow();
    const conversation: Conversation = freshConversation(c, now);
    this.entries.set(c.id, { conversation, titleState: c.titleState, messages: [], preview: null, turn: null });
    return structuredClone(conversation);
  }

  async get(id: string): Promise<Conversation | null> {
    const e = this.entry(id);
    return e ? structuredClone(e.conversation) : null;
  }

  async list(options?: ListOptions): Promise<Page<ConversationSummary>> {
    const limit = pageSize(options);
    const after = options?.cursor ? decodeCursor(options.cursor) : null;
    const terms = searchTerms(options?.q);
    const rows = [...this.entries.values()]
      .filter((e) => options?.q === undefined || matches(e, terms))
      .filter((e) => options?.agentId === undefined || e.conversation.agentId === options.agentId)
      .filter((e) => options?.projectId === undefined || e.conversation.projectId === options.projectId)
      .filter((e) => options?.ownedOrSharedFor === undefined || e.conversation.ownerId === options.ownedOrSharedFor || e.conversation.shared === true)
      .filter((e) => !after || compareKey(e.conversation, after) < 0)
      .sort((a, b) => compareKey(b.conversation, a.conversation));
    const page = rows.slice(0, limit);
    const items = page.map((e): ConversationSummary => {
      const summary: ConversationSummary = { ...structuredClone(e.conversation), messageCount: e.messages.length };
      if (e.preview !== null) summary.lastMessagePreview = e.preview;
      return summary;
    });
    const last = page[page.length - 1];
    return rows.length > limit && last ? { items, nextCursor: encodeCursor(last.conversation) } : { items };
  }

  async rename(id: string, title: string): Promise<Conversation | null> {
    const t = prepareRename(title);
    const e = this.entry(id);
    if (!e) return null;
    e.conversation.title = t;
    e.titleState = TitleState.FIXED;
    return structuredClone(e.conversation);
  }

  async delete(id: string): Promise<boolean> {
    if (!isValidConversationId(id) || !this.entries.delete(id)) return false;
    for (const [key, mark] of this.clientChats) if (mark.conversationId === id) this.clientChats.delete(key);
    return true;
  }

  async markClientChat(mark: ClientChatMark): Promise<void> {
    assertClientChatMark(mark);
    this.required(mark.conversationId);
    this.clientChats.set(clientChatKey(mark.owner, mark.chat, mark.history), { conversationId: mark.conversationId, messageId: mark.messageId });
  }

  async findClientChat(owner: string, chat: string, history: string): Promise<{ conversationId: string; messageId: string } | null> {
    const found = this.clientChats.get(clientChatKey(owner, chat, history));
    return found ? { ...found } : null;
  }

  async messages(id: string): Promise<StoredMessage[]> {
    const e = this.entry(id);
    return e ? structuredClone(e.messages) : [];
  }

  async append(id: string, message: StoredMessage): Promise<void> {
    assertMessage(message);
    this.appendNow(id, message);
  }

  private appendNow(id: string, message: StoredMessage): void {
    const e = this.required(id);
    // JSON round trip, not structuredClone: the SQLite store keeps JSON, so both stores hand
    // back the same shapes (undefined keys dropped, no class instances).
    e.messages.push(JSON.parse(JSON.stringify(message)) as StoredMessage);
    const preview = messagePreview(message);
    if (preview !== null) e.preview = preview;
    const t = nextTitle(e.titleState, e.conversation.title, titleCandidates(message));
    e.conversation.title = t.title;
    e.titleState = t.state;
    e.conversation.updatedAt = monotonicNow();
  }

  async setVariables(id: string, variables: Record<string, string>): Promise<void> {
    assertVariables(variables);
    this.required(id).conversation.variables = { ...variables };
  }

  async addUsage(id: string, usage: Usage, cost?: number): Promise<void> {
    const u = cleanUsage(usage);
    const c = cleanCost(cost);
    const conversation = this.required(id).conversation;
    const total = conversation.usage;
    total.promptTokens += u.promptTokens;
    total.completionTokens += u.completionTokens;
    total.cachedTokens += u.cachedTokens;
    if (c !== undefined) conversation.cost = (conversation.cost ?? 0) + c;
    if (conversation.projectId) {
      this.ledger.push({ conversationId: id, projectId: conversation.projectId, ownerId: conversation.ownerId ?? null, at: new Date().toISOString(), usage: u, ...(c !== undefined ? { cost: c } : {}) });
    }
  }

  async spend(filter: SpendFilter): Promise<SpendTotals> {
    return this.sum(filter, () => true);
  }

  async spendByOwner(filter: SpendFilter): Promise<(SpendTotals & { ownerId: string | null })[]> {
    const owners = new Set(this.ledger.filter((e) => filter.projectId === undefined || e.projectId === filter.projectId).map((e) => e.ownerId));
    const out: (SpendTotals & { ownerId: string | null })[] = [];
    for (const ownerId of owners) {
      const s = this.sum(filter, (e) => e.ownerId === ownerId);
      if (s.calls > 0) out.push({ ...s, ownerId });
    }
    return out;
  }

  private sum(filter: SpendFilter, keep: (e: { ownerId: string | null }) => boolean): SpendTotals {
    const only = filter.conversationIds ? new Set(filter.conversationIds) : null;
    const out = emptySpend();
    for (const e of this.ledger) {
      if ((filter.projectId !== undefined && e.projectId !== filter.projectId) || (filter.ownerId !== undefined && e.ownerId !== filter.ownerId) || e.at < filter.since || (filter.until !== undefined && e.at >= filter.until)) continue;
      if (only && !only.has(e.conversationId)) continue;
      if (!keep(e)) continue;
      out.promptTokens += e.usage.promptTokens;
      out.completionTokens += e.usage.completionTokens;
      out.cachedTokens += e.usage.cachedTokens;
      out.calls++;
      if (e.cost === undefined) out.unpriced++;
      else out.cost += e.cost;
    }
    return out;
  }

  async setShared(id: string, shared: boolean): Promise<Conversation | null> {
    const e = this.entry(id);
    if (!e) return null;
    if (shared) e.conversation.shared = true;
    else delete e.conversation.shared;
    return structuredClone(e.conversation);
  }

  async setModel(id: string, model: string | null): Promise<Conversation | null> {
    const m = prepareModel(model);
    const e = this.entry(id);
    if (!e) return null;
    if (m === null) delete e.conversation.model;
    else e.conversation.model = m;
    return structuredClone(e.conversation);
  }

  async compact(id: string, marks: CompactionMark[]): Promise<void> {
    assertMarks(marks);
    const e = this.required(id);
    // Checked before any change: all marks or none, as in one SQLite transaction.
    const targets = marks.map((mark) => {
      const m = e.messages.find((x) => x.id === mark.messageId);
      if (!m) throw new TypeError(`Cannot compact: conversation "${id}" has no message "${mark.messageId}".`);
      return m;
    });
    targets.forEach((m, i) => {
      m.compacted = JSON.parse(JSON.stringify(marks[i].compacted)) as typeof m.compacted;
    });
  }

  async beginTurn(id: string, messages?: StoredMessage[]): Promise<TurnLease | null> {
    messages?.forEach(assertMessage);
    const e = this.required(id);
    // No await between this check and the set below: that is what keeps a second turn out.
    if (e.turn !== null) return null;
    e.turn = randomUUID();
    e.conversation.status = 'running';
    delete e.conversation.lastTurn;
    for (const m of messages ?? []) this.appendNow(id, m);
    return { conversationId: id, token: e.turn };
  }

  async commit(id: string, batch: TurnBatch): Promise<void> {
    batch.messages?.forEach(assertMessage);
    this.required(id);
    for (const m of batch.messages ?? []) this.appendNow(id, m);
    if (batch.usage) await this.addUsage(id, batch.usage.usage, batch.usage.cost);
    if (batch.end) await this.endTurn(batch.end.lease, batch.end.outcome);
  }

  async endTurn(lease: TurnLease, outcome: TurnOutcome): Promise<void> {
    const e = this.entry(lease.conversationId);
    if (!e || e.turn === null || e.turn !== lease.token) return;
    e.turn = null;
    const { status, lastTurn } = settleTurn(outcome, new Date().toISOString());
    e.conversation.status = status satisfies ConversationStatus;
    if (lastTurn) e.conversation.lastTurn = lastTurn;
    else delete e.conversation.lastTurn;
  }

  async truncateFrom(id: string, messageId: string): Promise<number> {
    const e = this.required(id);
    const at = e.messages.findIndex((m) => m.id === messageId);
    if (at < 0) throw unknownMessage(id, messageId);
    const removed = e.messages.length - at;
    e.messages.length = at;
    e.preview = lastPreview(e.messages);
    if (e.titleState !== TitleState.FIXED) {
      const t = replayTitle(e.messages);
      e.conversation.title = t.title;
      e.titleState = t.state;
    }
    e.conversation.updatedAt = monotonicNow();
    return removed;
  }

  async requestStop(id: string): Promise<boolean> {
    const e = this.required(id);
    if (e.turn === null) return false;
    e.stopTurn = e.turn;
    const watcher = this.watchers.get(e.turn);
    this.watchers.delete(e.turn);
    watcher?.('stop');
    return true;
  }

  watchTurn(lease: TurnLease, on: (signal: TurnSignal) => void): () => void {
    const once = onceSignal(on);
    this.watchers.set(lease.token, once);
    if (this.entry(lease.conversationId)?.stopTurn === lease.token) queueMicrotask(() => once('stop'));
    return () => {
      if (this.watchers.get(lease.token) === once) this.watchers.delete(lease.token);
    };
  }

  async health(): Promise<StoreHealth> {
    return { kind: 'memory', ok: true, migrations: { applied: 0, latest: 0, current: true } };
  }

  async close(): Promise<void> {
    // Nothing to flush; kept so callers can treat both stores alike.
  }

  private entry(id: string): Entry | undefined {
    return isValidConversationId(id) ? this.entries.get(id) : undefined;
  }

  private required(id: string): Entry {
    const e = this.entry(id);
    if (!e) throw notFound(id);
    return e;
  }
}

function matches(e: Entry, terms: readonly string[]): boolean {
  if (textMatches(e.conversation.title, terms)) return true;
  return e.messages.some((m) => (m.role === 'user' || m.role === 'assistant') && textMatches(m.content, terms));
}

function compareKey(a: { updatedAt: string; id: string }, b: { updatedAt: string; id: string }): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt < b.updatedAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

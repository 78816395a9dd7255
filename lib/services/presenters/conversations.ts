import { toolArgumentsView } from '../../model/llm/types';
import type { Conversation, ConversationSummary, StoredMessage } from '../../store/conversations/types';
import type { ChatMessageView, ConversationDetail, ConversationSummaryView, FunctionCallView, MessagePartView, PersonRef, UsageView } from '../../../types/api';

/**
 * What a view adds with accounts on: people's current names by id (a user message shows its
 * author's current name, or the name stored with it when the person is gone), the conversation's
 * owner, and whether the caller may write in it. Without accounts, messages have no author.
 */
export interface PeopleView {
  names?: ReadonlyMap<string, string>;
  /** Whether each named person is still here (absent: not known, shown unmarked). */
  statuses?: ReadonlyMap<string, NonNullable<PersonRef['status']>>;
  owner?: PersonRef;
  canWrite?: boolean;
}

type AssistantView = ChatMessageView & { functionCalls: FunctionCallView[]; parts: MessagePartView[] };

/** Adds one model call's usage (and cost) to a turn's. */
function addUsage(view: AssistantView, m: Extract<StoredMessage, { role: 'assistant' }>): void {
  if (!m.usage && m.cost === undefined) return;
  const u: UsageView = view.usage ?? { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  u.promptTokens += m.usage?.promptTokens ?? 0;
  u.completionTokens += m.usage?.completionTokens ?? 0;
  u.cachedTokens += m.usage?.cachedTokens ?? 0;
  if (m.cost !== undefined) u.cost = Math.round(((u.cost ?? 0) + m.cost) * 1e9) / 1e9;
  view.usage = u;
}

/**
 * What a person sees of the history: user messages, and per turn one assistant message holding
 * the turn's text and its tool calls with their results. Server context stays hidden.
 */
export function toMessageViews(history: StoredMessage[], people?: Pick<PeopleView, 'names' | 'statuses'>): ChatMessageView[] {
  const out: ChatMessageView[] = [];
  let current: AssistantView | null = null;
  const calls = new Map<string, FunctionCallView>();
  for (const m of history) {
    if (m.role === 'system') continue;
    if (m.role === 'user') {
      current = null;
      const status = m.author ? people?.statuses?.get(m.author.id) : undefined;
      const author = people?.names && m.author ? { id: m.author.id, name: people.names.get(m.author.id) ?? m.author.name, ...(status ? { status } : {}) } : null;
      out.push({ id: m.id, role: 'user', content: m.content, timestamp: m.timestamp, ...(m.compacted ? { compacted: true } : {}), ...(author ? { author } : {}) });
      continue;
    }
    if (!current) {
      current = { id: m.id, role: 'assistant', content: '', timestamp: m.timestamp, functionCalls: [], parts: [] };
      out.push(current);
    }
    if (m.compacted) current.compacted = true;
    if (m.role === 'assistant') {
      current.id = m.id;
      current.timestamp = m.timestamp;
      if (m.profile) current.profile = m.profile;
      if (m.model) current.model = m.model;
      addUsage(current, m);
      if (m.content) {
        current.content = current.content ? `${current.content}\n\n${m.content}` : m.content;
        current.parts.push({ type: 'text', text: m.content });
      }
      for (const c of m.toolCalls ?? []) {
        const view: FunctionCallView = { id: c.id, name: c.name, arguments: toolArgumentsView(c.arguments), result: undefined };
        if (m.compacted) view.compacted = true;
        calls.set(c.id, view);
        current.functionCalls.push(view);
        current.parts.push({ type: 'tool', toolCallId: c.id });
      }
    } else {
      const view = calls.get(m.toolCallId);
      if (view) {
        view.result = m.result;
        if (m.compacted) view.compacted = true;
      }
    }
  }
  return out;
}

export function toSummaryView(c: ConversationSummary): ConversationSummaryView {
  return {
    id: c.id,
    agentId: c.agentId,
    bundleName: c.bundleName,
    ...(c.projectId ? { projectId: c.projectId } : {}),
    title: c.title,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    status: c.status,
    ...(c.lastTurn ? { lastTurn: c.lastTurn } : {}),
    messageCount: c.messageCount,
    ...(c.lastMessagePreview ? { lastMessagePreview: c.lastMessagePreview } : {}),
    ...(c.model ? { model: c.model } : {}),
    ...(c.ownerId ? { ownerId: c.ownerId } : {}),
    ...(c.shared ? { shared: true } : {}),
    ...(c.workspaceId ? { workspaceId: c.workspaceId } : {}),
  };
}

/** The ids of the people a view names: the owner and the authors of user messages. */
export function peopleIn(c: Pick<Conversation, 'ownerId'>, history: StoredMessage[]): string[] {
  const ids = new Set<string>();
  if (c.ownerId) ids.add(c.ownerId);
  for (const m of history) if (m.role === 'user' && m.author) ids.add(m.author.id);
  return [...ids];
}

export function toDetailView(c: Conversation, history: StoredMessage[], people?: PeopleView): ConversationDetail {
  const messages = toMessageViews(history, people);
  const last = [...messages].reverse().find((m) => m.content);
  return {
    ...toSummaryView({
      ...c,
      // Counted as the list counts it: every stored message.
      messageCount: history.length,
      lastMessagePreview: last?.content.slice(0, 120),
    }),
    ...(people?.owner ? { owner: people.owner } : {}),
    ...(people?.canWrite !== undefined ? { canWrite: people.canWrite } : {}),
    messages,
    usage: { promptTokens: c.usage.promptTokens, completionTokens: c.usage.completionTokens, cachedTokens: c.usage.cachedTokens ?? 0, ...(c.cost !== undefined ? { cost: c.cost } : {}) },
  };
}

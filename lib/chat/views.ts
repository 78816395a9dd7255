import { toolArgumentsView } from '../llm/types';
import type { Conversation, ConversationSummary, StoredMessage } from '../conversations/types';
import type { ChatMessageView, ConversationDetail, ConversationSummaryView, FunctionCallView, MessagePartView } from '../../types/api';

/**
 * What a person sees of the history: user messages, and per turn one assistant message holding
 * the turn's text and its tool calls with their results. Server context stays hidden.
 */
export function toMessageViews(history: StoredMessage[]): ChatMessageView[] {
  const out: ChatMessageView[] = [];
  let current: (ChatMessageView & { functionCalls: FunctionCallView[]; parts: MessagePartView[] }) | null = null;
  const calls = new Map<string, FunctionCallView>();
  for (const m of history) {
    if (m.role === 'system') continue;
    if (m.role === 'user') {
      current = null;
      out.push({ id: m.id, role: 'user', content: m.content, timestamp: m.timestamp });
      continue;
    }
    if (!current) {
      current = { id: m.id, role: 'assistant', content: '', timestamp: m.timestamp, functionCalls: [], parts: [] };
      out.push(current);
    }
    if (m.role === 'assistant') {
      current.id = m.id;
      current.timestamp = m.timestamp;
      if (m.content) {
        current.content = current.content ? `${current.content}\n\n${m.content}` : m.content;
        current.parts.push({ type: 'text', text: m.content });
      }
      for (const c of m.toolCalls ?? []) {
        const view: FunctionCallView = { id: c.id, name: c.name, arguments: toolArgumentsView(c.arguments), result: undefined };
        calls.set(c.id, view);
        current.functionCalls.push(view);
        current.parts.push({ type: 'tool', toolCallId: c.id });
      }
    } else {
      const view = calls.get(m.toolCallId);
      if (view) view.result = m.result;
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
  };
}

export function toDetailView(c: Conversation, history: StoredMessage[]): ConversationDetail {
  const messages = toMessageViews(history);
  const last = [...messages].reverse().find((m) => m.content);
  return {
    ...toSummaryView({
      ...c,
      // Counted as the list counts it: every stored message.
      messageCount: history.length,
      lastMessagePreview: last?.content.slice(0, 120),
    }),
    messages,
    usage: c.usage,
  };
}

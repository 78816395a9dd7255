import type { ChatMessageView, ChatResponseData, FunctionCallView } from '@/types/api';
import { toolFailureText } from './chatReducer';
import type { MessagePart, ToolPart, UIMessage } from './types';

function parseArgs(args: unknown): unknown {
  // Stored arguments are the model's raw JSON text; show them as data when they parse.
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

export function toolPartFromCall(call: FunctionCallView): ToolPart {
  const failure = toolFailureText(call.result);
  const missing = call.result === undefined || call.result === null;
  return {
    type: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    input: parseArgs(call.arguments),
    output: call.result ?? undefined,
    state: failure || missing ? 'failed' : 'done',
    errorText: failure ?? (missing ? 'No result (the turn was interrupted).' : undefined),
  };
}

function partsOf(m: ChatMessageView): MessagePart[] {
  const parts: MessagePart[] = [];
  // Within one model call the text comes before the tool calls it makes.
  if (m.content) parts.push({ type: 'text', id: `${m.id}-text`, text: m.content, state: 'done' });
  for (const call of m.functionCalls ?? []) parts.push(toolPartFromCall(call));
  return parts;
}

/**
 * Stored history → UI messages. Consecutive assistant messages (one per model call) become one
 * answer, exactly as the live stream showed it.
 */
export function historyToMessages(history: ChatMessageView[]): UIMessage[] {
  const out: UIMessage[] = [];
  for (const m of history) {
    if (m.role !== 'user' && m.role !== 'assistant') continue;
    const parts = partsOf(m);
    const prev = out[out.length - 1];
    if (m.role === 'assistant' && prev?.role === 'assistant') {
      prev.parts = [...prev.parts, ...parts];
      continue;
    }
    out.push({ id: m.id, role: m.role, parts, createdAt: m.timestamp });
  }
  return out.filter((m) => m.role === 'user' || m.parts.length > 0);
}

/** A JSON (non-streamed) chat answer as one assistant message. */
export function jsonResponseToMessage(data: ChatResponseData): UIMessage {
  const parts: MessagePart[] = (data.message.functionCalls ?? []).map(toolPartFromCall);
  if (data.message.content) parts.push({ type: 'text', id: `${data.message.id}-text`, text: data.message.content, state: 'done' });
  return { id: data.message.id, role: 'assistant', parts, createdAt: data.message.timestamp };
}

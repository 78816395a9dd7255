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
  const calls = new Map((m.functionCalls ?? []).map((c) => [c.id, c]));
  if (m.parts?.length) {
    // The server keeps the order of the turn: text and tool calls exactly as they happened.
    const out: MessagePart[] = [];
    m.parts.forEach((p, i) => {
      if (p.type === 'text') out.push({ type: 'text', id: `${m.id}-text-${i}`, text: p.text, state: 'done' });
      else {
        const call = calls.get(p.toolCallId);
        if (call) out.push(toolPartFromCall(call));
      }
    });
    return out;
  }
  // Without parts (a JSON chat answer), tools first keeps the answer last, next to the following question.
  const parts: MessagePart[] = (m.functionCalls ?? []).map(toolPartFromCall);
  if (m.content) parts.push({ type: 'text', id: `${m.id}-text`, text: m.content, state: 'done' });
  return parts;
}

/** Stored history → UI messages; consecutive assistant messages merge into one answer. */
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
  return { id: data.message.id, role: 'assistant', parts: partsOf(data.message), createdAt: data.message.timestamp };
}

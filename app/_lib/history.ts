import type { ChatMessageView, ChatResponseData, FunctionCallView } from '@/types/api';
import { answeredBy, readUsage, toolFailure } from './chatReducer';
import type { MessagePart, MessageUsage, ToolPart, UIMessage } from './types';

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
  const failure = toolFailure(call.result);
  const missing = call.result === undefined || call.result === null;
  return {
    type: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    input: parseArgs(call.arguments),
    output: call.result ?? undefined,
    state: failure || missing ? 'failed' : 'done',
    errorText: failure?.message ?? (missing ? 'No result (the turn was interrupted).' : undefined),
    ...(failure?.code ? { errorCode: failure.code } : {}),
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

function addUsage(a: MessageUsage | undefined, b: MessageUsage | null): MessageUsage | undefined {
  if (!b) return a;
  if (!a) return b;
  const sum: MessageUsage = { promptTokens: a.promptTokens + b.promptTokens, completionTokens: a.completionTokens + b.completionTokens };
  if (a.cachedTokens !== undefined || b.cachedTokens !== undefined) sum.cachedTokens = (a.cachedTokens ?? 0) + (b.cachedTokens ?? 0);
  return sum;
}

/** What the server may add to a stored message (model profile, usage with its cost); absent on older servers. */
type StoredExtras = { usage?: unknown; profile?: unknown; model?: unknown; cost?: unknown };

/** The answer's cost: inside `usage` as the API gives it (a top-level `cost` from older servers too). */
export function storedCost(m: StoredExtras): number | undefined {
  const inUsage = m.usage && typeof m.usage === 'object' ? (m.usage as { cost?: unknown }).cost : undefined;
  if (typeof inUsage === 'number') return inUsage;
  return typeof m.cost === 'number' ? m.cost : undefined;
}

/** Stored history → UI messages; consecutive assistant messages (one answer's model calls) merge into one. */
export function historyToMessages(history: ChatMessageView[]): UIMessage[] {
  const out: UIMessage[] = [];
  for (const m of history) {
    if (m.role !== 'user' && m.role !== 'assistant') continue;
    const parts = partsOf(m);
    const extras = m as ChatMessageView & StoredExtras;
    const usage = m.role === 'assistant' ? readUsage(extras.usage) : null;
    const model = m.role === 'assistant' ? answeredBy(extras) : undefined;
    const cost = m.role === 'assistant' ? storedCost(extras) : undefined;
    const prev = out[out.length - 1];
    if (m.role === 'assistant' && prev?.role === 'assistant') {
      prev.parts = [...prev.parts, ...parts];
      prev.usage = addUsage(prev.usage, usage);
      if (model) prev.model = model;
      if (cost !== undefined) prev.cost = (prev.cost ?? 0) + cost;
      continue;
    }
    const msg: UIMessage = { id: m.id, role: m.role, parts, createdAt: m.timestamp };
    if (m.role === 'user' && m.author) msg.author = { id: m.author.id, name: m.author.name, ...(m.author.status ? { status: m.author.status } : {}) };
    if (usage) msg.usage = usage;
    if (model) msg.model = model;
    if (cost !== undefined) msg.cost = cost;
    out.push(msg);
  }
  return out.filter((m) => m.role === 'user' || m.parts.length > 0);
}

/** A JSON (non-streamed) chat answer as one assistant message. */
export function jsonResponseToMessage(data: ChatResponseData): UIMessage {
  const msg: UIMessage = { id: data.message.id, role: 'assistant', parts: partsOf(data.message), createdAt: data.message.timestamp };
  const usage = readUsage(data.usage);
  if (usage) msg.usage = usage;
  const model = answeredBy(data.message);
  if (model) msg.model = model;
  const cost = (data.usage as { cost?: unknown } | undefined)?.cost;
  if (typeof cost === 'number') msg.cost = cost;
  return msg;
}

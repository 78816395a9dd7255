import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ToolDefinition } from '../../model/llm/types';
import type { Tokenizer } from './tokens';

/**
 * What a chat template adds around the text: OpenAI documents 3 tokens per message and 3 to
 * prime the answer; open models' templates (`<|im_start|>role\n … <|im_end|>\n`) spend 4–5. The
 * larger figures are used, so a count never falls short of a real one by the framing.
 */
export const FRAMING = {
  perMessage: 5,
  /** Per tool call: the call's own wrapper and its JSON keys (`{"name": …, "arguments": …}`). */
  perToolCall: 8,
  /** The answer's opening tokens. */
  priming: 3,
  /** Templates put the schemas inside instructions (Qwen's "# Tools … <tools></tools>" is ~90). */
  toolsPreamble: 100,
} as const;

type Param = ChatCompletionMessageParam;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('');
  }
  return '';
}

/** What one message adds beside its texts (framing, separators), and the texts to count. */
function partsOf(m: Param): { fixed: number; texts: string[] } {
  let fixed = FRAMING.perMessage;
  const texts = [m.role, textOf(m.content)];
  const name = (m as { name?: unknown }).name;
  if (typeof name === 'string') {
    fixed += 1;
    texts.push(name);
  }
  if (m.role === 'assistant') {
    for (const call of m.tool_calls ?? []) {
      const fn = (call as { function?: { name?: string; arguments?: string } }).function;
      fixed += FRAMING.perToolCall;
      texts.push(call.id ?? '', fn?.name ?? '', fn?.arguments ?? '');
    }
    texts.push(textOf((m as { refusal?: unknown }).refusal));
  }
  if (m.role === 'tool') texts.push(m.tool_call_id ?? '');
  return { fixed, texts };
}

// The loop hands the same message objects to every model call of a turn: each is counted once.
const perObject = new WeakMap<object, { tokenizer: string; n: number }>();

/** Tokens of one message as a model reads it: role, text, tool calls, tool call id, framing. */
export function countMessage(t: Tokenizer, m: Param): number {
  const cached = perObject.get(m);
  if (cached && cached.tokenizer === t.name) return cached.n;
  const { fixed, texts } = partsOf(m);
  let n = fixed;
  for (const text of texts) n += t.count(text);
  perObject.set(m, { tokenizer: t.name, n });
  return n;
}

/** countMessage, yielding to the event loop while it counts large texts. */
export async function countMessageAsync(t: Tokenizer, m: Param): Promise<number> {
  const cached = perObject.get(m);
  if (cached && cached.tokenizer === t.name) return cached.n;
  const { fixed, texts } = partsOf(m);
  let n = fixed;
  for (const text of texts) n += await t.countAsync(text);
  perObject.set(m, { tokenizer: t.name, n });
  return n;
}

const toolsCache = new WeakMap<object, { tokenizer: string; n: number }>();

/** Tokens of the tool schemas as sent (JSON), plus the template's instructions around them. */
export function countTools(t: Tokenizer, tools: readonly ToolDefinition[] | undefined): number {
  if (!tools?.length) return 0;
  const cached = toolsCache.get(tools);
  if (cached && cached.tokenizer === t.name) return cached.n;
  const n = FRAMING.toolsPreamble + t.count(JSON.stringify(tools));
  toolsCache.set(tools, { tokenizer: t.name, n });
  return n;
}

export interface RequestCount {
  total: number;
  tools: number;
  /** Per message, in order. */
  messages: number[];
}

/**
 * Tokens of one chat request: every message with its framing, the tool schemas, and the
 * answer's priming. The same function counts on both sides of the wire in the tests.
 */
export function countRequest(t: Tokenizer, request: { messages: readonly Param[]; tools?: readonly ToolDefinition[] }): RequestCount {
  const messages = request.messages.map((m) => countMessage(t, m));
  const tools = countTools(t, request.tools);
  return { total: FRAMING.priming + tools + messages.reduce((a, b) => a + b, 0), tools, messages };
}

/** countRequest, giving the event loop a turn while it counts large texts (the guard's path). */
export async function countRequestAsync(t: Tokenizer, request: { messages: readonly Param[]; tools?: readonly ToolDefinition[] }): Promise<RequestCount> {
  const messages: number[] = [];
  for (const m of request.messages) messages.push(await countMessageAsync(t, m));
  const tools = countTools(t, request.tools);
  return { total: FRAMING.priming + tools + messages.reduce((a, b) => a + b, 0), tools, messages };
}

import { randomBytes } from 'node:crypto';
import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { StoredToolCall, Usage } from '../conversations/types';
import type { ToolDefinition } from '../tools/types';
import { isTimeoutSignal, mapLlmError } from './errors';

export interface StreamChatInput {
  client: OpenAI;
  model: string;
  messages: ChatCompletionMessageParam[];
  /** Omitted from the request when empty: some servers reject `tools: []`. */
  tools?: ToolDefinition[];
  signal?: AbortSignal;
}

export type StreamChatEvent = { type: 'text-delta'; delta: string };

export interface CompletionResult {
  content: string;
  /** Normalised: every call has an id and a name; arguments are never empty ("" becomes "{}"). */
  toolCalls: StoredToolCall[];
  /** As the server sent it; `toolCalls` decides whether tools run, not this (servers say "stop" with calls). */
  finishReason: string | null;
  /** Zeros when the server sends no usage: an estimate would look like a measurement. */
  usage: Usage;
}

/** A stream ended by the caller's signal; its `reason` is the signal's reason. */
export class LlmAbortError extends Error {
  readonly reason: unknown;
  constructor(reason: unknown) {
    super('The model request was aborted.');
    this.name = 'AbortError';
    this.reason = reason;
  }
}

export function newToolCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

type ToolCallDelta = NonNullable<ChatCompletionChunk.Choice.Delta['tool_calls']>[number];

interface OpenCall {
  id?: string;
  name: string;
  args: string;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Reassembles streamed tool-call fragments. OpenAI tags each fragment with `index` (and the first
 * with `id`); other servers drop one or both, or send each call whole. Matching goes index → id →
 * the call still being written.
 */
export class ToolCallAccumulator {
  private readonly calls: OpenCall[] = [];
  private readonly byIndex = new Map<number, OpenCall>();

  add(d: ToolCallDelta): void {
    const index = typeof d.index === 'number' ? d.index : undefined;
    const id = d.id || undefined;
    const name = d.function?.name || undefined;
    let call: OpenCall | undefined;
    if (index !== undefined) {
      call = this.byIndex.get(index);
      // Some servers reuse index 0 for every call of a message; a different id means a new call.
      if (call && id && call.id && call.id !== id) call = undefined;
    } else if (id) {
      call = this.calls.find((c) => c.id === id);
    } else {
      // Nothing to match on: a name differing from the open call's, or any name once the open
      // call's arguments are complete JSON, starts another call; servers that repeat the name in
      // every fragment keep appending to the open one.
      const last = this.calls[this.calls.length - 1];
      const startsAnother = last && name && last.name && (name !== last.name || (last.args !== '' && isJson(last.args)));
      call = startsAnother ? undefined : last;
    }
    if (!call) {
      call = { id, name: '', args: '' };
      this.calls.push(call);
    }
    if (index !== undefined) this.byIndex.set(index, call);
    if (id && !call.id) call.id = id;
    if (name) {
      // Servers that repeat the full name in every fragment must not produce "read_fileread_file".
      if (!call.name) call.name = name;
      else if (call.name !== name) call.name += name;
    }
    if (typeof d.function?.arguments === 'string') call.args += d.function.arguments;
  }

  get size(): number {
    return this.calls.length;
  }

  finish(): StoredToolCall[] {
    const seen = new Set<string>();
    const out: StoredToolCall[] = [];
    for (const c of this.calls) {
      if (!c.name && c.args.trim() === '') continue;
      let id = c.id;
      // Tool results are matched by id, so two calls may never share one.
      if (!id || seen.has(id)) id = newToolCallId();
      seen.add(id);
      out.push({ id, name: c.name, arguments: c.args.trim() === '' ? '{}' : c.args });
    }
    return out;
  }
}

/**
 * One streamed chat completion. Yields text deltas as they arrive and returns the whole message.
 * Throws an AppError (via mapLlmError) for upstream failures and deadlines, and LlmAbortError when
 * the caller's signal ends it — the SDK ends an aborted stream silently, which would otherwise
 * look like a complete (truncated) answer.
 */
export async function* streamChat(input: StreamChatInput): AsyncGenerator<StreamChatEvent, CompletionResult, undefined> {
  const { client, model, messages, tools, signal } = input;
  const ctx = { model, baseURL: client.baseURL, apiKey: client.apiKey ?? undefined, signal };
  const fail = (e: unknown): never => {
    if (signal?.aborted && !isTimeoutSignal(signal)) throw new LlmAbortError(signal.reason);
    throw mapLlmError(e, ctx);
  };

  let content = '';
  let finishReason: string | null = null;
  let usage: Usage = { promptTokens: 0, completionTokens: 0 };
  const calls = new ToolCallAccumulator();

  let stream: AsyncIterable<ChatCompletionChunk>;
  try {
    stream = await client.chat.completions.create(
      {
        model,
        messages,
        ...(tools && tools.length > 0 ? { tools } : {}),
        stream: true,
        stream_options: { include_usage: true },
      },
      { signal },
    );
  } catch (e) {
    return fail(e);
  }

  try {
    for await (const chunk of stream) {
      if (chunk.usage) {
        usage = { promptTokens: chunk.usage.prompt_tokens ?? 0, completionTokens: chunk.usage.completion_tokens ?? 0 };
      }
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta ?? {};
      // A refusal is the model's answer too; showing it beats an empty bubble.
      const text = (delta.content ?? '') + (delta.refusal ?? '');
      if (text) {
        content += text;
        yield { type: 'text-delta', delta: text };
      }
      for (const tc of delta.tool_calls ?? []) calls.add(tc);
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  } catch (e) {
    return fail(e);
  }
  if (signal?.aborted) return fail(signal.reason);

  return { content, toolCalls: calls.finish(), finishReason, usage };
}

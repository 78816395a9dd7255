import { randomBytes } from 'node:crypto';
import { createParser } from 'eventsource-parser';
import { APIError } from 'openai';
import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { MODEL_OUTPUT_LIMITS, type ToolCall, type ToolDefinition, type Usage } from './types';
import { isTimeoutSignal, mapLlmError } from './errors';
import { nodeBody } from './transport';

export interface StreamChatInput {
  client: OpenAI;
  model: string;
  messages: ChatCompletionMessageParam[];
  /** Omitted from the request when empty: some servers reject `tools: []`. */
  tools?: ToolDefinition[];
  /** Sent as `parallel_tool_calls` only when set (and with tools): several servers reject it. */
  parallelToolCalls?: boolean;
  signal?: AbortSignal;
  /** Named in errors (see LlmErrorContext). */
  profile?: string;
  /** Defaults: MODEL_OUTPUT_LIMITS. */
  limits?: { toolArgumentChars: number; answerChars: number };
}

type UsageChunk = NonNullable<ChatCompletionChunk['usage']> & { prompt_cache_hit_tokens?: number };

/** The provider's usage, with the prompt tokens it served from its cache (OpenAI's field, or DeepSeek's). */
export function usageOf(u: UsageChunk): Usage {
  const cached = u.prompt_tokens_details?.cached_tokens ?? u.prompt_cache_hit_tokens ?? 0;
  return { promptTokens: u.prompt_tokens ?? 0, completionTokens: u.completion_tokens ?? 0, cachedTokens: typeof cached === 'number' && cached > 0 ? cached : 0 };
}

export type StreamChatEvent = { type: 'text-delta'; delta: string };

export interface CompletionResult {
  content: string;
  /** Normalised: every call has an id and a name; arguments are never empty ("" becomes "{}"). */
  toolCalls: ToolCall[];
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
  /** Characters received once past the cap (the arguments are no longer kept). */
  over?: number;
  /** The last characters of `args`. */
  tail: string;
}

/**
 * Whether a call's arguments are complete JSON. Only text that ends like an object can be: its
 * last characters are kept apart (`tail`), as reading the end of a string built by appending
 * flattens it, and parsing the growing arguments at every fragment would be quadratic.
 */
function isJson(call: OpenCall): boolean {
  if (!/[}\]]\s*$/.test(call.tail)) return false;
  const text = call.args;
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

  constructor(private readonly maxArgumentChars: number = MODEL_OUTPUT_LIMITS.toolArgumentChars) {}

  /** Whether a call's arguments passed the cap. */
  get overflowed(): boolean {
    return this.calls.some((c) => c.over !== undefined);
  }

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
      const startsAnother = last && name && last.name && (name !== last.name || (last.args !== '' && isJson(last)));
      call = startsAnother ? undefined : last;
    }
    if (!call) {
      call = { id, name: '', args: '', tail: '' };
      this.calls.push(call);
    }
    if (index !== undefined) this.byIndex.set(index, call);
    if (id && !call.id) call.id = id;
    if (name) {
      // Servers that repeat the full name in every fragment must not produce "read_fileread_file".
      if (!call.name) call.name = name;
      else if (call.name !== name) call.name += name;
    }
    const more = d.function?.arguments;
    if (typeof more !== 'string' || !more) return;
    if (call.over !== undefined) call.over += more.length;
    else if (call.args.length + more.length > this.maxArgumentChars) {
      call.over = call.args.length + more.length;
      call.args = '';
    } else {
      call.args += more;
      call.tail = (call.tail + more).slice(-16);
    }
  }

  get size(): number {
    return this.calls.length;
  }

  finish(): ToolCall[] {
    const seen = new Set<string>();
    const out: ToolCall[] = [];
    for (const c of this.calls) {
      if (!c.name && c.args.trim() === '') continue;
      let id = c.id;
      // Tool results are matched by id, so two calls may never share one.
      if (!id || seen.has(id)) id = newToolCallId();
      seen.add(id);
      out.push({ id, name: c.name, arguments: c.args.trim() === '' ? '{}' : c.args, ...(c.over !== undefined ? { oversized: c.over } : {}) });
    }
    return out;
  }
}

/** Parsed chunks of one SSE body, handed over per network read rather than one by one. */
class ChunkReader {
  private queue: ChatCompletionChunk[] = [];
  private ended = false;
  private failure: unknown = undefined;
  private failed = false;
  private waiting: { resolve: (v: ChatCompletionChunk[] | null) => void; reject: (e: unknown) => void } | null = null;
  private finished = false;
  private readonly parser = createParser({
    onEvent: (event) => {
      if (this.finished || this.failed || !event.data) return;
      if (event.data.startsWith('[DONE]')) {
        this.finished = true;
        return;
      }
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch (e) {
        return this.fail(e);
      }
      // The shapes the SDK's own stream turns into errors: an error object, or an `error` event.
      // Both carry the response's headers: that is what tells them from a connection failure (see upstreamErrorOf).
      const body = data as { error?: unknown; message?: unknown } | null;
      if (event.event === 'error') return this.fail(new APIError(undefined, body?.error as object | undefined, typeof body?.message === 'string' ? body.message : undefined, this.headers));
      if (body && body.error) return this.fail(new APIError(undefined, body.error as object, undefined, this.headers));
      this.queue.push(data as ChatCompletionChunk);
    },
  });

  constructor(private readonly headers: Headers) {}

  /** Whether the body said `[DONE]`. */
  get sawDone(): boolean {
    return this.finished;
  }

  feed(text: string): void {
    this.parser.feed(text);
    this.wake();
  }

  end(): void {
    this.parser.feed('\n\n');
    this.ended = true;
    this.wake();
  }

  fail(e: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.failure = e;
    this.wake();
  }

  private wake(): void {
    const w = this.waiting;
    if (!w) return;
    // What arrived before a failure is still handed over first: it is part of the partial answer.
    if (this.queue.length) {
      this.waiting = null;
      w.resolve(this.take());
    } else if (this.failed) {
      this.waiting = null;
      w.reject(this.failure);
    } else if (this.ended) {
      this.waiting = null;
      w.resolve(null);
    }
  }

  private take(): ChatCompletionChunk[] {
    const out = this.queue;
    this.queue = [];
    return out;
  }

  /** Every chunk parsed since the last call; null once the body has ended. */
  next(): Promise<ChatCompletionChunk[] | null> {
    if (this.queue.length) return Promise.resolve(this.take());
    if (this.failed) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }
}

/** Reads a body into the reader straight from the Node stream, or through the web stream otherwise. */
function readBody(response: Response, reader: ChunkReader, signal: AbortSignal | undefined): () => void {
  const body = nodeBody(response);
  if (body) {
    const node = body.stream;
    const early = body.failure();
    if (early) {
      reader.fail(early);
      return () => undefined;
    }
    node.setEncoding('utf8');
    node.on('data', (text: string) => reader.feed(text));
    node.on('end', () => reader.end());
    node.on('error', (e) => reader.fail(e));
    // A connection that closes before the end is a broken answer, not a short one.
    node.on('close', () => {
      if (!node.readableEnded) reader.fail(signal?.aborted ? signal.reason : Object.assign(new Error('terminated: the connection closed mid-answer'), { code: 'ECONNRESET' }));
    });
    return () => {
      if (!node.readableEnded) node.destroy();
    };
  }
  if (!response.body) {
    reader.end();
    return () => undefined;
  }
  const web = response.body.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await web.read();
        if (done) break;
        reader.feed(decoder.decode(value, { stream: true }));
      }
      reader.feed(decoder.decode());
      reader.end();
    } catch (e) {
      reader.fail(e);
    }
  })();
  return () => void web.cancel().catch(() => undefined);
}

/**
 * One streamed chat completion. Yields text deltas as they arrive (one per network read, however
 * many chunks it held) and returns the whole message. The SDK builds, authenticates and retries
 * the request; the body is read here, straight from the connection. Throws an AppError (via
 * mapLlmError) for upstream failures and deadlines, and LlmAbortError when the caller's signal
 * ends it — an aborted stream must never look like a complete (truncated) answer.
 */
export async function* streamChat(input: StreamChatInput): AsyncGenerator<StreamChatEvent, CompletionResult, undefined> {
  const { client, model, messages, tools, signal } = input;
  const ctx = { model, profile: input.profile, baseURL: client.baseURL, apiKey: client.apiKey ?? undefined, signal };
  const fail = (e: unknown): never => {
    if (signal?.aborted && !isTimeoutSignal(signal)) throw new LlmAbortError(signal.reason);
    throw mapLlmError(e, ctx);
  };

  let content = '';
  let finishReason: string | null = null;
  let usage: Usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  const limits = input.limits ?? MODEL_OUTPUT_LIMITS;
  const calls = new ToolCallAccumulator(limits.toolArgumentChars);
  // Set once the answer passed a cap: reading stops there, and the end of the body is not awaited.
  let cut = false;

  let response: Response;
  try {
    response = await client.chat.completions
      .create(
        {
          model,
          messages,
          ...(tools && tools.length > 0 ? { tools } : {}),
          ...(tools && tools.length > 0 && input.parallelToolCalls !== undefined ? { parallel_tool_calls: input.parallelToolCalls } : {}),
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal },
      )
      .asResponse();
  } catch (e) {
    return fail(e);
  }

  const reader = new ChunkReader(response.headers);
  const close = readBody(response, reader, signal);
  const onAbort = () => reader.fail(signal!.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const batch = await reader.next();
      if (!batch) break;
      let text = '';
      for (const chunk of batch) {
        if (chunk.usage) usage = usageOf(chunk.usage);
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta ?? {};
        // A refusal is the model's answer too; showing it beats an empty bubble.
        text += (delta.content ?? '') + (delta.refusal ?? '');
        for (const tc of delta.tool_calls ?? []) calls.add(tc);
        if (choice.finish_reason) finishReason = choice.finish_reason;
      }
      if (content.length + text.length > limits.answerChars) {
        text = text.slice(0, Math.max(0, limits.answerChars - content.length));
        cut = true;
      }
      if (text) {
        content += text;
        yield { type: 'text-delta', delta: text };
      }
      if (cut || calls.overflowed) {
        cut = true;
        finishReason = 'length';
        break;
      }
    }
  } catch (e) {
    return fail(e);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    // Stopped early (or failed): the connection must not keep the answer coming.
    close();
  }
  if (signal?.aborted) return fail(signal.reason);
  // A body that just stops, with neither [DONE] nor a finish reason, lost its end (a proxy or a
  // dying server closing the connection cleanly); it must not pass for a whole answer.
  if (!cut && !reader.sawDone && finishReason === null) {
    return fail(Object.assign(new Error('terminated: the answer ended without [DONE] or a finish reason'), { code: 'ECONNRESET' }));
  }

  return { content, toolCalls: calls.finish(), finishReason, usage };
}

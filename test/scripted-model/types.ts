/**
 * The vocabulary of a script: what the scripted model may answer to one request.
 * Kept free of node:http so scenarios can be read and written without the server in mind.
 */

/** One tool call the scripted model will emit. */
export interface ScriptedToolCall {
  /** Omitted: a deterministic `call_<n>` id (unless the `omitIds` quirk drops ids altogether). */
  id?: string;
  name: string;
  /** An object is JSON-encoded; a string is sent verbatim (so invalid JSON and "" are possible). */
  arguments?: string | Record<string, unknown>;
}

/** Deviations from OpenAI's wire format that real OpenAI-compatible servers exhibit. */
export interface Quirks {
  /** Tool-call deltas carry no `id`. */
  omitIds?: boolean;
  /** Tool-call deltas carry no `index`. */
  omitIndex?: boolean;
  /** Tool calls are streamed interleaved (a chunk of call 0, a chunk of call 1, ...) instead of one after another. */
  interleave?: boolean;
  /** Each tool call arrives whole in a single delta (name + full arguments), as some local servers do. */
  wholeCalls?: boolean;
}

export interface UsageSpec {
  prompt_tokens: number;
  completion_tokens: number;
  /** Sent as `prompt_tokens_details.cached_tokens`, as OpenAI reports its prompt cache. */
  cached_tokens?: number;
}

/** A normal answer: text, tool calls, or both. */
export interface MessageReply {
  type: 'message';
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Overrides the natural finish_reason (`tool_calls` when there are calls, else `stop`). */
  finishReason?: string;
  /** `false` never sends usage; an object replaces the estimate. Sent only when the client asked for it (stream) or always (non-stream). */
  usage?: UsageSpec | false;
  quirks?: Quirks;
  /** Characters per text delta (default 8); 0 splits by word. Answers arrive as several deltas like a real model's. */
  chunkSize?: number;
  /** Pieces each tool call's arguments are split into (default 3). */
  argumentChunks?: number;
  /** Overrides the server's time to first token for this reply. */
  latencyMs?: number;
  /** Overrides the server's delay between chunks for this reply. */
  tokenDelayMs?: number;
  /** Cuts the connection after this many SSE chunks (simulates a server dying mid-answer). */
  disconnectAfterChunks?: number;
  /** Sends an OpenAI-style `{"error": ...}` chunk after this many chunks, then ends the stream. */
  errorAfterChunks?: number;
}

/** An HTTP error with an OpenAI-style body `{ error: { message, type, param, code } }`. */
export interface ErrorReply {
  type: 'error';
  status: number;
  message?: string;
  errorType?: string;
  code?: string | null;
  headers?: Record<string, string>;
  latencyMs?: number;
}

/** Never answers; the request stays open until the client gives up. */
export interface HangReply {
  type: 'hang';
}

export type Reply = MessageReply | ErrorReply | HangReply;

/** The request as a script sees it. */
export interface ScriptRequest {
  /** Parsed JSON body of POST /v1/chat/completions. */
  body: ChatRequestBody;
  headers: Record<string, string | string[] | undefined>;
}

export interface ChatRequestBody {
  model?: string;
  messages?: ChatMessage[];
  tools?: Array<{ type?: string; function?: { name?: string; description?: string; parameters?: unknown } }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: Array<{ id?: string; type?: string; function?: { name?: string; arguments?: string } }>;
  tool_call_id?: string;
  name?: string;
}

export interface ScriptContext {
  /** 0-based number of this chat request since start (or the last reset). */
  callIndex: number;
  /** Scenario chosen for this request (from the model name, a header, or the server default). */
  scenario: string;
  /** The server's configured delays, so a scenario can choose its own when none is set. */
  latencyMs: number;
  tokenDelayMs: number;
}

export type ScriptFn = (req: ScriptRequest, ctx: ScriptContext) => Reply | Promise<Reply>;

/**
 * A function, a queue of replies consumed one per request, or a scenario name.
 * An exhausted queue answers 500 so a test that under-scripts fails loudly.
 */
export type Script = ScriptFn | Reply[] | string;

export interface RecordedRequest {
  /** 0-based order of arrival (all routes). */
  seq: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or null (GET, or a body that was not JSON). */
  body: ChatRequestBody | null;
  /** Epoch ms when the request arrived. */
  receivedAt: number;
  /** HTTP status sent, once headers went out. */
  status?: number;
  /** Time the server spent on this request, from arrival to the last byte (or to the close). */
  serviceMs?: number;
  /** Part of serviceMs the script spent waiting on purpose (latency, token delays). */
  scriptedDelayMs: number;
  /** Server CPU-ish time: serviceMs − scriptedDelayMs; what a benchmark subtracts. */
  overheadMs?: number;
  /** True when the client closed the connection before the response was complete. */
  clientClosed: boolean;
  /** True once the request is over (completed or closed). */
  done: boolean;
}

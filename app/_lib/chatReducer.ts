import type {
  ChatError,
  ChatState,
  MessagePart,
  NestedToolCall,
  StopReason,
  StreamChunk,
  TokenUsage,
  ToolPart,
  AnsweredBy,
  UIMessage,
} from './types';

export const initialChatState: ChatState = {
  conversationId: null,
  messages: [],
  status: 'idle',
  activeMessageId: null,
  stopReason: null,
  error: null,
  lastUserText: null,
  turnAccepted: false,
  usage: null,
  sawFinish: false,
};

export type ChatAction =
  | { type: 'load'; conversationId: string | null; messages: UIMessage[] }
  | { type: 'submit'; text: string; userMessageId: string; assistantMessageId: string; createdAt?: string; model?: string }
  /** Answers the last user message again: everything after it goes (Retry, Regenerate). */
  | { type: 'regenerate'; assistantMessageId: string; createdAt?: string; model?: string }
  /** Replaces a user message with new text; the messages after it go, as on the server. */
  | { type: 'edit'; messageId: string; text: string; userMessageId: string; assistantMessageId: string; createdAt?: string; model?: string }
  | { type: 'chunk'; chunk: StreamChunk }
  | { type: 'request-failed'; error: ChatError }
  /** The reader stopped: the body ended, the person stopped it, or the network failed. */
  | { type: 'end'; reason: 'complete' | 'aborted' | 'network'; message?: string }
  /** Drops the failed turn's empty answer (and its question) before a retry sends it again. */
  | { type: 'discard-failed-turn' }
  /**
   * The stored conversation, read after a turn was stopped: its last answer replaces the one on
   * screen, so what the screen shows is what the history holds (and what a reload shows).
   */
  | { type: 'stored-answer'; conversationId: string; messages: UIMessage[] }
  | { type: 'dismiss-error' };

/** Tools whose result changes the conversation's output files. */
export const WRITING_TOOLS = new Set(['save_output', 'edit_file', 'apply_patch']);

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export interface ErrorText {
  message: string;
  code?: string;
}

/**
 * An error text as the person reads it: the message, with the code apart. Older servers put the
 * code in front ("E_LLM_UPSTREAM: Rate limited"); that prefix is split off so every error reads the same.
 */
export function splitErrorText(text: string, code?: string): ErrorText {
  const m = /^([A-Z][A-Z0-9_]{2,}):\s+([\s\S]+)$/.exec(text);
  if (m) return { message: m[2], code: code ?? m[1] };
  return code ? { message: text, code } : { message: text };
}

/** A tool result in our API may report failure inside a successful output (`ok: false`). */
export function toolFailure(output: unknown): ErrorText | undefined {
  if (!output || typeof output !== 'object') return undefined;
  const o = output as { ok?: unknown; error?: unknown };
  if (o.ok !== false) return undefined;
  const err = o.error;
  if (err && typeof err === 'object') {
    const e = err as { code?: unknown; message?: unknown };
    return splitErrorText(str(e.message) ?? 'Tool failed', str(e.code));
  }
  return splitErrorText(str(err) ?? 'Tool failed');
}

function updateActive(state: ChatState, fn: (m: UIMessage) => UIMessage): ChatState {
  const id = state.activeMessageId;
  if (!id) return state;
  let changed = false;
  const messages = state.messages.map((m) => {
    if (m.id !== id) return m;
    changed = true;
    return fn(m);
  });
  return changed ? { ...state, messages } : state;
}

function withParts(m: UIMessage, parts: MessagePart[]): UIMessage {
  return { ...m, parts };
}

function upsertTool(m: UIMessage, toolCallId: string, patch: Partial<ToolPart> & { toolName?: string }): UIMessage {
  const idx = m.parts.findIndex((p) => p.type === 'tool' && p.toolCallId === toolCallId);
  if (idx === -1) {
    const part: ToolPart = { type: 'tool', toolCallId, toolName: patch.toolName ?? 'tool', state: 'running', ...patch };
    return withParts(m, [...m.parts, part]);
  }
  const parts = m.parts.slice();
  const prev = parts[idx] as ToolPart;
  parts[idx] = { ...prev, ...patch, toolName: patch.toolName ?? prev.toolName };
  return withParts(m, parts);
}

/** A subagent's call goes under the call that started it; the same id again is the same call, updated. */
function upsertNested(m: UIMessage, parentToolCallId: string, call: NestedToolCall): UIMessage {
  const idx = m.parts.findIndex((p) => p.type === 'tool' && p.toolCallId === parentToolCallId);
  if (idx === -1) return m;
  const parent = m.parts[idx] as ToolPart;
  const nested = parent.nested ? parent.nested.slice() : [];
  const at = nested.findIndex((c) => c.id === call.id);
  if (at === -1) nested.push(call);
  else nested[at] = { ...nested[at], ...call, input: call.input ?? nested[at].input };
  const parts = m.parts.slice();
  parts[idx] = { ...parent, nested };
  return withParts(m, parts);
}

function isToolState(v: unknown): v is ToolPart['state'] {
  return v === 'running' || v === 'done' || v === 'failed';
}

function appendText(m: UIMessage, kind: 'text' | 'reasoning', id: string | undefined, delta: string): UIMessage {
  // Deltas normally name their part; fall back to the last open part of that kind so a server
  // that omits ids still renders in order.
  let idx = -1;
  for (let i = m.parts.length - 1; i >= 0; i--) {
    const p = m.parts[i];
    if (p.type !== kind) continue;
    if (id !== undefined ? p.id === id : p.state === 'streaming') {
      idx = i;
      break;
    }
  }
  // A tool call after the part started means new text belongs after the tool, not above it.
  if (idx !== -1 && idx !== m.parts.length - 1 && m.parts[idx].state === 'done') idx = -1;
  if (idx === -1) {
    return withParts(m, [...m.parts, { type: kind, id: id ?? `${kind}-${m.parts.length}`, text: delta, state: 'streaming' }]);
  }
  const parts = m.parts.slice();
  const p = parts[idx] as Extract<MessagePart, { type: 'text' | 'reasoning' }>;
  parts[idx] = { ...p, text: p.text + delta };
  return withParts(m, parts);
}

function closeText(m: UIMessage, kind: 'text' | 'reasoning', id: string | undefined): UIMessage {
  let changed = false;
  const parts = m.parts.map((p) => {
    if (p.type === kind && p.state === 'streaming' && (id === undefined || p.id === id)) {
      changed = true;
      return { ...p, state: 'done' as const };
    }
    return p;
  });
  return changed ? withParts(m, parts) : m;
}

/** Whatever is still open when a turn ends is settled, so no spinner spins forever. */
function settle(m: UIMessage, toolErrorText: string): UIMessage {
  let changed = false;
  const parts = m.parts.map((p): MessagePart => {
    if ((p.type === 'text' || p.type === 'reasoning') && p.state === 'streaming') {
      changed = true;
      return { ...p, state: 'done' };
    }
    if (p.type === 'tool' && p.state === 'running') {
      changed = true;
      return { ...p, state: 'failed', errorText: p.errorText ?? toolErrorText };
    }
    return p;
  });
  return changed ? withParts(m, parts) : m;
}

function isStopReason(v: unknown): v is StopReason {
  return v === 'stop' || v === 'max_iterations' || v === 'aborted';
}

export function readUsage(v: unknown): TokenUsage | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const p = o.promptTokens ?? o.inputTokens;
  const c = o.completionTokens ?? o.outputTokens;
  if (typeof p !== 'number' && typeof c !== 'number') return null;
  const usage: TokenUsage = { promptTokens: typeof p === 'number' ? p : 0, completionTokens: typeof c === 'number' ? c : 0 };
  const cached = o.cachedTokens;
  if (typeof cached === 'number') usage.cachedTokens = cached;
  return usage;
}

/** `model` as the server may send it: a profile name, or `{ profile, model }`. */
export function readAnsweredBy(v: unknown): AnsweredBy | undefined {
  if (typeof v === 'string' && v) return { profile: v };
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  const out: AnsweredBy = {};
  if (typeof o.profile === 'string' && o.profile) out.profile = o.profile;
  if (typeof o.model === 'string' && o.model) out.model = o.model;
  return out.profile || out.model ? out : undefined;
}

/** The profile and model that answered: separate `profile` and `model` fields, or one `model` value. */
export function answeredBy(x: { profile?: unknown; model?: unknown } | undefined): AnsweredBy | undefined {
  if (!x) return undefined;
  return typeof x.profile === 'string' ? readAnsweredBy({ profile: x.profile, model: x.model }) : readAnsweredBy(x.model);
}

export function applyChunk(state: ChatState, chunk: StreamChunk): ChatState {
  // Chunks that arrive after the turn was settled (e.g. after Stop) must not reopen it.
  if (!state.activeMessageId) return state;
  // Any chunk means the server took the turn, and with it stored the user message.
  const s: ChatState = state.status === 'submitted' || !state.turnAccepted ? { ...state, status: 'streaming', turnAccepted: true } : state;
  const data = chunk.data as Record<string, unknown> | undefined;

  switch (chunk.type) {
    case 'data-conversation': {
      const id = str(data?.conversationId) ?? str(chunk.conversationId);
      const next = id ? { ...s, conversationId: id } : s;
      // The profile that answers this turn, known before its first word.
      const by = answeredBy(data);
      return by ? updateActive(next, (m) => ({ ...m, model: { ...m.model, ...by } })) : next;
    }
    case 'text-start':
      return updateActive(s, (m) => {
        const last = m.parts[m.parts.length - 1];
        // Servers may reuse part ids across steps; a new start after anything else is a new part.
        if (last && last.type === 'text' && last.state === 'streaming' && last.id === chunk.id) return m;
        return withParts(m, [...m.parts, { type: 'text', id: str(chunk.id) ?? `text-${m.parts.length}`, text: '', state: 'streaming' }]);
      });
    case 'text-delta':
      return updateActive(s, (m) => appendText(m, 'text', str(chunk.id), str(chunk.delta) ?? ''));
    case 'text-end':
      return updateActive(s, (m) => closeText(m, 'text', str(chunk.id)));
    case 'reasoning-start':
      return updateActive(s, (m) =>
        withParts(m, [...m.parts, { type: 'reasoning', id: str(chunk.id) ?? `reasoning-${m.parts.length}`, text: '', state: 'streaming' }]),
      );
    case 'reasoning-delta':
      return updateActive(s, (m) => appendText(m, 'reasoning', str(chunk.id), str(chunk.delta) ?? ''));
    case 'reasoning-end':
      return updateActive(s, (m) => closeText(m, 'reasoning', str(chunk.id)));
    case 'tool-input-start': {
      const id = str(chunk.toolCallId);
      if (!id) return s;
      return updateActive(s, (m) => upsertTool(closeText(m, 'text', undefined), id, { toolName: str(chunk.toolName) }));
    }
    case 'tool-input-available': {
      const id = str(chunk.toolCallId);
      if (!id) return s;
      return updateActive(s, (m) =>
        upsertTool(closeText(m, 'text', undefined), id, { toolName: str(chunk.toolName), input: chunk.input }),
      );
    }
    case 'tool-input-error': {
      const id = str(chunk.toolCallId);
      if (!id) return s;
      return updateActive(s, (m) =>
        upsertTool(m, id, { toolName: str(chunk.toolName), input: chunk.input, state: 'failed', ...errorFields(splitErrorText(str(chunk.errorText) ?? 'Invalid tool input', str(chunk.code))) }),
      );
    }
    case 'tool-output-available': {
      const id = str(chunk.toolCallId);
      if (!id) return s;
      if (chunk.preliminary === true) return updateActive(s, (m) => upsertTool(m, id, { output: chunk.output }));
      const failure = toolFailure(chunk.output);
      return updateActive(s, (m) =>
        upsertTool(m, id, { output: chunk.output, state: failure ? 'failed' : 'done', errorText: failure?.message, errorCode: failure?.code }),
      );
    }
    case 'tool-output-error': {
      const id = str(chunk.toolCallId);
      if (!id) return s;
      const e = splitErrorText(str(chunk.errorText) ?? 'Tool failed', str(chunk.code));
      return updateActive(s, (m) => upsertTool(m, id, { state: 'failed', errorText: e.message, errorCode: e.code }));
    }
    case 'data-subagent': {
      const parent = str(data?.parentToolCallId);
      const id = str(chunk.id);
      if (!parent || !id) return s;
      const call: NestedToolCall = {
        id,
        toolName: str(data?.toolName) ?? 'tool',
        input: data?.input,
        state: isToolState(data?.state) ? data.state : 'running',
        ...(str(data?.errorText) ? { errorText: str(data?.errorText) } : {}),
        ...(typeof data?.step === 'number' ? { step: data.step } : {}),
      };
      return updateActive(s, (m) => upsertNested(m, parent, call));
    }
    case 'data-usage': {
      const usage = readUsage(data);
      if (!usage) return s;
      const by = answeredBy(data);
      const cost = typeof data?.cost === 'number' ? data.cost : undefined;
      return updateActive({ ...s, usage }, (m) => ({
        ...m,
        usage,
        ...(by ? { model: { ...m.model, ...by } } : {}),
        ...(cost !== undefined ? { cost } : {}),
      }));
    }
    case 'data-stop': {
      const reason = data?.stopReason;
      return isStopReason(reason) ? { ...s, stopReason: reason } : s;
    }
    case 'abort':
      return { ...s, stopReason: 'aborted' };
    case 'error': {
      const e = splitErrorText(str(chunk.errorText) ?? 'The server reported an error.', str(chunk.code) ?? str(data?.code));
      return { ...s, error: { kind: 'stream', ...e } };
    }
    case 'finish': {
      const settled = updateActive(s, (m) => settle(m, 'No result was reported.'));
      return { ...settled, sawFinish: true, status: 'idle', activeMessageId: null };
    }
    default:
      // start, start-step, finish-step, message-metadata, unknown data-*: nothing to show.
      return s;
  }
}

function errorFields(e: ErrorText): Pick<ToolPart, 'errorText' | 'errorCode'> {
  return e.code ? { errorText: e.message, errorCode: e.code } : { errorText: e.message };
}

function userMessage(id: string, text: string, createdAt?: string): UIMessage {
  return { id, role: 'user', parts: [{ type: 'text', id: `${id}-t`, text, state: 'done' }], createdAt };
}

function pendingAnswer(id: string, createdAt?: string, model?: string): UIMessage {
  return { id, role: 'assistant', parts: [], createdAt, ...(model ? { model: { profile: model } } : {}) };
}

/** The text of a user message. */
export function messageText(m: UIMessage): string {
  return m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

const starting = {
  status: 'submitted' as const,
  stopReason: null,
  error: null,
  sawFinish: false,
  turnAccepted: false,
};

function dropEmptyActive(state: ChatState): UIMessage[] {
  return state.messages.filter((m) => !(m.id === state.activeMessageId && m.parts.length === 0));
}

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case 'load':
      return { ...initialChatState, conversationId: action.conversationId, messages: action.messages };
    case 'submit':
      return {
        ...state,
        ...starting,
        activeMessageId: action.assistantMessageId,
        lastUserText: action.text,
        messages: [...state.messages, userMessage(action.userMessageId, action.text, action.createdAt), pendingAnswer(action.assistantMessageId, action.createdAt, action.model)],
      };
    case 'regenerate': {
      let i = state.messages.length - 1;
      while (i >= 0 && state.messages[i].role !== 'user') i--;
      if (i < 0) return state;
      const kept = state.messages.slice(0, i + 1);
      return {
        ...state,
        ...starting,
        activeMessageId: action.assistantMessageId,
        lastUserText: messageText(kept[i]),
        messages: [...kept, pendingAnswer(action.assistantMessageId, action.createdAt, action.model)],
      };
    }
    case 'edit': {
      const i = state.messages.findIndex((m) => m.id === action.messageId && m.role === 'user');
      if (i < 0) return state;
      return {
        ...state,
        ...starting,
        activeMessageId: action.assistantMessageId,
        lastUserText: action.text,
        messages: [...state.messages.slice(0, i), userMessage(action.userMessageId, action.text, action.createdAt), pendingAnswer(action.assistantMessageId, action.createdAt, action.model)],
      };
    }
    case 'chunk':
      return applyChunk(state, action.chunk);
    case 'request-failed':
      return { ...state, status: 'idle', error: action.error, messages: dropEmptyActive(state), activeMessageId: null };
    case 'end': {
      // Already settled by `finish` or a failed request: nothing left to close.
      if (state.activeMessageId === null) return state.status === 'idle' ? state : { ...state, status: 'idle' };
      let error = state.error;
      let stopReason = state.stopReason;
      let toolText = 'No result was reported.';
      if (action.reason === 'aborted') {
        stopReason = stopReason ?? 'aborted';
        toolText = 'Stopped.';
      } else if (action.reason === 'network') {
        error = error ?? { kind: 'network', message: action.message ?? 'The connection to the server failed.' };
        toolText = 'Connection lost.';
      } else if (!state.sawFinish && !error) {
        error = { kind: 'dropped', message: 'The connection closed before the answer finished.' };
        toolText = 'Connection lost.';
      }
      const settled = updateActive(state, (m) => settle(m, toolText));
      return {
        ...settled,
        status: 'idle',
        error,
        stopReason,
        messages: dropEmptyActive(settled),
        activeMessageId: null,
      };
    }
    case 'discard-failed-turn': {
      const msgs = state.messages;
      const last = msgs[msgs.length - 1];
      let messages = msgs;
      if (last && last.role === 'user') messages = msgs.slice(0, -1);
      else if (last && last.role === 'assistant' && last.parts.length === 0 && msgs[msgs.length - 2]?.role === 'user') messages = msgs.slice(0, -2);
      return { ...state, messages, error: null, turnAccepted: false };
    }
    case 'dismiss-error':
      return { ...state, error: null };
    case 'stored-answer': {
      // Only onto the settled turn it was read for: never over a turn that started since.
      if (state.status !== 'idle' || state.activeMessageId !== null || state.conversationId !== action.conversationId) return state;
      const lastUser = (list: UIMessage[]) => list.map((m) => m.role).lastIndexOf('user');
      const here = lastUser(state.messages);
      const stored = lastUser(action.messages);
      if (here < 0 || stored < 0) return state;
      return { ...state, messages: [...state.messages.slice(0, here + 1), ...action.messages.slice(stored + 1)] };
    }
    default:
      return state;
  }
}

/** Folds a whole recorded stream into state, as the live reader would. */
export function reduceChunks(state: ChatState, chunks: StreamChunk[]): ChatState {
  return chunks.reduce(applyChunk, state);
}

/** The tool that is running right now, for the status line. */
export function runningTool(state: ChatState): ToolPart | undefined {
  const m = state.messages.find((x) => x.id === state.activeMessageId);
  if (!m) return undefined;
  for (let i = m.parts.length - 1; i >= 0; i--) {
    const p = m.parts[i];
    if (p.type === 'tool' && p.state === 'running') return p;
  }
  return undefined;
}

/**
 * UI-only types: the browser's view of a conversation while it streams. What the server sends is
 * typed by types/api.ts; the shapes here are the client's own, derived from it where they meet.
 */
import type { ChatResponseData, PersonRef, UsageView } from '@/types/api';

export type StopReason = ChatResponseData['stopReason'];

export interface TextPart {
  type: 'text';
  id: string;
  text: string;
  state: 'streaming' | 'done';
}

export interface ReasoningPart {
  type: 'reasoning';
  id: string;
  text: string;
  state: 'streaming' | 'done';
}

export type ToolState = 'running' | 'done' | 'failed';

export interface ToolPart {
  type: 'tool';
  toolCallId: string;
  toolName: string;
  input?: unknown;
  state: ToolState;
  output?: unknown;
  errorText?: string;
  /** The error's code (E_...), shown discreetly after its message. */
  errorCode?: string;
  /** Calls of the subagent this call started (spawn_subagent), as they stream in. */
  nested?: NestedToolCall[];
}

/** A subagent's tool call (a `data-subagent` part); its arguments come cut short. */
export interface NestedToolCall {
  /** The data part's id: unique within the turn. */
  id: string;
  toolName: string;
  input?: unknown;
  state: ToolState;
  errorText?: string;
  /** The subagent's model call that made it, from 1. */
  step?: number;
}

export type MessagePart = TextPart | ReasoningPart | ToolPart;

export interface UIMessage {
  id: string;
  role: 'user' | 'assistant';
  parts: MessagePart[];
  createdAt?: string;
  /** The answer's token usage (summed over its model calls), when the server reports it. */
  usage?: MessageUsage;
  /** Which model profile answered. */
  model?: AnsweredBy;
  cost?: number;
  /** A stored user message, with accounts: who wrote it (absent for one's own new messages until reloaded). */
  author?: PersonRef;
}

/** A turn's usage as the stream reports it: the cached count may be missing. */
export type MessageUsage = Pick<UsageView, 'promptTokens' | 'completionTokens'> & Partial<Pick<UsageView, 'cachedTokens'>>;

export interface AnsweredBy {
  profile?: string;
  model?: string;
}

export interface ChatError {
  kind: 'http' | 'stream' | 'network' | 'dropped';
  message: string;
  code?: string;
  status?: number;
}

export type TokenUsage = MessageUsage;

export interface ChatState {
  conversationId: string | null;
  messages: UIMessage[];
  /** submitted: request sent, nothing received yet; streaming: chunks are arriving. */
  status: 'idle' | 'submitted' | 'streaming';
  /** The assistant message the current turn writes into. */
  activeMessageId: string | null;
  stopReason: StopReason | null;
  error: ChatError | null;
  /** What the person last sent, so Retry can send it again. */
  lastUserText: string | null;
  /**
   * The server answered the current (or failed) turn's request with a stream, so it stored the
   * user message: a retry then regenerates instead of sending the message a second time.
   */
  turnAccepted: boolean;
  usage: TokenUsage | null;
  sawFinish: boolean;
}

/** A UI message stream chunk. Kept loose: unknown chunk types must never break the reader. */
export interface StreamChunk {
  type: string;
  [key: string]: unknown;
}

/** POST /api/projects: what a new project is made of. */
export interface NewProjectInput {
  name: string;
  /** One of the releases GET /api/installer lists; the default one when absent. */
  bmadVersion?: string;
  /** The installer's tool ids; `["claude-code"]` when absent. */
  tools?: string[];
  modules?: string[];
  userName?: string;
  communicationLanguage?: string;
  documentLanguage?: string;
  /** Install into the repository cloned as `name` (a finished clone without a BMAD install). */
  inClone?: boolean;
}

/** UI-only types: the browser's view of a conversation while it streams. */
import type { ConversationDetail, ConversationSummaryView } from '@/types/api';

export type StopReason = 'stop' | 'max_iterations' | 'aborted';

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
  author?: { id: string; name: string; status?: 'active' | 'deactivated' | 'removed' };
}

export interface MessageUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number;
}

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

/*
 * Project shapes the browser reads but types/api.ts does not (yet) declare. Kept here so the UI
 * can follow the documented contract before the shared types catch up.
 */

/** Where a conversation stands; `stopped` and `failed` come with the server's `lastTurn`. */
export type ConversationStatus = 'idle' | 'running' | 'interrupted' | 'stopped' | 'failed';

/** How the last turn ended when it did not finish normally (GET /api/conversations/:id). */
export interface LastTurn {
  status: 'stopped' | 'failed' | 'interrupted';
  error?: { code?: string; message?: string };
  at?: string;
}

/** A model profile the server offers (GET /api/models). */
export interface ModelProfile {
  name: string;
  model: string;
  contextWindow?: number;
  configured?: boolean;
}

/** A conversation summary or detail; the server names the project of a project conversation. */
export type WithProject<T> = T & { projectId?: string };

/** A summary as the list gives it, with the statuses the server may report. */
export type SummaryView = Omit<WithProject<ConversationSummaryView>, 'status'> & { status: ConversationStatus };

/** GET /api/conversations/:id with the fields newer servers add (all optional here). */
export type DetailView = Omit<WithProject<ConversationDetail>, 'status'> & {
  status: ConversationStatus;
  lastTurn?: LastTurn;
  /** The model profile the conversation uses. */
  model?: string;
};

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
}

export interface FileWriter {
  /** null for a person's restore (then `person` names them). */
  agentId: string | null;
  /** null when there is no conversation the caller can open. */
  conversationId: string | null;
  at: string;
  person?: string;
}

/** One document of a project's output folder (GET /api/projects/:id/files). */
export interface ProjectFileEntry {
  /** Relative to the project's output folder, posix. */
  path: string;
  name: string;
  size: number;
  modifiedAt: string;
  lastWriter?: FileWriter;
}

/** One recorded version of a document, newest first in a list. */
export interface FileVersion {
  version: string;
  at: string;
  /** null or absent for content the app found on disk rather than wrote. */
  agentId?: string | null;
  conversationId?: string | null;
  /** Who restored it, for a restore a person (or an API caller) made. */
  person?: string;
  size: number;
  kind?: 'write' | 'restore' | 'untracked';
  /** With accounts: the person (or token) whose turn or restore made it. */
  by?: string;
}

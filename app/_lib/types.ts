/** UI-only types: the browser's view of a conversation while it streams. */

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
}

export interface ChatError {
  kind: 'http' | 'stream' | 'network' | 'dropped';
  message: string;
  code?: string;
  status?: number;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

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

/** A conversation summary or detail; the server names the project of a project conversation. */
export type WithProject<T> = T & { projectId?: string };

export interface NewProjectInput {
  name: string;
  modules?: string[];
  userName?: string;
  communicationLanguage?: string;
  documentLanguage?: string;
}

export interface FileWriter {
  agentId: string;
  conversationId: string;
  at: string;
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
  size: number;
  kind?: 'write' | 'restore' | 'untracked';
}

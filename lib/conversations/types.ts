import type { ToolCall, Usage } from '../llm/types';
import type { ToolResult } from '../results';

export type { Usage };


/**
 * The conversation history, in model order. It is the one source of truth: the model's
 * messages are rebuilt from it every turn, and the API shows it.
 */
export type StoredMessage =
  | { id: string; role: 'user'; content: string; timestamp: string }
  | {
      id: string;
      role: 'assistant';
      content: string;
      toolCalls?: ToolCall[];
      usage?: Usage;
      timestamp: string;
    }
  | {
      id: string;
      role: 'tool';
      toolCallId: string;
      name: string;
      result: ToolResult;
      timestamp: string;
    }
  | {
      /** Context the server adds (critical actions); sent to the model as system text. */
      id: string;
      role: 'system';
      content: string;
      timestamp: string;
    };

export type ConversationStatus = 'idle' | 'running' | 'interrupted';

export interface Conversation {
  id: string;
  agentId: string;
  bundleName: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  status: ConversationStatus;
  /** Variables loaded by critical actions (config keys); set once per conversation. */
  variables: Record<string, string>;
  usage: Usage;
}

export interface ConversationSummary extends Conversation {
  messageCount: number;
  lastMessagePreview?: string;
}

export interface ListOptions {
  agentId?: string;
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

/** A held turn on one conversation; release it exactly once. */
export interface TurnLease {
  conversationId: string;
  token: string;
}

/**
 * Storage for conversations. Synchronous on purpose: both stores answer in microseconds
 * (memory, or SQLite through better-sqlite3), and the turn lock stays race-free.
 */
export interface ConversationStore {
  create(input: { id?: string; agentId: string; bundleName: string; title?: string }): Conversation;
  get(id: string): Conversation | null;
  list(options?: ListOptions): Page<ConversationSummary>;
  rename(id: string, title: string): Conversation | null;
  delete(id: string): boolean;
  /** Messages in order. */
  messages(id: string): StoredMessage[];
  append(id: string, message: StoredMessage): void;
  setVariables(id: string, variables: Record<string, string>): void;
  addUsage(id: string, usage: Usage): void;
  /** Takes the conversation's turn lock; null when a turn is already running. */
  beginTurn(id: string): TurnLease | null;
  /** Releases the lock; `interrupted` marks a turn cut short by an abort or error. */
  endTurn(lease: TurnLease, outcome: 'done' | 'interrupted'): void;
  close?(): void;
}

import type { ToolCall, Usage } from '../../model/llm/types';
import type { ToolResult } from '../../core/results';

export type { Usage };

/**
 * How a message goes to the model once the conversation outgrew its context window. The message
 * itself stays as it was, for the people reading the conversation; only the model's copy changes.
 * - `dropped`: left out (a run of dropped messages is replaced by one note);
 * - `elided`: a tool result replaced by `content` (a marker saying what was removed and how to
 *   read it again), or an assistant's tool-call arguments replaced per call id.
 */
export type Compaction =
  | { kind: 'dropped' }
  | { kind: 'elided'; content?: string; toolArguments?: Record<string, string> };

/** A compaction decided for one stored message. */
export interface CompactionMark {
  messageId: string;
  compacted: Compaction;
}

/**
 * Who wrote a user message, with accounts: the person's id, and their name when it was written
 * (shown when the person is gone; a reader sees their current name otherwise).
 */
export interface MessageAuthor {
  id: string;
  name: string;
}

/**
 * The conversation history, in model order. It is the one source of truth: the model's
 * messages are rebuilt from it every turn, and the API shows it.
 */
export type StoredMessage =
  | { id: string; role: 'user'; content: string; timestamp: string; compacted?: Compaction; author?: MessageAuthor }
  | {
      id: string;
      role: 'assistant';
      content: string;
      toolCalls?: ToolCall[];
      usage?: Usage;
      /** The profile that answered, and the model name it sent. */
      profile?: string;
      model?: string;
      /** At the profile's prices, when it has them. */
      cost?: number;
      timestamp: string;
      compacted?: Compaction;
    }
  | {
      id: string;
      role: 'tool';
      toolCallId: string;
      name: string;
      result: ToolResult;
      timestamp: string;
      compacted?: Compaction;
    }
  | {
      /** Context the server adds (critical actions); sent to the model as system text. */
      id: string;
      role: 'system';
      content: string;
      timestamp: string;
      compacted?: Compaction;
    };

/**
 * `idle`: the last turn ended normally. The other three say how the last turn ended when it did
 * not: `stopped` by the user, `failed` on an error (upstream, timeout), `interrupted` because the
 * server went away (a crash, a kill, a shutdown) while it ran.
 */
export type ConversationStatus = 'idle' | 'running' | 'interrupted' | 'stopped' | 'failed';

export interface TurnError {
  code: string;
  message: string;
}

/** How the last turn ended when it did not end normally; kept so a reload can still say so. */
export interface LastTurn {
  status: 'stopped' | 'failed' | 'interrupted';
  /** Set for `failed`. */
  error?: TurnError;
  at: string;
}

/** What endTurn records: `done` leaves the conversation idle (and clears lastTurn). */
export type TurnOutcome = 'done' | 'stopped' | 'interrupted' | { status: 'failed'; error: TurnError };

export interface Conversation {
  id: string;
  agentId: string;
  bundleName: string;
  /** The BMAD project the conversation belongs to; absent for a bundle's conversation. */
  projectId?: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  status: ConversationStatus;
  /** Present exactly when status is stopped, failed or interrupted. */
  lastTurn?: LastTurn;
  /** Variables loaded by critical actions (config keys); set once per conversation. */
  variables: Record<string, string>;
  /** Summed over its model calls; cachedTokens always counted (0 when providers say nothing). */
  usage: Usage & { cachedTokens: number };
  /** Summed cost of the calls made on priced profiles; absent while there is none. */
  cost?: number;
  /** The profile chosen for the conversation (by request or PATCH); absent: chosen per turn. */
  model?: string;
  /** The person who started it (absent: started without accounts, so only admins see it). */
  ownerId?: string;
  /** Shown read-only to the members of its project (private to its owner otherwise). */
  shared?: boolean;
  /** The workspace of its project its turns run in (set when it starts; kept for its later turns). */
  workspaceId?: string;
}

export interface ConversationSummary extends Conversation {
  messageCount: number;
  lastMessagePreview?: string;
}

export interface CreateConversationInput {
  id?: string;
  agentId: string;
  bundleName: string;
  title?: string;
  projectId?: string;
  model?: string;
  ownerId?: string;
  workspaceId?: string;
}

export interface ListOptions {
  /** Across projects and bundles alike unless projectId is given too: agent ids repeat between projects. */
  agentId?: string;
  projectId?: string;
  limit?: number;
  cursor?: string;
  /**
   * Search: only conversations whose title, or one of whose user or assistant messages, holds
   * every word of q, each as a whole word or the start of one (case and accents do not matter).
   * A q without letters or digits matches nothing. Order and paging are those of list().
   */
  q?: string;
  /** Only the conversations this person owns or that are shared (what a project member may read). */
  ownedOrSharedFor?: string;
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
 * What a turn's watcher hears: a Stop was asked for (through any instance on the same database),
 * or the turn's lease was lost (it expired and another instance took the conversation).
 */
export type TurnSignal = 'stop' | 'lost';

/** GET /api/health's view of the store. */
export interface StoreHealth {
  kind: 'memory' | 'sqlite' | 'postgres';
  /** The store answers. */
  ok: boolean;
  /** Schema migrations run on its database, those this code knows, and whether they agree. */
  migrations: { applied: number; latest: number; current: boolean };
}

/**
 * Storage for conversations. Every method returns a Promise so that a store may sit across a
 * network (the Postgres store does); the memory and SQLite stores answer inside the call
 * (better-sqlite3 is synchronous) and only wrap the result. Errors come as rejections.
 *
 * The turn lock stays race-free because beginTurn checks and takes it in one step nothing can
 * interleave with, never as a read and a later write with an await between: one conditional
 * UPDATE in SQLite (a statement is its own transaction), a check-and-set with no await inside
 * the async method in the memory store. A network store must do the same on the server, in one
 * atomic statement.
 */
/** What ConversationStore.commit writes at once. */
export interface TurnBatch {
  messages?: StoredMessage[];
  usage?: { usage: Usage; cost?: number };
  end?: { lease: TurnLease; outcome: TurnOutcome };
}

/** Which model calls a spend sums: a project's, from `since` (inclusive), before `until` (exclusive), ISO times. */
export interface SpendFilter {
  /** Absent: every project's (the server's month). */
  projectId?: string;
  /** Only the calls of this person's conversations (and runs). */
  ownerId?: string;
  since: string;
  until?: string;
  /** Only the calls of these conversations (a run's, a story's runs'). */
  conversationIds?: string[];
}

/** Summed usage of model calls: `calls` counted, `unpriced` of them without a cost. */
export interface SpendTotals {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  cost: number;
  calls: number;
  unpriced: number;
}

/**
 * Where a client that keeps a chat itself and sends it whole with every request (an
 * OpenAI-compatible client) stands in one of our conversations: after the history whose digest
 * is `history`, the conversation goes on from the turn of user message `messageId`.
 */
export interface ClientChatMark {
  /** Whose chat: a person's id (`local` in the single-user mode); a mark is found by its owner only. */
  owner: string;
  /** The client's chat, as the caller names it (at most 200 characters; '' when the history alone keys it). */
  chat: string;
  /** The digest of the history (64 lowercase hex digits, a sha256). */
  history: string;
  conversationId: string;
  /** The stored user message of the turn that history ends with. */
  messageId: string;
}

export interface ConversationStore {
  create(input: CreateConversationInput): Promise<Conversation>;
  get(id: string): Promise<Conversation | null>;
  list(options?: ListOptions): Promise<Page<ConversationSummary>>;
  rename(id: string, title: string): Promise<Conversation | null>;
  delete(id: string): Promise<boolean>;
  /** Messages in order. */
  messages(id: string): Promise<StoredMessage[]>;
  append(id: string, message: StoredMessage): Promise<void>;
  setVariables(id: string, variables: Record<string, string>): Promise<void>;
  /** Adds one model call's usage, and its cost when the profile has prices. */
  addUsage(id: string, usage: Usage, cost?: number): Promise<void>;
  /** Remembers (or, with null, forgets) the profile the conversation runs on; null for unknown ids. */
  setModel(id: string, model: string | null): Promise<Conversation | null>;
  /** Shares the conversation with its project's members (read-only), or makes it private again; null for unknown ids. */
  setShared(id: string, shared: boolean): Promise<Conversation | null>;
  /**
   * Records how messages go to the model from now on (see Compaction). Every id must be one of
   * the conversation's messages; all marks are written or none.
   */
  compact(id: string, marks: CompactionMark[]): Promise<void>;
  /**
   * Takes the conversation's turn lock; null when a turn is already running. `messages` (the
   * turn's user message) are appended in the same transaction, only when the lock is taken.
   */
  beginTurn(id: string, messages?: StoredMessage[]): Promise<TurnLease | null>;
  /** Releases the lock and records how the turn ended (status and lastTurn). */
  endTurn(lease: TurnLease, outcome: TurnOutcome): Promise<void>;
  /**
   * Several writes of one turn as one transaction, in this order: `messages` appended, `usage`
   * added, the turn ended (`end`). A turn stores a model call's message with its usage this way,
   * and its answer with the turn's end: one commit each instead of three.
   */
  commit(id: string, batch: TurnBatch): Promise<void>;
  /**
   * Removes the message `messageId` and every message after it; call it holding the turn lock.
   * Message count, preview and an automatic title (one the store took from the messages, never a
   * given or renamed one) follow what is left. Resolves with the number of messages removed;
   * rejects with E_VALIDATION (field messageId) when the conversation has no such message.
   */
  truncateFrom(id: string, messageId: string): Promise<number>;
  /**
   * Records a Stop for the turn running on the conversation, for whichever instance runs it.
   * Resolves false when no turn runs; rejects with E_CONVERSATION_NOT_FOUND for unknown ids.
   */
  requestStop(id: string): Promise<boolean>;
  /**
   * Calls `on` at most once: when the turn this lease holds is asked to stop (requestStop through
   * any store on the same database: at once in this store, within about a second elsewhere), or
   * when a store whose leases expire lost it. Returns the function that ends the watch.
   */
  watchTurn(lease: TurnLease, on: (signal: TurnSignal) => void): () => void;
  /**
   * What a project's model calls used in a span of time, from the usage ledger every addUsage
   * and commit with usage writes (for conversations of a project); deleting or truncating a
   * conversation does not take back what it spent.
   */
  spend(filter: SpendFilter): Promise<SpendTotals>;
  /** The same sums for each person whose conversations made the calls (null: no owner, single-user mode). */
  spendByOwner(filter: SpendFilter): Promise<(SpendTotals & { ownerId: string | null })[]>;
  /**
   * Remembers a client chat's place (see ClientChatMark): the latest mark of an owner, chat and
   * history replaces the one before. Deleting the conversation forgets its marks. Rejects with
   * E_CONVERSATION_NOT_FOUND for unknown conversations, a TypeError for malformed marks.
   */
  markClientChat(mark: ClientChatMark): Promise<void>;
  /** The place marked for that owner, chat and history, or null. */
  findClientChat(owner: string, chat: string, history: string): Promise<{ conversationId: string; messageId: string } | null>;
  /** Whether the store answers and its schema is current. */
  health(): Promise<StoreHealth>;
  close(): Promise<void>;
}

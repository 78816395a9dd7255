import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { AppError } from '../../core/errors';
import type { ToolCall, ToolDefinition, Usage } from '../llm/types';
import type { ToolResult } from '../../core/results';

export type StopReason = 'stop' | 'max_iterations' | 'aborted';

/** The tools the loop may call; the loop knows nothing else about them. */
export interface LoopTools {
  definitions: ToolDefinition[];
  /** Runs one call; never throws for a tool's own failure (that is a result). */
  execute(call: ToolCall, signal: AbortSignal): Promise<ToolOutcome>;
}

/** A tool's answer and how long it took, measured once where the tool runs. */
export interface ToolOutcome {
  result: ToolResult;
  durationMs: number;
}

/** What was taken out of a request so it fits the model's context window. */
export interface CompactionReport {
  profile: string;
  /** Tokens a request may have: the context window less the room kept for the answer. */
  limit: number;
  tokensBefore: number;
  tokensAfter: number;
  /** Tool results replaced by a marker saying what was removed and how to read it again. */
  toolResults: number;
  /** Assistant messages whose long tool-call arguments (documents already written) were shortened. */
  toolArguments: number;
  /** Messages of old turns left out. */
  droppedMessages: number;
}

/**
 * Runs before every model call with the request's messages: hands them back as they are, a
 * compacted copy (the loop goes on from that copy), or an error that ends the turn before the call.
 */
export type PrepareRequest = (messages: ChatCompletionMessageParam[]) => Promise<PrepareResult>;
export type PrepareResult = { messages: ChatCompletionMessageParam[]; compaction?: CompactionReport } | { error: AppError };

/**
 * What happens during a turn, in order. The chat service persists these as they come and
 * turns them into SSE chunks or one JSON body.
 */
export type TurnEvent =
  | { type: 'step-start'; iteration: number }
  | { type: 'text-delta'; delta: string }
  /** A complete assistant message of one model call (text and/or tool calls). */
  /** `byServer`: calls the server planned before the first model call (no model spoke). */
  | { type: 'assistant-message'; content: string; toolCalls: ToolCall[]; usage: Usage; byServer?: boolean }
  | { type: 'tool-call'; call: ToolCall; input: unknown }
  | { type: 'tool-result'; call: ToolCall; result: ToolResult; durationMs: number }
  | { type: 'step-finish'; iteration: number; usage: Usage }
  | SubagentToolEvent
  /** The request was compacted to fit the context window, before the model call of this step. */
  | { type: 'compaction'; report: CompactionReport }
  | { type: 'finish'; stopReason: StopReason; usage: Usage; iterations: number }
  | { type: 'error'; error: AppError };

/**
 * A tool call of a loop that a tool of this turn runs (a subagent), once when it starts (no
 * result) and once when it ends. Shown under the call that started it (`parentToolCallId`); never
 * part of the turn's history, which keeps the nested calls in that call's result.
 */
export interface SubagentToolEvent {
  type: 'subagent-tool';
  parentToolCallId: string;
  /** Order of the call within its subagent, from 0; unique there even when a server reuses call ids. */
  seq: number;
  /** The subagent's model call that asked for it, from 1. */
  step: number;
  call: ToolCall;
  /** The arguments, cut to what a person needs to see. */
  input: unknown;
  result?: ToolResult;
}

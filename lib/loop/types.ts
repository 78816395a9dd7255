import type { AppError } from '../errors';
import type { Usage, StoredToolCall } from '../conversations/types';
import type { ToolCallRequest, ToolDefinition, ToolResult } from '../tools/types';

export type StopReason = 'stop' | 'max_iterations' | 'aborted';

/** The tools the loop may call; the loop knows nothing else about them. */
export interface LoopTools {
  definitions: ToolDefinition[];
  execute(call: ToolCallRequest, signal: AbortSignal): Promise<ToolResult>;
}

/**
 * What happens during a turn, in order. The chat service persists these as they come and
 * turns them into SSE chunks or one JSON body.
 */
export type TurnEvent =
  | { type: 'step-start'; iteration: number }
  | { type: 'text-delta'; delta: string }
  /** A complete assistant message of one model call (text and/or tool calls). */
  | { type: 'assistant-message'; content: string; toolCalls: StoredToolCall[]; usage: Usage }
  | { type: 'tool-call'; call: ToolCallRequest; input: unknown }
  | { type: 'tool-result'; call: ToolCallRequest; result: ToolResult; durationMs: number }
  | { type: 'step-finish'; iteration: number; usage: Usage }
  | { type: 'finish'; stopReason: StopReason; usage: Usage; iterations: number }
  | { type: 'error'; error: AppError };

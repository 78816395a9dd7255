export { createLlmClient, PLACEHOLDER_API_KEY } from './client';
export type { LlmClientOptions } from './client';
export { streamChat, ToolCallAccumulator, LlmAbortError, newToolCallId } from './stream';
export type { StreamChatInput, StreamChatEvent, CompletionResult } from './stream';
export { mapLlmError, isAbortError, isTimeoutSignal, redact } from './errors';
export type { LlmErrorContext } from './errors';

export { createLlmClient } from './client';
export { streamChat } from './stream';
export type { CompletionResult } from './stream';
export { mapLlmError, noToolsError } from './errors';

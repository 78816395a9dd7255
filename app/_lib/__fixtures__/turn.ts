/** A recorded turn in the shape lib/model/stream emits: text, two tools (one failing), text, finish. */
const chunks: Record<string, unknown>[] = [
  { type: 'start', messageId: 'm1' },
  { type: 'data-conversation', data: { conversationId: 'conv-1' } },
  { type: 'start-step' },
  { type: 'text-start', id: 'm1-t0' },
  { type: 'text-delta', id: 'm1-t0', delta: 'Let me look at ' },
  { type: 'text-delta', id: 'm1-t0', delta: 'the workflow.' },
  { type: 'text-end', id: 'm1-t0' },
  { type: 'tool-input-available', toolCallId: 'call_1', toolName: 'read_file', input: { file_path: '{bundle-root}/workflows/plan/workflow.yaml' }, dynamic: true },
  { type: 'tool-input-available', toolCallId: 'call_2', toolName: 'read_file', input: { file_path: '{bundle-root}/missing.md' }, dynamic: true },
  { type: 'tool-output-available', toolCallId: 'call_1', output: { ok: true, path: '{bundle-root}/workflows/plan/workflow.yaml', content: 'name: plan', bytes: 10, lines: 1, sha256: 'x', truncated: false }, dynamic: true },
  { type: 'tool-output-error', toolCallId: 'call_2', errorText: 'ENOENT: File not found: {bundle-root}/missing.md', dynamic: true },
  { type: 'finish-step' },
  { type: 'start-step' },
  { type: 'tool-input-available', toolCallId: 'call_3', toolName: 'save_output', input: { file_path: '{output_folder}/brief.md', content: '# Brief' }, dynamic: true },
  { type: 'tool-output-available', toolCallId: 'call_3', output: { ok: true, path: '{output_folder}/brief.md', bytes_written: 7, sha256: 'y' }, dynamic: true },
  { type: 'finish-step' },
  { type: 'start-step' },
  { type: 'text-start', id: 'm1-t1' },
  { type: 'text-delta', id: 'm1-t1', delta: '| a | b |\n|---|---|\n| 1 | 2 |\n' },
  { type: 'text-end', id: 'm1-t1' },
  { type: 'finish-step' },
  { type: 'data-usage', data: { promptTokens: 120, completionTokens: 30, iterations: 3 } },
  { type: 'data-stop', data: { stopReason: 'stop' } },
  { type: 'finish', finishReason: 'stop' },
];

export const recordedTurnChunks = chunks;
export const recordedTurnSse = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';

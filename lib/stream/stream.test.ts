import { UiStreamEncoder, sse } from '.';
import { AppError } from '../errors';
import type { TurnEvent } from '../loop/types';

const call = { id: 'c1', name: 'read_file', arguments: '{"file_path":"{bundle-root}/a.md"}' };
const usage = { promptTokens: 10, completionTokens: 2 };

function encodeAll(events: TurnEvent[]) {
  const enc = new UiStreamEncoder('m1');
  return [...enc.begin('conv-1'), ...events.flatMap((e) => enc.encode(e))];
}

describe('UiStreamEncoder', () => {
  it('frames steps, closes text around tool calls and ends with usage, stop and finish', () => {
    const chunks = encodeAll([
      { type: 'step-start', iteration: 1 },
      { type: 'text-delta', delta: 'Let me look. ' },
      { type: 'assistant-message', content: 'Let me look. ', toolCalls: [call], usage },
      { type: 'tool-call', call, input: { file_path: '{bundle-root}/a.md' } },
      { type: 'tool-result', call, result: { ok: true, content: 'A' }, durationMs: 1 },
      { type: 'step-finish', iteration: 1, usage },
      { type: 'step-start', iteration: 2 },
      { type: 'text-delta', delta: 'Done.' },
      { type: 'step-finish', iteration: 2, usage },
      { type: 'finish', stopReason: 'stop', usage, iterations: 2 },
    ]);
    expect(chunks.map((c) => c.type)).toEqual([
      'start', 'data-conversation',
      'start-step', 'text-start', 'text-delta', 'text-end', 'tool-input-available', 'tool-output-available', 'finish-step',
      'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step',
      'data-usage', 'data-stop', 'finish',
    ]);
    expect(chunks[1]).toEqual({ type: 'data-conversation', data: { conversationId: 'conv-1' } });
    const ids = chunks.filter((c) => c.type === 'text-start').map((c) => c.id);
    expect(new Set(ids).size).toBe(2);
    expect(chunks.find((c) => c.type === 'tool-input-available')).toMatchObject({ toolCallId: 'c1', toolName: 'read_file', input: { file_path: '{bundle-root}/a.md' } });
  });

  it('turns failed tool results into tool-output-error with the code', () => {
    const chunks = encodeAll([
      { type: 'tool-call', call, input: {} },
      { type: 'tool-result', call, result: { ok: false, error: { code: 'ENOENT', message: 'Not found: {bundle-root}/a.md' } }, durationMs: 1 },
    ]);
    expect(chunks.at(-1)).toMatchObject({ type: 'tool-output-error', toolCallId: 'c1', errorText: 'ENOENT: Not found: {bundle-root}/a.md' });
  });

  it('reports max_iterations as data-stop and errors as an error chunk', () => {
    const chunks = encodeAll([
      { type: 'finish', stopReason: 'max_iterations', usage, iterations: 25 },
      { type: 'error', error: new AppError('E_LLM_TIMEOUT', 'took too long') },
    ]);
    expect(chunks.find((c) => c.type === 'data-stop')).toEqual({ type: 'data-stop', data: { stopReason: 'max_iterations' } });
    expect(chunks.at(-1)).toEqual({ type: 'error', errorText: 'E_LLM_TIMEOUT: took too long' });
  });

  it('writes SSE frames', () => {
    expect(sse({ type: 'start' })).toBe('data: {"type":"start"}\n\n');
    expect(sse('[DONE]')).toBe('data: [DONE]\n\n');
  });
});

describe('UiStreamEncoder with a model profile', () => {
  it('names the profile with the conversation, announces compaction, and gives usage its cached tokens and cost', () => {
    const enc = new UiStreamEncoder('m1', { profile: 'strong', model: 'gpt-4.1', price: { input: 2, cachedInput: 0.5, output: 8 } });
    const report = { profile: 'strong', limit: 7168, tokensBefore: 7400, tokensAfter: 5200, toolResults: 2, toolArguments: 1, droppedMessages: 0 };
    const chunks = [
      ...enc.begin('conv-1'),
      ...enc.encode({ type: 'step-start', iteration: 1 }),
      ...enc.encode({ type: 'compaction', report }),
      ...enc.encode({ type: 'finish', stopReason: 'stop', usage: { promptTokens: 1000, completionTokens: 100, cachedTokens: 400 }, iterations: 1 }),
    ];
    expect(chunks.find((c) => c.type === 'data-conversation')).toEqual({ type: 'data-conversation', data: { conversationId: 'conv-1', profile: 'strong', model: 'gpt-4.1' } });
    expect(chunks.find((c) => c.type === 'data-compaction')).toEqual({ type: 'data-compaction', data: report });
    expect(chunks.find((c) => c.type === 'data-usage')!.data).toEqual({ promptTokens: 1000, completionTokens: 100, cachedTokens: 400, cost: (600 * 2 + 400 * 0.5 + 100 * 8) / 1e6, iterations: 1 });
  });
});

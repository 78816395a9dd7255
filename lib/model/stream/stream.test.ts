import { UiStreamEncoder, sse } from '.';
import { AppError } from '../../core/errors';
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

  it('reports max_iterations as data-stop and errors as the plain message, the code in a data part before it', () => {
    const chunks = encodeAll([
      { type: 'finish', stopReason: 'max_iterations', usage, iterations: 25 },
      { type: 'error', error: new AppError('E_LLM_TIMEOUT', 'took too long') },
    ]);
    expect(chunks.find((c) => c.type === 'data-stop')).toEqual({ type: 'data-stop', data: { stopReason: 'max_iterations' } });
    expect(chunks.slice(-2)).toEqual([
      { type: 'data-error', data: { code: 'E_LLM_TIMEOUT', message: 'took too long' }, transient: true },
      { type: 'error', errorText: 'took too long' },
    ]);
  });

  it('names the stored user message when it is given', () => {
    const enc = new UiStreamEncoder('m1');
    expect(enc.begin('conv-1', 'msg_u')).toEqual([
      { type: 'start', messageId: 'm1' },
      { type: 'data-conversation', data: { conversationId: 'conv-1' } },
      { type: 'data-user-message', data: { id: 'msg_u' }, transient: true },
    ]);
  });

  it('writes SSE frames', () => {
    expect(sse({ type: 'start' })).toBe('data: {"type":"start"}\n\n');
    expect(sse('[DONE]')).toBe('data: [DONE]\n\n');
  });
});

describe('nested activity (subagents)', () => {
  const parent = { id: 'p1', name: 'spawn_subagent', arguments: '{"instructions":"Find the PRD"}' };
  const nested = { id: 'call_0', name: 'read_file', arguments: '{"file_path":"{output_folder}/prd.md"}' };
  const events: TurnEvent[] = [
    { type: 'step-start', iteration: 1 },
    { type: 'assistant-message', content: '', toolCalls: [parent], usage },
    { type: 'tool-call', call: parent, input: { instructions: 'Find the PRD' } },
    { type: 'subagent-tool', parentToolCallId: 'p1', seq: 0, step: 1, call: nested, input: { file_path: '{output_folder}/prd.md' } },
    { type: 'subagent-tool', parentToolCallId: 'p1', seq: 0, step: 1, call: nested, input: { file_path: '{output_folder}/prd.md' }, result: { ok: false, error: { code: 'ENOENT', message: 'Not found' } } },
    { type: 'tool-result', call: parent, result: { ok: true, result: 'No PRD yet.', steps: 2, tool_calls: [{ name: 'read_file', ok: false, error: 'ENOENT' }] }, durationMs: 5 },
    { type: 'step-finish', iteration: 1, usage },
    { type: 'step-start', iteration: 3 },
    { type: 'text-delta', delta: 'There is no PRD yet.' },
    { type: 'step-finish', iteration: 3, usage },
    { type: 'finish', stopReason: 'stop', usage, iterations: 4 },
  ];

  it('shows a nested call as a data-subagent part under its parent call, updated in place', () => {
    const chunks = encodeAll(events).filter((c) => c.type === 'data-subagent');
    expect(chunks).toEqual([
      { type: 'data-subagent', id: 'p1:0', data: { parentToolCallId: 'p1', toolCallId: 'call_0', toolName: 'read_file', input: { file_path: '{output_folder}/prd.md' }, step: 1, state: 'running' } },
      { type: 'data-subagent', id: 'p1:0', data: expect.objectContaining({ state: 'failed', errorText: 'ENOENT: Not found' }) },
    ]);
  });

  it('stays a valid UI message stream: the AI SDK reads it into one message with the tool and its nested call', async () => {
    const { readUIMessageStream, uiMessageChunkSchema } = await import('ai');
    const chunks = encodeAll(events);
    const schema = uiMessageChunkSchema();
    for (const c of chunks) expect((await schema.validate!(c)).success).toBe(true);
    const stream = new ReadableStream({
      start(ctrl) {
        for (const c of chunks) ctrl.enqueue(c);
        ctrl.close();
      },
    });
    let last: { parts: Array<Record<string, unknown>> } | undefined;
    for await (const m of readUIMessageStream({ stream: stream as never, terminateOnError: true })) last = m as never;
    const parts = last!.parts.filter((p) => p.type !== 'step-start');
    expect(parts.map((p) => p.type)).toEqual(['data-conversation', 'dynamic-tool', 'data-subagent', 'text', 'data-usage', 'data-stop']);
    expect(parts[1]).toMatchObject({ toolCallId: 'p1', toolName: 'spawn_subagent', state: 'output-available' });
    expect(parts[2]).toMatchObject({ id: 'p1:0', data: { parentToolCallId: 'p1', state: 'failed' } });
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

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type OpenAI from 'openai';
import { reply, startScriptedModel, type ScriptedModel } from '../../../test/scripted-model';
import { AppError } from '../../core/errors';
import type { ToolDefinition } from './types';
import { createLlmClient } from './client';
import { LlmAbortError, streamChat, ToolCallAccumulator, type CompletionResult } from './stream';

const TOOLS: ToolDefinition[] = ['list_files', 'read_file'].map((name) => ({
  type: 'function',
  function: { name, description: name, parameters: { type: 'object', properties: {} } },
}));

let model: ScriptedModel;
let client: OpenAI;

beforeAll(async () => {
  model = await startScriptedModel();
  client = createLlmClient({ baseURL: model.url, model: 'm', configured: true });
});
afterAll(() => model.close());
beforeEach(() => {
  model.reset();
  model.setScript(undefined);
});

async function run(tools: ToolDefinition[] = TOOLS, signal?: AbortSignal): Promise<{ deltas: string[]; result: CompletionResult }> {
  const gen = streamChat({ client, model: 'm', messages: [{ role: 'user', content: 'hi' }], tools, signal });
  const deltas: string[] = [];
  for (;;) {
    const next = await gen.next();
    if (next.done) return { deltas, result: next.value };
    deltas.push(next.value.delta);
  }
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a failure');
}

describe('streamChat against the scripted model', () => {
  it('streams a plain answer as several deltas and returns the whole message with usage', async () => {
    // Chunks spaced apart arrive in separate reads, so each becomes its own delta.
    model.setScript([reply.text('Hello there, this is a streamed answer.', { chunkSize: 5, tokenDelayMs: 10, usage: { prompt_tokens: 11, completion_tokens: 7 } })]);
    const { deltas, result } = await run([]);
    // How many chunks share a read depends on timing; that they do not all arrive as one does not.
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Hello there, this is a streamed answer.');
    expect(result).toEqual({
      content: 'Hello there, this is a streamed answer.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { promptTokens: 11, completionTokens: 7, cachedTokens: 0 },
    });
    const body = model.chatRequests()[0].body!;
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    // Some servers reject an empty tools array, so none is sent.
    expect(body).not.toHaveProperty('tools');
  });

  it('hands over chunks that arrive in one read as one delta', async () => {
    model.setScript([reply.text('All of this arrives at once.', { chunkSize: 3, tokenDelayMs: 0 })]);
    const { deltas, result } = await run([]);
    expect(deltas).toEqual(['All of this arrives at once.']);
    expect(result.content).toBe('All of this arrives at once.');
  });

  it('reads the body through web streams when the client has another fetch', async () => {
    const webClient = createLlmClient({ baseURL: model.url, model: 'm', configured: true }, { fetch: globalThis.fetch });
    model.setScript([reply.text('Through the global fetch.', { chunkSize: 4, tokenDelayMs: 2, usage: { prompt_tokens: 3, completion_tokens: 4 } })]);
    const gen = streamChat({ client: webClient, model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const deltas: string[] = [];
    let next = await gen.next();
    for (; !next.done; next = await gen.next()) deltas.push(next.value.delta);
    expect(deltas.join('')).toBe('Through the global fetch.');
    expect(next.value).toMatchObject({ content: 'Through the global fetch.', finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 4 } });
  });

  it('sends the tool definitions and the placeholder key when none is configured', async () => {
    model.setScript([reply.text('ok')]);
    await run();
    const req = model.chatRequests()[0];
    expect(req.body!.tools).toEqual(TOOLS);
    expect(req.headers.authorization).toBe('Bearer not-needed');
  });

  it('reassembles tool-call arguments streamed in many fragments, with text before them', async () => {
    model.setScript([
      reply.toolCalls(
        [
          { id: 'call_a', name: 'read_file', arguments: { file_path: '{bundle-root}/bundle.yaml', start_line: 1 } },
          { id: 'call_b', name: 'list_files', arguments: { path: '{output_folder}', recursive: true } },
        ],
        { text: 'Let me look.', argumentChunks: 7 },
      ),
    ]);
    const { deltas, result } = await run();
    expect(deltas.join('')).toBe('Let me look.');
    expect(result.finishReason).toBe('tool_calls');
    expect(result.toolCalls).toEqual([
      { id: 'call_a', name: 'read_file', arguments: JSON.stringify({ file_path: '{bundle-root}/bundle.yaml', start_line: 1 }) },
      { id: 'call_b', name: 'list_files', arguments: JSON.stringify({ path: '{output_folder}', recursive: true }) },
    ]);
  });

  it('keeps interleaved fragments of parallel calls apart by index', async () => {
    model.setScript([
      reply.toolCalls(
        [
          { name: 'read_file', arguments: { file_path: 'a.md' } },
          { name: 'read_file', arguments: { file_path: 'b.md' } },
          { name: 'list_files', arguments: { path: '.' } },
        ],
        { quirks: { interleave: true }, argumentChunks: 4 },
      ),
    ]);
    const { result } = await run();
    expect(result.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['read_file', { file_path: 'a.md' }],
      ['read_file', { file_path: 'b.md' }],
      ['list_files', { path: '.' }],
    ]);
    expect(new Set(result.toolCalls.map((c) => c.id)).size).toBe(3);
  });

  it('copes with missing ids and missing index: generates unique ids and splits calls by name', async () => {
    model.setScript([
      reply.toolCalls(
        [
          { name: 'read_file', arguments: { file_path: 'a.md' } },
          { name: 'list_files', arguments: { path: '.' } },
        ],
        { quirks: { omitIds: true, omitIndex: true } },
      ),
    ]);
    const { result } = await run();
    expect(result.toolCalls).toHaveLength(2);
    expect(result.toolCalls[0]).toMatchObject({ name: 'read_file', arguments: '{"file_path":"a.md"}' });
    expect(result.toolCalls[1]).toMatchObject({ name: 'list_files', arguments: '{"path":"."}' });
    for (const c of result.toolCalls) expect(c.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(result.toolCalls[0].id).not.toBe(result.toolCalls[1].id);
  });

  it('matches fragments by id when the index is missing', async () => {
    model.setScript([
      reply.toolCalls(
        [
          { id: 'call_1', name: 'read_file', arguments: { file_path: 'a.md' } },
          { id: 'call_2', name: 'read_file', arguments: { file_path: 'b.md' } },
        ],
        { quirks: { omitIndex: true, wholeCalls: true } },
      ),
    ]);
    const { result } = await run();
    expect(result.toolCalls.map((c) => c.id)).toEqual(['call_1', 'call_2']);
  });

  it('treats finish_reason "stop" with tool calls as tool calls, "" arguments as {}, and missing usage as zeros', async () => {
    model.setScript([reply.toolCalls([{ id: 'call_x', name: 'list_files', arguments: '' }], { finishReason: 'stop', usage: false })]);
    const { result } = await run();
    expect(result.finishReason).toBe('stop');
    expect(result.toolCalls).toEqual([{ id: 'call_x', name: 'list_files', arguments: '{}' }]);
    expect(result.usage).toEqual({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 });
  });

  it('keeps invalid JSON arguments raw for the tool registry to reject', async () => {
    model.setScript([reply.toolCalls([{ id: 'call_bad', name: 'read_file', arguments: '{"file_path": ' }])]);
    const { result } = await run();
    expect(result.toolCalls[0].arguments).toBe('{"file_path": ');
  });

  it('maps an error chunk inside the stream to E_LLM_UPSTREAM', async () => {
    model.setScript([reply.text('partial answer that breaks', { chunkSize: 4, errorAfterChunks: 3 })]);
    const e = await failure(run());
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe('E_LLM_UPSTREAM');
    expect((e as AppError).message).toMatch(/mid-answer/);
  });

  it('hands over the text that came with an error chunk before failing', async () => {
    model.setScript([reply.text('kept text', { chunkSize: 3, tokenDelayMs: 0, errorAfterChunks: 3 })]);
    const gen = streamChat({ client, model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const deltas: string[] = [];
    const e = await failure(
      (async () => {
        for (let r = await gen.next(); !r.done; r = await gen.next()) deltas.push(r.value.delta);
      })(),
    );
    expect((e as AppError).code).toBe('E_LLM_UPSTREAM');
    // Three chunks (the role chunk and two of text) arrive in the read that also holds the error.
    expect(deltas.join('')).toBe('kept t');
  });

  it('does not take a body that just stops (no [DONE], no finish reason) for a whole answer', async () => {
    const cut = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] })}\n\n`);
      });
    });
    await new Promise<void>((r) => cut.listen(0, '127.0.0.1', r));
    try {
      const cutClient = createLlmClient({ baseURL: `http://127.0.0.1:${(cut.address() as AddressInfo).port}/v1`, model: 'm', configured: true });
      const gen = streamChat({ client: cutClient, model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      const e = (await failure(
        (async () => {
          for (let r = await gen.next(); !r.done; r = await gen.next());
        })(),
      )) as AppError;
      expect(e.code).toBe('E_LLM_UPSTREAM');
      expect(e.message).toMatch(/broke mid-answer/);
    } finally {
      await new Promise((r) => cut.close(r));
    }
  });

  it('maps a connection that dies mid-stream to E_LLM_UPSTREAM', async () => {
    model.setScript([reply.text('this answer will be cut off', { chunkSize: 3, disconnectAfterChunks: 3 })]);
    const e = (await failure(run())) as AppError;
    expect(e.code).toBe('E_LLM_UPSTREAM');
    expect(e.message).toContain(`127.0.0.1:${model.port}`);
  });

  it('throws LlmAbortError (not a truncated result) when the caller aborts mid-stream', async () => {
    model.setScript([reply.text('word '.repeat(200), { chunkSize: 0, tokenDelayMs: 20 })]);
    const ctl = new AbortController();
    const gen = streamChat({ client, model: 'm', messages: [{ role: 'user', content: 'hi' }], signal: ctl.signal });
    await gen.next();
    ctl.abort();
    const e = await failure((async () => { for (;;) if ((await gen.next()).done) return; })());
    expect(e).toBeInstanceOf(LlmAbortError);
    await model.waitFor(() => model.chatRequests()[0].clientClosed);
  });
});

describe('ToolCallAccumulator', () => {
  it('does not double a name that a server repeats in every fragment', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 0, id: 'c1', function: { name: 'read_file', arguments: '{"a"' } });
    acc.add({ index: 0, function: { name: 'read_file', arguments: ':1}' } });
    expect(acc.finish()).toEqual([{ id: 'c1', name: 'read_file', arguments: '{"a":1}' }]);
  });

  it('splits calls that reuse index 0 with different ids', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 0, id: 'c1', function: { name: 'read_file', arguments: '{}' } });
    acc.add({ index: 0, id: 'c2', function: { name: 'list_files', arguments: '{}' } });
    expect(acc.finish().map((c) => c.id)).toEqual(['c1', 'c2']);
  });

  it('replaces duplicate ids so every result can be matched to its call', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 0, id: 'same', function: { name: 'a', arguments: '{}' } });
    acc.add({ index: 1, id: 'same', function: { name: 'b', arguments: '{}' } });
    const ids = acc.finish().map((c) => c.id);
    expect(ids[0]).toBe('same');
    expect(ids[1]).toMatch(/^call_/);
  });

  it('without index or id, a different name starts a new call even after empty arguments', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ function: { name: 'list_files', arguments: '' } } as never);
    acc.add({ function: { name: 'read_file', arguments: '{"a":' } } as never);
    acc.add({ function: { arguments: '1}' } } as never);
    expect(acc.finish().map((c) => [c.name, c.arguments])).toEqual([
      ['list_files', '{}'],
      ['read_file', '{"a":1}'],
    ]);
  });

  it('drops empty shells without a name or arguments', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 0 });
    expect(acc.finish()).toEqual([]);
  });

  it('stops keeping arguments past the cap: the call comes back oversized, with "{}" and what was received', () => {
    const acc = new ToolCallAccumulator(1_000);
    acc.add({ index: 0, id: 'c1', function: { name: 'save_output', arguments: '{"content":"' } });
    for (let i = 0; i < 30; i++) acc.add({ index: 0, function: { arguments: 'a'.repeat(50) } });
    expect(acc.overflowed).toBe(true);
    acc.add({ index: 1, id: 'c2', function: { name: 'read_file', arguments: '{"file_path":"x"}' } });
    expect(acc.finish()).toEqual([
      { id: 'c1', name: 'save_output', arguments: '{}', oversized: 12 + 30 * 50 },
      { id: 'c2', name: 'read_file', arguments: '{"file_path":"x"}' },
    ]);
  });

  it('takes a call repeated whole-name-per-fragment without index or id in linear time', () => {
    // Each fragment repeats the name; one without a closing brace cannot be a whole call, so it
    // is never parsed (parsing the growing arguments at every fragment was quadratic).
    const acc = new ToolCallAccumulator();
    const started = performance.now();
    acc.add({ function: { name: 'save_output', arguments: '{"content":"' } } as never);
    for (let i = 0; i < 20_000; i++) acc.add({ function: { name: 'save_output', arguments: 'abcdefghij' } } as never);
    acc.add({ function: { name: 'save_output', arguments: '"}' } } as never);
    const [call] = acc.finish();
    expect(call.arguments.length).toBe(12 + 200_000 + 2);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

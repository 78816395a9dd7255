import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { reply, startScriptedModel, type ScriptedModel } from '../../../test/scripted-model';
import { AppError } from '../../core/errors';
import { createLlmClient } from '../llm';
import type { ToolCall, ToolDefinition } from '../llm/types';
import type { ToolResult } from '../../core/results';
import { TurnBudget } from './budget';
import { runTurn, type RunTurnInput } from './run-turn';
import type { LoopTools, TurnEvent } from './types';

const NAMES = ['list_files', 'read_file', 'save_output'];
const DEFINITIONS: ToolDefinition[] = NAMES.map((name) => ({
  type: 'function',
  function: { name, description: name, parameters: { type: 'object', properties: {} } },
}));

type Handler = (call: ToolCall, signal: AbortSignal) => Promise<ToolResult> | ToolResult;

/** Stands in for the tool registry: unknown names and bad JSON come back as tool errors, like the real one. */
function fakeTools(handler: Handler = () => ({ ok: true })): LoopTools & { calls: ToolCall[] } {
  const calls: ToolCall[] = [];
  return {
    calls,
    definitions: DEFINITIONS,
    async execute(call, signal) {
      calls.push(call);
      const run = async (): Promise<ToolResult> => {
        if (!NAMES.includes(call.name)) return { ok: false, error: { code: 'E_UNKNOWN_TOOL', message: `No tool named ${call.name}` } };
        try {
          JSON.parse(call.arguments);
        } catch {
          return { ok: false, error: { code: 'E_INVALID_ARGS', message: 'arguments are not valid JSON' } };
        }
        return handler(call, signal);
      };
      return { result: await run(), durationMs: 0 };
    },
  };
}

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

const USER: ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are a test agent.' },
  { role: 'user', content: 'Please help.' },
];

function input(over: Partial<RunTurnInput> = {}): RunTurnInput {
  return {
    client,
    model: 'm',
    messages: USER,
    tools: fakeTools(),
    maxIterations: 10,
    signal: new AbortController().signal,
    timeoutMs: 10_000,
    ...over,
  };
}

async function collect(gen: AsyncGenerator<TurnEvent>, onEvent?: (e: TurnEvent) => void): Promise<TurnEvent[]> {
  const events: TurnEvent[] = [];
  for await (const e of gen) {
    events.push(e);
    onEvent?.(e);
  }
  return events;
}

const types = (events: TurnEvent[]) => events.map((e) => e.type);
const last = (events: TurnEvent[]) => events[events.length - 1];
function only<T extends TurnEvent['type']>(events: TurnEvent[], type: T): Extract<TurnEvent, { type: T }>[] {
  return events.filter((e): e is Extract<TurnEvent, { type: T }> => e.type === type);
}

describe('runTurn', () => {
  it('streams a plain answer and finishes with stop', async () => {
    model.setScript([reply.text('Hello from the model.', { chunkSize: 4, tokenDelayMs: 10, usage: { prompt_tokens: 20, completion_tokens: 5 } })]);
    const events = await collect(runTurn(input()));
    // One delta per network read: how many chunks share a read depends on timing, not on the loop.
    const deltas = only(events, 'text-delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((d) => d.delta).join('')).toBe('Hello from the model.');
    expect(types(events)).toEqual(['step-start', ...Array(deltas.length).fill('text-delta'), 'assistant-message', 'step-finish', 'finish']);
    expect(only(events, 'assistant-message')[0]).toEqual({
      type: 'assistant-message',
      content: 'Hello from the model.',
      toolCalls: [],
      usage: { promptTokens: 20, completionTokens: 5, cachedTokens: 0 },
    });
    expect(last(events)).toEqual({ type: 'finish', stopReason: 'stop', usage: { promptTokens: 20, completionTokens: 5, cachedTokens: 0 }, iterations: 1 });
    expect(model.chatRequests()[0].body!.messages).toEqual(USER);
  });

  it('runs a tool, sends its result back, and sums usage over both calls', async () => {
    model.setScript([
      reply.toolCalls([{ id: 'call_1', name: 'list_files', arguments: { path: '{bundle-root}' } }], {
        text: 'Looking.',
        usage: { prompt_tokens: 10, completion_tokens: 3 },
      }),
      reply.text('There are two files.', { usage: { prompt_tokens: 30, completion_tokens: 6 } }),
    ]);
    const tools = fakeTools(() => ({ ok: true, entries: ['a.md', 'b.md'] }));
    const events = await collect(runTurn(input({ tools })));

    expect(types(events).filter((t) => t !== 'text-delta')).toEqual([
      'step-start', 'assistant-message', 'tool-call', 'tool-result', 'step-finish',
      'step-start', 'assistant-message', 'step-finish', 'finish',
    ]);
    expect(only(events, 'tool-call')[0]).toEqual({
      type: 'tool-call',
      call: { id: 'call_1', name: 'list_files', arguments: '{"path":"{bundle-root}"}' },
      input: { path: '{bundle-root}' },
    });
    expect(only(events, 'tool-result')[0]).toMatchObject({ call: { id: 'call_1' }, result: { ok: true, entries: ['a.md', 'b.md'] } });
    expect(last(events)).toEqual({ type: 'finish', stopReason: 'stop', usage: { promptTokens: 40, completionTokens: 9, cachedTokens: 0 }, iterations: 2 });

    const second = model.chatRequests()[1].body!.messages!;
    expect(second.slice(0, 2)).toEqual(USER);
    expect(second[2]).toEqual({
      role: 'assistant',
      content: 'Looking.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'list_files', arguments: '{"path":"{bundle-root}"}' } }],
    });
    expect(second[3]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: JSON.stringify({ ok: true, entries: ['a.md', 'b.md'] }) });
    // The caller's array is not the loop's working copy.
    expect(USER).toHaveLength(2);
  });

  it('executes parallel tool calls concurrently and answers them in the model order', async () => {
    model.setScript([
      reply.toolCalls([
        { id: 'slow', name: 'read_file', arguments: { file_path: 'slow.md' } },
        { id: 'fast', name: 'read_file', arguments: { file_path: 'fast.md' } },
        { id: 'mid', name: 'list_files', arguments: { path: '.' } },
      ]),
      reply.text('done'),
    ]);
    let running = 0;
    let maxRunning = 0;
    const finished: string[] = [];
    const delays: Record<string, number> = { slow: 150, fast: 10, mid: 60 };
    const tools = fakeTools(async (call) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, delays[call.id]));
      running--;
      finished.push(call.id);
      return { ok: true, id: call.id };
    });
    const events = await collect(runTurn(input({ tools })));
    expect(maxRunning).toBe(3);
    expect(finished).toEqual(['fast', 'mid', 'slow']);
    // All calls are announced before any result, results come in the model's order.
    const flow = events.filter((e) => e.type === 'tool-call' || e.type === 'tool-result').map((e) => `${e.type}:${(e as { call: ToolCall }).call.id}`);
    expect(flow).toEqual(['tool-call:slow', 'tool-call:fast', 'tool-call:mid', 'tool-result:slow', 'tool-result:fast', 'tool-result:mid']);
    const toolMessages = model.chatRequests()[1].body!.messages!.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.tool_call_id)).toEqual(['slow', 'fast', 'mid']);
  });

  it('sends tool errors back to the model: bad JSON arguments, unknown tools, a tool that throws', async () => {
    model.setScript([
      reply.toolCalls([
        { id: 'bad', name: 'read_file', arguments: '{"file_path": ' },
        { id: 'unknown', name: 'no_such_tool', arguments: {} },
        { id: 'boom', name: 'save_output', arguments: {} },
      ]),
      reply.text('Sorry about that.'),
    ]);
    const tools = fakeTools(() => {
      throw new Error('disk on fire');
    });
    const events = await collect(runTurn(input({ tools })));
    expect(only(events, 'tool-call')[0].input).toBe('{"file_path": ');
    expect(only(events, 'tool-result').map((e) => (e.result.ok ? 'ok' : e.result.error.code))).toEqual([
      'E_INVALID_ARGS',
      'E_UNKNOWN_TOOL',
      'E_INTERNAL',
    ]);
    expect(last(events)).toMatchObject({ type: 'finish', stopReason: 'stop' });
    const sent = model.chatRequests()[1].body!.messages!;
    // The malformed arguments are echoed exactly as the model sent them.
    expect(sent[2].tool_calls![0].function!.arguments).toBe('{"file_path": ');
    const results = sent.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content as string));
    expect(results[0].error.code).toBe('E_INVALID_ARGS');
    expect(results[2].error.message).toContain('disk on fire');
  });

  it('survives server quirks end to end: no ids, no index, finish_reason stop, "" arguments, no usage', async () => {
    model.setScript([
      reply.toolCalls(
        [
          { name: 'list_files', arguments: '' },
          { name: 'read_file', arguments: { file_path: 'a.md' } },
        ],
        { quirks: { omitIds: true, omitIndex: true }, finishReason: 'stop', usage: false },
      ),
      reply.text('ok', { usage: false }),
    ]);
    const tools = fakeTools();
    const events = await collect(runTurn(input({ tools })));
    expect(tools.calls.map((c) => [c.name, c.arguments])).toEqual([
      ['list_files', '{}'],
      ['read_file', '{"file_path":"a.md"}'],
    ]);
    expect(last(events)).toEqual({ type: 'finish', stopReason: 'stop', usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 }, iterations: 2 });
    const sent = model.chatRequests()[1].body!.messages!;
    const ids = sent[2].tool_calls!.map((c) => c.id);
    expect(ids.every((id) => /^call_/.test(id ?? ''))).toBe(true);
    expect(sent.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(ids);
  });

  it('stops with max_iterations after exactly that many model calls, answering the last tool calls', async () => {
    const tools = fakeTools();
    const events = await collect(runTurn(input({ model: 'scripted:loop-forever', tools, maxIterations: 3 })));
    expect(model.chatRequests()).toHaveLength(3);
    expect(only(events, 'step-start').map((e) => e.iteration)).toEqual([1, 2, 3]);
    expect(only(events, 'tool-result')).toHaveLength(3);
    expect(tools.calls).toHaveLength(3);
    expect(types(events).slice(-3)).toEqual(['tool-result', 'step-finish', 'finish']);
    expect(last(events)).toMatchObject({ type: 'finish', stopReason: 'max_iterations', iterations: 3 });
  });

  it('a nested loop on a child budget counts in the turn: its calls against the limit, its tokens in the usage', async () => {
    const budget = new TurnBudget(4);
    let nested: TurnEvent[] = [];
    // The parent's tool runs a whole loop of its own, as a subagent does.
    const tools = fakeTools(async (_call, signal) => {
      nested = await collect(runTurn(input({ model: 'scripted:loop-forever', budget: budget.child(10), signal })));
      return { ok: true };
    });
    const events = await collect(runTurn(input({ model: 'scripted:loop-forever', tools, budget })));
    // 1 parent call, then the nested loop takes the 3 calls left; the parent may make no more.
    expect(model.chatRequests()).toHaveLength(4);
    expect(last(nested)).toMatchObject({ type: 'finish', stopReason: 'max_iterations', iterations: 3 });
    expect(last(events)).toMatchObject({ type: 'finish', stopReason: 'max_iterations', iterations: 4 });
    const usage = (last(events) as { usage: { promptTokens: number } }).usage;
    const nestedUsage = (last(nested) as { usage: { promptTokens: number } }).usage;
    expect(usage.promptTokens).toBeGreaterThan(nestedUsage.promptTokens);
    expect(budget.usage).toEqual(usage);
    // A loop started on a spent budget makes no model call.
    const spent = await collect(runTurn(input({ budget: budget.child(5) })));
    expect(types(spent)).toEqual(['finish']);
    expect(model.chatRequests()).toHaveLength(4);
  });

  it('resumes from a history that ends with tool results', async () => {
    const messages: ChatCompletionMessageParam[] = [
      ...USER,
      { role: 'assistant', content: null, tool_calls: [{ id: 'c0', type: 'function', function: { name: 'list_files', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c0', content: JSON.stringify({ ok: true }) },
    ];
    const events = await collect(runTurn(input({ model: 'scripted:tool-then-answer', messages })));
    expect(only(events, 'assistant-message')[0].content).toBe('Tool results: list_files ok. Done.');
    expect(last(events)).toMatchObject({ stopReason: 'stop', iterations: 1 });
  });

  it('abort mid-stream: finish aborted well within 1 s, upstream connection closed, streamed text kept', async () => {
    const ctl = new AbortController();
    let abortedAt = 0;
    const events = await collect(runTurn(input({ model: 'scripted:slow', signal: ctl.signal })), (e) => {
      if (e.type === 'text-delta' && !abortedAt) {
        abortedAt = performance.now();
        ctl.abort();
      }
    });
    const elapsed = performance.now() - abortedAt;
    expect(elapsed).toBeLessThan(3_000);
    expect(types(events).slice(-2)).toEqual(['assistant-message', 'finish']);
    expect(only(events, 'assistant-message')[0]).toMatchObject({ toolCalls: [], usage: { promptTokens: 0, completionTokens: 0 } });
    expect(only(events, 'assistant-message')[0].content.length).toBeGreaterThan(0);
    expect(last(events)).toEqual({ type: 'finish', stopReason: 'aborted', usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 }, iterations: 1 });
    await model.waitFor(() => model.chatRequests()[0]?.clientClosed === true, 1000);
  });

  it('abort while waiting for the first byte (hang) cancels the request', async () => {
    model.setScript([reply.hang()]);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    const t0 = performance.now();
    const events = await collect(runTurn(input({ signal: ctl.signal })));
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(types(events)).toEqual(['step-start', 'finish']);
    expect(last(events)).toMatchObject({ stopReason: 'aborted' });
    await model.waitFor(() => model.chatRequests()[0]?.clientClosed === true, 1000);
  });

  it('abort during tool execution: signals the tools, answers unfinished calls with E_ABORTED, even if a tool ignores the signal', async () => {
    model.setScript([
      reply.toolCalls([
        { id: 'quick', name: 'list_files', arguments: {} },
        { id: 'stuck', name: 'read_file', arguments: {} },
      ]),
    ]);
    const ctl = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const tools = fakeTools((call, signal) => {
      toolSignal = signal;
      if (call.id === 'quick') return { ok: true };
      setTimeout(() => ctl.abort(), 50);
      return new Promise<ToolResult>(() => undefined); // never settles, ignores the signal
    });
    const t0 = performance.now();
    const events = await collect(runTurn(input({ tools, signal: ctl.signal })));
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(toolSignal?.aborted).toBe(true);
    const results = only(events, 'tool-result');
    expect(results.map((r) => [r.call.id, r.result.ok ? 'ok' : r.result.error.code])).toEqual([
      ['quick', 'ok'],
      ['stuck', 'E_ABORTED'],
    ]);
    expect(last(events)).toMatchObject({ type: 'finish', stopReason: 'aborted', iterations: 1 });
  });

  it('an already-aborted signal makes no model call', async () => {
    const ctl = new AbortController();
    ctl.abort();
    const events = await collect(runTurn(input({ signal: ctl.signal })));
    expect(events).toEqual([{ type: 'finish', stopReason: 'aborted', usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 }, iterations: 0 }]);
    expect(model.chatRequests()).toHaveLength(0);
  });

  it('a model that hangs hits the turn deadline: error E_LLM_TIMEOUT, request closed', async () => {
    model.setScript([reply.hang()]);
    const events = await collect(runTurn(input({ timeoutMs: 200 })));
    const err = last(events);
    expect(err.type).toBe('error');
    if (err.type !== 'error') throw new Error('unreachable');
    expect(err.error.code).toBe('E_LLM_TIMEOUT');
    expect(err.error.status).toBe(504);
    expect(err.error.message).toMatch(/longer than 0\.2 s/);
    await model.waitFor(() => model.chatRequests()[0]?.clientClosed === true, 1000);
  });

  it('a stream that stalls mid-answer also hits the deadline', async () => {
    model.setScript([reply.text('a b c d e f g h', { chunkSize: 0, tokenDelayMs: 5000 })]);
    const events = await collect(runTurn(input({ timeoutMs: 300 })));
    expect(types(events).slice(-2)).toEqual(['assistant-message', 'error']);
    expect(last(events)).toMatchObject({ type: 'error', error: { code: 'E_LLM_TIMEOUT' } });
  });

  it('an upstream failure becomes an error event with the mapped message', async () => {
    model.setScript([reply.error(404)]);
    const events = await collect(runTurn(input({ model: 'gpt-missing' })));
    expect(types(events)).toEqual(['step-start', 'error']);
    expect(last(events)).toMatchObject({ type: 'error', error: { code: 'E_LLM_UPSTREAM' } });
    if (last(events).type === 'error') expect((last(events) as { error: Error }).error.message).toContain('"gpt-missing"');
  });

  it('a consumer that stops iterating cancels the upstream request', async () => {
    const gen = runTurn(input({ model: 'scripted:slow' }));
    for await (const e of gen) if (e.type === 'text-delta') break;
    await model.waitFor(() => model.chatRequests()[0]?.clientClosed === true, 1000);
  });
});

describe('runTurn prepare step', () => {
  const report = { profile: 'p', limit: 100, tokensBefore: 150, tokensAfter: 60, toolResults: 1, toolArguments: 0, droppedMessages: 0 };

  it('runs before every model call, and the turn goes on from a compacted copy', async () => {
    model.setScript([reply.toolCalls([{ name: 'list_files', arguments: {} }]), reply.text('done')]);
    const seen: number[] = [];
    const compacted: ChatCompletionMessageParam[] = [{ role: 'system', content: 'Compacted.' }, USER[1]];
    let calls = 0;
    const events = await collect(
      runTurn(
        input({
          prepare: async (messages) => {
            seen.push(messages.length);
            return calls++ === 1 ? { messages: [...compacted, ...messages.slice(2)], compaction: report } : { messages };
          },
        }),
      ),
    );
    expect(seen).toEqual([2, 4]);
    expect(types(events)).toEqual(expect.arrayContaining(['compaction']));
    const second = types(events).lastIndexOf('step-start');
    expect(types(events)[second + 1]).toBe('compaction');
    expect(only(events, 'compaction')[0].report).toEqual(report);
    const [, req2] = model.chatRequests();
    expect(req2.body!.messages![0]).toEqual({ role: 'system', content: 'Compacted.' });
    expect(req2.body!.messages).toHaveLength(4);
    expect(last(events)).toMatchObject({ type: 'finish', stopReason: 'stop' });
  });

  it('ends the turn with its error before the model is called', async () => {
    const error = new AppError('E_CONTEXT_TOO_LARGE', 'too large');
    const events = await collect(runTurn(input({ prepare: async () => ({ error }) })));
    expect(types(events)).toEqual(['step-start', 'error']);
    expect(last(events)).toEqual({ type: 'error', error });
    expect(model.chatRequests()).toHaveLength(0);
  });
});

import { spawn } from 'node:child_process';
import path from 'node:path';
import OpenAI from 'openai';
import { NOTE_PATH, reply, scenarioNames, startScriptedModel, type ScriptedModel } from '.';

let model: ScriptedModel;
let client: OpenAI;
beforeAll(async () => {
  model = await startScriptedModel();
  client = new OpenAI({ baseURL: model.url, apiKey: 'k', maxRetries: 0 });
});
afterAll(() => model.close());
beforeEach(() => {
  model.reset();
  model.setScript(undefined);
});

const TOOLS = ['list_files', 'read_file', 'save_output'].map((name) => ({
  type: 'function' as const,
  function: { name, description: name, parameters: { type: 'object', properties: {} } },
}));

async function streamText(modelName: string, messages: OpenAI.ChatCompletionMessageParam[], tools = TOOLS) {
  const stream = await client.chat.completions.create({ model: modelName, messages, tools, stream: true, stream_options: { include_usage: true } });
  let text = '';
  const calls: Array<{ id?: string; name?: string; args: string }> = [];
  let usage: OpenAI.CompletionUsage | undefined;
  let finish: string | null = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.delta.content ?? '';
    for (const t of c.delta.tool_calls ?? []) {
      calls[t.index] ??= { args: '' };
      if (t.id) calls[t.index].id = t.id;
      if (t.function?.name) calls[t.index].name = t.function.name;
      calls[t.index].args += t.function?.arguments ?? '';
    }
    finish = c.finish_reason ?? finish;
  }
  return { text, calls, usage, finish };
}

describe('scripted model server', () => {
  it('serves GET /v1/models with every scenario', async () => {
    const list = await client.models.list();
    const ids = list.data.map((m) => m.id);
    expect(ids).toContain('scripted');
    for (const n of scenarioNames()) expect(ids).toContain(`scripted:${n}`);
  });

  it('answers plain turns deterministically, streamed and not, with usage', async () => {
    const s = await streamText('anything', [{ role: 'user', content: 'Hi there' }]);
    expect(s.text).toBe('Hello from the scripted model. You said: "Hi there"');
    expect(s.finish).toBe('stop');
    expect(s.usage!.total_tokens).toBe(s.usage!.prompt_tokens + s.usage!.completion_tokens);

    const r = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi there' }] });
    expect(r.choices[0].message.content).toBe('Hello from the scripted model. You said: "Hi there"');
    expect(r.usage).toBeDefined();
  });

  it('returns non-stream tool calls too', async () => {
    model.setScript([reply.toolCalls([{ id: 'c1', name: 'read_file', arguments: { file_path: 'a' } }])]);
    const r = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'go' }], tools: TOOLS });
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(r.choices[0].message.tool_calls).toEqual([{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"file_path":"a"}' } }]);
  });

  it('write-file: calls save_output, then answers from the tool result', async () => {
    const first = await streamText('scripted:write-file', [{ role: 'user', content: 'write it' }]);
    expect(first.finish).toBe('tool_calls');
    expect(first.calls).toHaveLength(1);
    expect(first.calls[0].name).toBe('save_output');
    expect(JSON.parse(first.calls[0].args).file_path).toBe(NOTE_PATH);
    const second = await streamText('scripted:write-file', [
      { role: 'user', content: 'write it' },
      { role: 'assistant', content: null, tool_calls: [{ id: first.calls[0].id!, type: 'function', function: { name: 'save_output', arguments: first.calls[0].args } }] },
      { role: 'tool', tool_call_id: first.calls[0].id!, content: JSON.stringify({ ok: false, error: { code: 'E_WRITE_LIMIT', message: 'x' } }) },
    ]);
    expect(second.text).toBe('Tool results: save_output failed (E_WRITE_LIMIT). Done.');
  });

  it('parallel-tools and tool-then-answer call the tools they need, or say they are missing', async () => {
    const p = await streamText('scripted:parallel-tools', [{ role: 'user', content: 'go' }]);
    expect(p.calls.map((c) => c.name)).toEqual(['list_files', 'read_file']);
    const missing = await streamText('scripted:tool-then-answer', [{ role: 'user', content: 'go' }], TOOLS.slice(1));
    expect(missing.text).toBe('The list_files tool is not available.');
  });

  it('picks the scenario from the x-scripted-scenario header and the server option', async () => {
    const r = await client.chat.completions.create(
      { model: 'x', messages: [{ role: 'user', content: 'same words' }] },
      { headers: { 'x-scripted-scenario': 'echo' } },
    );
    expect(r.choices[0].message.content).toBe('same words');
    const other = await startScriptedModel({ scenario: 'echo' });
    try {
      const c = new OpenAI({ baseURL: other.url, apiKey: 'k' });
      const r2 = await c.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'again' }] });
      expect(r2.choices[0].message.content).toBe('again');
    } finally {
      await other.close();
    }
  });

  it('a queue script answers in order and fails loudly once exhausted', async () => {
    model.setScript([reply.text('one'), reply.text('two')]);
    const ask = () => client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: '?' }] });
    expect((await ask()).choices[0].message.content).toBe('one');
    expect((await ask()).choices[0].message.content).toBe('two');
    await expect(ask()).rejects.toMatchObject({ status: 500 });
  });

  it('a function script sees the request and the call index', async () => {
    model.setScript(({ body }, ctx) => reply.text(`${ctx.callIndex}:${body.messages!.length}`));
    const r = await client.chat.completions.create({ model: 'x', messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }] });
    expect(r.choices[0].message.content).toBe('0:2');
  });

  it('sends OpenAI-style error bodies', async () => {
    model.setScript([reply.error(429, { headers: { 'retry-after': '1' } })]);
    await expect(client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: '?' }] })).rejects.toMatchObject({
      status: 429,
      code: 'rate_limit_exceeded',
      error: { type: 'requests' },
    });
  });

  it('records requests with headers, bodies and timing; service time excludes scripted delays', async () => {
    model.setScript([reply.text('abcdefgh', { chunkSize: 1, latencyMs: 60, tokenDelayMs: 10 })]);
    await streamText('x', [{ role: 'user', content: 'timed' }]);
    await model.waitFor(() => model.chatRequests()[0]?.done);
    const rec = model.chatRequests()[0];
    expect(rec.method).toBe('POST');
    expect(rec.headers.authorization).toBe('Bearer k');
    expect(rec.body!.messages).toEqual([{ role: 'user', content: 'timed' }]);
    expect(rec.status).toBe(200);
    expect(rec.clientClosed).toBe(false);
    // 60 ms latency + 7 gaps of 10 ms, measured as slept.
    expect(rec.scriptedDelayMs).toBeGreaterThanOrEqual(125);
    expect(rec.serviceMs!).toBeGreaterThanOrEqual(rec.scriptedDelayMs);
    expect(rec.overheadMs).toBeCloseTo(rec.serviceMs! - rec.scriptedDelayMs, 5);
  });

  it('exposes recorded requests, stats, reset and scenario switching over HTTP for other processes', async () => {
    await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hello' }] });
    const base = model.url.replace(/\/v1$/, '');
    const stats = await (await fetch(`${base}/__scripted/stats`)).json();
    expect(stats.count).toBe(1);
    expect(stats.serviceMs.p50).toBeGreaterThan(0);
    const recorded = await (await fetch(`${base}/__scripted/requests?bodies=0`)).json();
    expect(recorded.requests).toHaveLength(1);
    expect(recorded.requests[0].body).toBeNull();
    expect((await fetch(`${base}/__scripted/scenario`, { method: 'POST', body: '{"name":"echo"}' })).status).toBe(200);
    const r = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'mirror' }] });
    expect(r.choices[0].message.content).toBe('mirror');
    expect((await fetch(`${base}/__scripted/scenario`, { method: 'POST', body: '{"name":"nope"}' })).status).toBe(400);
    await fetch(`${base}/__scripted/scenario`, { method: 'POST', body: '{"name":"plain"}' });
    await fetch(`${base}/__scripted/reset`, { method: 'POST' });
    expect(model.requests).toHaveLength(0);
  });

  it('caps the recorded requests', async () => {
    const small = await startScriptedModel({ maxRecorded: 2 });
    try {
      const c = new OpenAI({ baseURL: small.url, apiKey: 'k' });
      for (const content of ['a', 'b', 'c']) await c.chat.completions.create({ model: 'x', messages: [{ role: 'user', content }] });
      expect(small.requests.map((r) => r.body!.messages![0].content)).toEqual(['b', 'c']);
    } finally {
      await small.close();
    }
  });

  it('time to first token follows the latency option', async () => {
    const slow = await startScriptedModel({ latencyMs: 150 });
    try {
      const c = new OpenAI({ baseURL: slow.url, apiKey: 'k' });
      const t0 = performance.now();
      const stream = await c.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'a' }], stream: true });
      let first = 0;
      for await (const chunk of stream) if (!first && chunk.choices[0]?.delta.content) first = performance.now() - t0;
      expect(first).toBeGreaterThanOrEqual(140);
    } finally {
      await slow.close();
    }
  });

  it('records a client that gives up on a hang as closed', async () => {
    model.setScript([reply.hang()]);
    const ctl = new AbortController();
    const pending = client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: '?' }] }, { signal: ctl.signal });
    await model.waitFor(() => model.chatRequests().length === 1);
    ctl.abort();
    await expect(pending).rejects.toThrow();
    await model.waitFor(() => model.chatRequests()[0].clientClosed);
    expect(model.chatRequests()[0].overheadMs).toBe(0);
  });

  it('the CLI starts a server and prints its URL', async () => {
    const cli = path.join(__dirname, 'cli.ts');
    const tsx = path.join(__dirname, '..', '..', 'node_modules', '.bin', 'tsx');
    const child = spawn(tsx, [cli, '--port', '0', '--token-delay-ms', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const line = out.split('\n').find((l) => l.includes('scripted-model.ready'));
          if (line) resolve(JSON.parse(line).url);
        });
        child.on('exit', (code) => reject(new Error(`cli exited with ${code}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const c = new OpenAI({ baseURL: url, apiKey: 'k' });
      const r = await c.chat.completions.create({ model: 'scripted:echo', messages: [{ role: 'user', content: 'from cli' }] });
      expect(r.choices[0].message.content).toBe('from cli');
    } finally {
      child.kill('SIGTERM');
    }
  }, 20_000);
});

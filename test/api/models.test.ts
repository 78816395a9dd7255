import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { POST as chat } from '@/app/api/chat/route';
import { GET as models } from '@/app/api/models/route';
import { GET as getConversation, PATCH as patchConversation } from '@/app/api/conversations/[id]/route';
import { loadConfig } from '@/lib/core/config';
import { countRequest, loadTokenizer, type Tokenizer } from '@/lib/engine/context';
import { MemoryConversationStore } from '@/lib/store/conversations';
import type { ToolDefinition } from '@/lib/model/llm/types';
import { ModelsFileError } from '@/lib/core/models';
import { toModelMessages } from '@/lib/engine/prompt';
import { createRuntime, getRuntime, setRuntime } from '@/lib/engine/runtime';
import { checkConfiguration } from '@/lib/engine/runtime/startup';
import { currentTurn, lastUserText, reply, startScriptedModel, type ChatRequestBody, type RecordedRequest, type ScriptedModel } from '../scripted-model';
import { get, jsonRequest, params, readSse, REPO } from './harness';

// Two OpenAI-compatible servers, one per profile, so every routing decision is seen where it lands.
let fast: ScriptedModel;
let strong: ScriptedModel;
let tmp: string;

const MODELS = (a: string, b: string) => `
default: fast
profiles:
  fast: { baseURL: ${a}, model: fast-model, contextWindow: 32768, maxOutputTokens: 2048 }
  strong:
    baseURL: ${b}
    model: strong-model
    contextWindow: 32768
    maxOutputTokens: 2048
    parallelToolCalls: false
    price: { input: 2, cachedInput: 0.5, output: 8 }
  small: { baseURL: ${a}, model: small-model, contextWindow: 8192, maxOutputTokens: 1024 }
  keyless: { baseURL: ${b}, model: k-model, apiKeyEnv: MODELS_TEST_UNSET_KEY, contextWindow: 8192 }
agents: { story-writer: strong }
commands: { "*stories": strong }
`;

beforeEach(async () => {
  fast = await startScriptedModel({ script: ({ body }) => reply.text(`fast answers: ${lastUserText(body)}`) });
  strong = await startScriptedModel({ script: ({ body }) => reply.text(`strong answers: ${lastUserText(body)}`) });
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-models-'));
  const file = path.join(tmp, 'models.yaml');
  await fs.writeFile(file, MODELS(fast.url, strong.url));
  const config = loadConfig(
    {
      MODELS_FILE: file,
      BUNDLES_ROOT: path.join(REPO, 'bmad/custom/bundles'),
      CORE_ROOT: path.join(REPO, 'bmad/core'),
      OUTPUT_PATH: path.join(tmp, 'output'),
      DATA_DIR: path.join(tmp, 'data'),
      CONVERSATION_STORE: 'memory',
    },
    tmp,
  );
  await setRuntime(createRuntime(config, new MemoryConversationStore()));
});
afterEach(async () => {
  await setRuntime(undefined);
  await Promise.all([fast.close(), strong.close()]);
  await fs.rm(tmp, { recursive: true, force: true });
});

const send = async (body: Record<string, unknown>) => {
  const res = await chat(jsonRequest('/api/chat', body));
  return { status: res.status, body: await res.json() };
};
const conversation = async (id: string) => (await (await getConversation(get(`/api/conversations/${id}`), params({ id }))).json()).data;
const patch = async (id: string, body: unknown) => {
  const res = await patchConversation(new Request(`http://localhost/api/conversations/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), params({ id }));
  return { status: res.status, body: await res.json() };
};
const models_ = (s: ScriptedModel) => s.chatRequests().map((r) => r.body!.model);

describe('GET /api/models', () => {
  it('lists the profiles with their models and windows, never a key or an endpoint', async () => {
    const res = await models(get('/api/models'));
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data.map((p: { name: string }) => p.name)).toEqual(['fast', 'strong', 'small', 'keyless']);
    expect(data[0]).toEqual({ name: 'fast', model: 'fast-model', contextWindow: 32768, maxOutputTokens: 2048, configured: true, default: true });
    expect(data[1]).toMatchObject({ name: 'strong', configured: true, default: false, parallelToolCalls: false, price: { input: 2, cachedInput: 0.5, output: 8 }, agents: ['story-writer'], commands: ['stories'] });
    expect(data[3]).toMatchObject({ name: 'keyless', configured: false, problem: 'MODELS_TEST_UNSET_KEY is not set' });
    const text = JSON.stringify(data);
    expect(text).not.toMatch(/baseURL|127\.0\.0\.1|http:/);
  });
});

describe('routing, checked at the model servers', () => {
  it('by agent: story-writer runs on strong, product-lead on the default', async () => {
    const a = await send({ agentId: 'story-writer', message: 'hello' });
    expect(a.body.data.message).toMatchObject({ content: 'strong answers: hello', profile: 'strong', model: 'strong-model' });
    const b = await send({ agentId: 'product-lead', message: 'hello' });
    expect(b.body.data.message).toMatchObject({ content: 'fast answers: hello', profile: 'fast', model: 'fast-model' });
    expect(models_(strong)).toEqual(['strong-model']);
    expect(models_(fast)).toEqual(['fast-model']);
    // The profile's settings go with its requests.
    expect(strong.chatRequests()[0].body!.parallel_tool_calls).toBe(false);
    expect(fast.chatRequests()[0].body).not.toHaveProperty('parallel_tool_calls');
  });

  it('by command: *stories and the answers of its workflow run on strong, *plan on the default', async () => {
    const start = await send({ agentId: 'product-lead', message: '*stories' });
    expect(start.status).toBe(200);
    expect(start.body.data.message.functionCalls[0]).toMatchObject({ name: 'execute_workflow' });
    expect(models_(strong)).toHaveLength(1);
    const id = start.body.data.conversationId;
    // An answer to the workflow's question is no command, but belongs to the one that started it.
    await send({ agentId: 'product-lead', conversationId: id, message: 'Parents who forget school forms.' });
    expect(models_(strong)).toHaveLength(2);
    expect(models_(fast)).toHaveLength(0);
    await send({ agentId: 'product-lead', conversationId: id, message: '*plan' });
    expect(models_(fast)).toEqual(['fast-model']);
  });

  it('by request, then remembered by the conversation; PATCH changes or forgets it', async () => {
    const first = await send({ agentId: 'product-lead', message: 'hi', model: 'strong' });
    const id = first.body.data.conversationId;
    expect(models_(strong)).toHaveLength(1);
    expect((await conversation(id)).model).toBe('strong');
    await send({ agentId: 'product-lead', conversationId: id, message: 'again' });
    expect(models_(strong)).toHaveLength(2);

    expect((await patch(id, { model: 'fast' })).body.data).toMatchObject({ id, model: 'fast' });
    await send({ agentId: 'product-lead', conversationId: id, message: 'now fast' });
    expect(models_(fast)).toHaveLength(1);

    // A request's model overrides the conversation's, and becomes it.
    await send({ agentId: 'product-lead', conversationId: id, message: 'strong once more', model: 'strong' });
    expect(models_(strong)).toHaveLength(3);
    expect((await conversation(id)).model).toBe('strong');

    const cleared = await patch(id, { model: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).not.toHaveProperty('model');
    await send({ agentId: 'product-lead', conversationId: id, message: 'back to the default' });
    expect(models_(fast)).toHaveLength(2);

    // The conversation's choice outranks the agent's route.
    const writer = await send({ agentId: 'story-writer', message: 'hi', model: 'fast' });
    await send({ agentId: 'story-writer', conversationId: writer.body.data.conversationId, message: 'again' });
    expect(models_(fast)).toHaveLength(4);
  });

  it('records the profile and model of each answer, usage with cached tokens, and cost where the profile has prices', async () => {
    strong.setScript([reply.text('priced', { usage: { prompt_tokens: 1000, completion_tokens: 100, cached_tokens: 400 } })]);
    const res = await send({ agentId: 'story-writer', message: 'hi' });
    const cost = (600 * 2 + 400 * 0.5 + 100 * 8) / 1e6;
    expect(res.body.data.usage).toEqual({ promptTokens: 1000, completionTokens: 100, cachedTokens: 400, cost });
    const detail = await conversation(res.body.data.conversationId);
    expect(detail.usage).toEqual({ promptTokens: 1000, completionTokens: 100, cachedTokens: 400, cost });
    expect(detail.messages[1]).toMatchObject({ role: 'assistant', profile: 'strong', model: 'strong-model', usage: { promptTokens: 1000, completionTokens: 100, cachedTokens: 400, cost } });

    fast.setScript([reply.text('free', { usage: { prompt_tokens: 10, completion_tokens: 1 } })]);
    const unpriced = await send({ agentId: 'product-lead', message: 'hi' });
    expect(unpriced.body.data.usage).toEqual({ promptTokens: 10, completionTokens: 1, cachedTokens: 0 });
    expect((await conversation(unpriced.body.data.conversationId)).usage).not.toHaveProperty('cost');
  });

  it("a subagent runs on the turn's profile and its calls cost the conversation what the turn says", async () => {
    const u = (prompt_tokens: number, completion_tokens: number) => ({ usage: { prompt_tokens, completion_tokens } });
    strong.setScript([
      reply.toolCalls([{ id: 'spawn_1', name: 'spawn_subagent', arguments: { instructions: 'Say a name.' } }], u(1000, 10)),
      reply.text('Ada', u(300, 2)),
      reply.text('The subagent said Ada.', u(1200, 8)),
    ]);
    const res = await send({ agentId: 'story-writer', message: 'delegate' });
    expect(res.status).toBe(200);
    expect(models_(strong).slice(-3)).toEqual(['strong-model', 'strong-model', 'strong-model']);
    const cost = (2500 * 2 + 20 * 8) / 1e6;
    expect(res.body.data.usage).toEqual({ promptTokens: 2500, completionTokens: 20, cachedTokens: 0, cost });
    expect((await conversation(res.body.data.conversationId)).usage).toEqual({ promptTokens: 2500, completionTokens: 20, cachedTokens: 0, cost });
  });

  it('names the profile and model in the stream, and gives usage its cached tokens and cost', async () => {
    strong.setScript([reply.text('streamed', { usage: { prompt_tokens: 100, completion_tokens: 10, cached_tokens: 50 } })]);
    const res = await chat(jsonRequest('/api/chat', { agentId: 'story-writer', message: 'hi', stream: true }));
    const chunks = (await readSse(res)).filter((c): c is Record<string, any> => c !== '[DONE]');
    expect(chunks.find((c) => c.type === 'data-conversation')!.data).toMatchObject({ profile: 'strong', model: 'strong-model' });
    expect(chunks.find((c) => c.type === 'data-usage')!.data).toMatchObject({ promptTokens: 100, completionTokens: 10, cachedTokens: 50, cost: (50 * 2 + 50 * 0.5 + 10 * 8) / 1e6 });
  });
});

describe('choosing a profile that cannot be used', () => {
  it('answers 400 E_VALIDATION naming the field for an unknown model, in chat and in PATCH', async () => {
    const res = await send({ agentId: 'product-lead', message: 'hi', model: 'gigantic' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, code: 'E_VALIDATION', field: 'model' });
    expect(res.body.error).toMatch(/gigantic.*fast, strong, small, keyless/);
    expect(fast.chatRequests()).toHaveLength(0);
    const ok = await send({ agentId: 'product-lead', message: 'hi' });
    const bad = await patch(ok.body.data.conversationId, { model: 'gigantic' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'E_VALIDATION', field: 'model' });
  });

  it('answers 503 naming the profile and the variable to set for a profile that is not configured', async () => {
    const res = await send({ agentId: 'product-lead', message: 'hi', model: 'keyless' });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('E_LLM_NOT_CONFIGURED');
    expect(res.body.error).toMatch(/profile "keyless".*MODELS_TEST_UNSET_KEY is not set/);
  });
});

describe('models that cannot call tools', () => {
  it('a provider refusing tools gets E_MODEL_NO_TOOLS naming the profile, not a generic upstream error', async () => {
    fast.setScript(() => reply.error(400, { message: 'registry.ollama.ai/library/gemma:2b does not support tools' }));
    const res = await send({ agentId: 'product-lead', message: 'hi' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('E_MODEL_NO_TOOLS');
    expect(res.body.error).toMatch(/Profile "fast" \(model "fast-model"\) does not handle tool calls/);
    expect(res.body.error).toContain('does not support tools');
  });

  it("OpenAI's own refusal (param tools) is recognised too", async () => {
    strong.setScript(() => reply.error(400, { message: 'tools is not supported in this model.', errorType: 'invalid_request_error' }));
    const res = await send({ agentId: 'story-writer', message: 'hi' });
    expect(res.body).toMatchObject({ code: 'E_MODEL_NO_TOOLS' });
    expect(res.body.error).toMatch(/Profile "strong"/);
  });

  it('tool calls whose arguments never parse end the turn with the clear error after three tries', async () => {
    fast.setScript(() => reply.toolCalls([{ name: 'read_file', arguments: '{"file_path": ' }]));
    const res = await send({ agentId: 'product-lead', message: 'read something' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('E_MODEL_NO_TOOLS');
    expect(res.body.error).toMatch(/Profile "fast".*last 3 answers held tool calls whose arguments were not JSON/);
    expect(fast.chatRequests()).toHaveLength(3);
  });

  it('one bad call is still a slip the model corrects from the tool error', async () => {
    fast.setScript([reply.toolCalls([{ name: 'read_file', arguments: '{"file_path": ' }]), reply.text('Sorry, done.')]);
    const res = await send({ agentId: 'product-lead', message: 'read something' });
    expect(res.status).toBe(200);
    expect(res.body.data.message.content).toBe('Sorry, done.');
  });

  it('a tool call written as text is the clear error, not an answer', async () => {
    fast.setScript([reply.text('<tool_call>\n{"name": "read_file", "arguments": {"file_path": "{bundle-root}/bundle.yaml"}}\n</tool_call>')]);
    const res = await send({ agentId: 'product-lead', message: 'read the bundle' });
    expect(res.body.code).toBe('E_MODEL_NO_TOOLS');
    expect(res.body.error).toMatch(/wrote a tool call as text/);
  });
});

describe('context budget', () => {
  let t: Tokenizer;
  beforeAll(async () => {
    t = await loadTokenizer('cl100k_base');
  });
  const count = (r: RecordedRequest) =>
    countRequest(t, { messages: r.body!.messages as unknown as ChatCompletionMessageParam[], tools: r.body!.tools as unknown as ToolDefinition[] }).total;

  const DOC = (n: number) => `# Notes ${n}\n\n${`Point ${n}: parents keep losing school forms, and the school keeps sending more of them. `.repeat(60)}`;
  const ANSWER = `Thanks, noted. ${'Here is what I take from it, point by point, before the next question. '.repeat(18)}Next question?`;

  /** Per turn: write a document, read it back, answer at length — about 3 k tokens a turn. */
  function writer({ body }: { body: ChatRequestBody }) {
    const n = /^Turn (\d+)/.exec(lastUserText(body))?.[1] ?? '0';
    const results = currentTurn(body).filter((m) => m.role === 'tool').length;
    if (results === 0) return reply.toolCalls([{ name: 'save_output', arguments: { file_path: `notes-${n}.md`, content: DOC(Number(n)) } }]);
    if (results === 1) return reply.toolCalls([{ name: 'read_file', arguments: { file_path: `{output_folder}/notes-${n}.md` } }]);
    return reply.text(ANSWER);
  }

  it('keeps answering far past an 8 k window, with every request under it as counted at the model server', async () => {
    fast.setScript(writer);
    let id: string | undefined;
    let compactions = 0;
    const turns = 14;
    for (let i = 1; i <= turns; i++) {
      const res = await send({ agentId: 'product-lead', message: `Turn ${i}: ${'the parents and the forms. '.repeat(20)}`, model: 'small', ...(id ? { conversationId: id } : {}) });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ stopReason: 'stop', message: { content: ANSWER, profile: 'small' } });
      id = res.body.data.conversationId;
      compactions += res.body.data.compactions?.length ?? 0;
    }
    const requests = fast.chatRequests();
    expect(requests).toHaveLength(turns * 3);
    const counts = requests.map(count);
    // The whole conversation is several windows long; no request is over what the profile allows.
    const history = (await getRuntime().store.messages(id!)).map(({ compacted: _, ...m }) => m as typeof m & { compacted?: undefined });
    const whole = toModelMessages(String(requests[0].body!.messages![0].content), history);
    const all = countRequest(t, { messages: whole, tools: requests[0].body!.tools as unknown as ToolDefinition[] }).total;
    expect(all).toBeGreaterThan(3 * 8192);
    expect(Math.max(...counts)).toBeLessThanOrEqual(8192 - 1024);
    // Each compaction frees room for the requests after it: far fewer compactions than requests.
    expect(compactions).toBeGreaterThan(0);
    expect(compactions).toBeLessThan(requests.length / 2);

    // Between compactions, each request repeats the previous one whole and adds to it.
    let extensions = 0;
    for (let k = 1; k < requests.length; k++) {
      const prev = requests[k - 1].body!.messages!;
      const next = requests[k].body!.messages!;
      if (JSON.stringify(next.slice(0, prev.length)) === JSON.stringify(prev)) extensions++;
    }
    expect(extensions).toBeGreaterThanOrEqual(requests.length - 1 - compactions);

    // The compaction is kept: the next turn starts from the compacted form, and the people
    // reading the conversation still see every result.
    const detail = await conversation(id!);
    expect(detail.messages.some((m: { compacted?: boolean }) => m.compacted)).toBe(true);
    const reads = detail.messages.flatMap((m: { functionCalls?: { name: string; result: { content?: string } }[] }) => m.functionCalls ?? []).filter((c: { name: string }) => c.name === 'read_file');
    expect(reads).toHaveLength(turns);
    expect(reads.every((c: { result: { content?: string } }) => (c.result.content ?? '').startsWith('# Notes'))).toBe(true);
  });

  it("compacts a subagent's requests on the turn's profile too", async () => {
    const save = (n: number) => reply.toolCalls([{ name: 'save_output', arguments: { file_path: `sub-${n}.md`, content: DOC(n) } }]);
    const read = (n: number) => reply.toolCalls([{ name: 'read_file', arguments: { file_path: `{output_folder}/sub-${n}.md` } }]);
    fast.setScript([
      reply.toolCalls([{ name: 'spawn_subagent', arguments: { instructions: 'Write the notes and read each back.' } }]),
      save(1), read(1), save(2), read(2), save(3), read(3),
      reply.text('Three notes written and read.'),
      reply.text('The subagent wrote three notes.'),
    ]);
    const res = await send({ agentId: 'product-lead', message: 'Delegate the notes.', model: 'small' });
    expect(res.status).toBe(200);
    expect(res.body.data.message.functionCalls[0].result).toMatchObject({ ok: true, result: 'Three notes written and read.', steps: 7 });
    const counts = fast.chatRequests().map(count);
    expect(counts).toHaveLength(9);
    expect(Math.max(...counts)).toBeLessThanOrEqual(8192 - 1024);
    // Without compaction the subagent's last request would not fit.
    const last = fast.chatRequests()[7].body!.messages!;
    expect(last.some((m) => m.role === 'tool' && String(m.content).includes('"compacted":true'))).toBe(true);
  });

  it('announces a compaction in the stream as data-compaction', async () => {
    fast.setScript(writer);
    let id: string | undefined;
    const seen: Record<string, any>[] = [];
    for (let i = 1; i <= 6; i++) {
      const res = await chat(jsonRequest('/api/chat', { agentId: 'product-lead', message: `Turn ${i}: hello`, model: 'small', stream: true, ...(id ? { conversationId: id } : {}) }));
      const chunks = (await readSse(res)).filter((c): c is Record<string, any> => c !== '[DONE]');
      id = chunks.find((c) => c.type === 'data-conversation')!.data.conversationId;
      expect(chunks.some((c) => c.type === 'error')).toBe(false);
      seen.push(...chunks.filter((c) => c.type === 'data-compaction'));
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0].data).toMatchObject({ profile: 'small', limit: 7168, tokensBefore: expect.any(Number), tokensAfter: expect.any(Number) });
    expect(seen[0].data.tokensAfter).toBeLessThan(seen[0].data.tokensBefore);
  });

  it('refuses a message that cannot fit the window at all with 422 E_CONTEXT_TOO_LARGE, before any model call', async () => {
    const res = await send({ agentId: 'product-lead', message: 'word '.repeat(4000), model: 'small' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('E_CONTEXT_TOO_LARGE');
    expect(res.body.error).toMatch(/profile "small".*the message \(4,0\d\d\)/);
    expect(fast.chatRequests()).toHaveLength(0);
  });
});

describe('a bad models file', () => {
  it('stops start-up: the configuration check names the file, the line and the field, and no runtime is made', async () => {
    const file = path.join(tmp, 'bad.yaml');
    await fs.writeFile(file, 'default: fast\nprofiles:\n  fast:\n    model: m\n    contextWindow: big\n');
    const checked = checkConfiguration({ MODELS_FILE: file }, tmp);
    expect(checked).toEqual({ error: expect.stringMatching(/^MODELS_FILE .*bad\.yaml \(line 5, profiles\.fast\.contextWindow\): /) });
    const saved = process.env.MODELS_FILE;
    process.env.MODELS_FILE = file;
    try {
      expect(() => createRuntime()).toThrow(ModelsFileError);
    } finally {
      if (saved === undefined) delete process.env.MODELS_FILE;
      else process.env.MODELS_FILE = saved;
    }
  });
});

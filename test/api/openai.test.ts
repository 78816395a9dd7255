import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as listModels } from '@/app/v1/models/route';
import { GET as getModel } from '@/app/v1/models/[...id]/route';
import { POST as completions } from '@/app/v1/chat/completions/route';
import { POST as unknownV1 } from '@/app/v1/[...slug]/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { bmadProject } from '../bmad-installs';
import { reply } from '../scripted-model';
import { get, params, startHarness, type Harness } from './harness';

/**
 * The OpenAI-compatible endpoint through its route handlers (the single-user mode, a real 6.12
 * install and the sample bundles): the model list, plain and streamed completions with the tool
 * steps as Open WebUI draws them, one conversation per client chat (by its key or its history),
 * edits, cancel, and every refusal in OpenAI's error shape.
 */
jest.setTimeout(60_000);

let h: Harness;
let projectsRoot: string;

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-openai-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'acme' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 120_000);
afterAll(async () => {
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});
beforeEach(() => {
  h.model.reset();
  h.model.setScript(undefined);
});

type Msg = { role: string; content: unknown };
const post = (body: unknown, headers: Record<string, string> = {}, init: RequestInit = {}) =>
  completions(
    new Request('http://localhost/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...init,
    }),
  );
const ask = (model: string, messages: Msg[], extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) => post({ model, messages, ...extra }, headers);
const user = (content: unknown): Msg => ({ role: 'user', content });
const assistant = (content: unknown): Msg => ({ role: 'assistant', content });

async function detail(id: string) {
  return (await (await getConversation(get(`/api/conversations/${id}`), params({ id }))).json()).data as { messages: { role: string; content: string; id: string }[]; agentId: string; projectId?: string; status: string };
}
const userTexts = async (id: string) => (await detail(id)).messages.filter((m) => m.role === 'user').map((m) => m.content);
const conversationIds = async () => ((await (await listConversations(get('/api/conversations?limit=100'))).json()).data.items as { id: string }[]).map((c) => c.id);

/** The chunks of an OpenAI stream (`[DONE]` kept as a string). */
async function chunksOf(res: Response): Promise<Array<Record<string, any> | '[DONE]'>> {
  const text = await res.text();
  expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('data: '))
    .map((f) => (f === 'data: [DONE]' ? '[DONE]' : JSON.parse(f.slice(6))));
}

async function expectOpenAIError(res: Response, status: number, code: string, param?: string | null) {
  expect(res.status).toBe(status);
  const body = await res.json();
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toEqual({ message: expect.any(String), type: expect.any(String), param: param === undefined ? expect.anything() : param, code });
  expect(body.error.message.length).toBeGreaterThan(10);
  expect(JSON.stringify(body)).not.toContain(projectsRoot);
  return body.error;
}

describe('GET /v1/models', () => {
  it('lists the project agents as <project>/<agent> and the bundle agents as <bundle>/<agent>, in OpenAI’s shape', async () => {
    const res = await listModels(get('/v1/models'));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.object).toBe('list');
    const ids = body.data.map((m: { id: string }) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['acme/bmad-agent-pm', 'acme/bmad-agent-architect', 'product-studio/product-lead', 'product-studio/story-writer', 'scribe/scribe']));
    // Not offered by its bundle, so not a model.
    expect(ids).not.toContain('product-studio/research-helper');
    for (const m of body.data) {
      expect(m).toEqual({ id: expect.any(String), object: 'model', created: expect.any(Number), owned_by: expect.any(String), name: expect.any(String), ...(m.description !== undefined ? { description: expect.any(String) } : {}) });
    }
    expect(body.data.find((m: { id: string }) => m.id === 'product-studio/product-lead')).toMatchObject({ owned_by: 'product-studio', name: 'Maya · Product Lead (product-studio)' });
    expect(body.data.find((m: { id: string }) => m.id === 'acme/bmad-agent-pm')).toMatchObject({ owned_by: 'acme' });
  });

  it('answers one model by its id (a profile suffix names the same agent); an unknown one is 404 model_not_found', async () => {
    const one = await getModel(get('/v1/models/acme/bmad-agent-pm'), params({ id: ['acme', 'bmad-agent-pm'] }));
    expect(await one.json()).toMatchObject({ id: 'acme/bmad-agent-pm', object: 'model' });
    const suffixed = await getModel(get('/v1/models/scribe/scribe@default'), params({ id: ['scribe', 'scribe@default'] }));
    expect(suffixed.status).toBe(200);
    await expectOpenAIError(await getModel(get('/v1/models/acme/nobody'), params({ id: ['acme', 'nobody'] })), 404, 'model_not_found', 'model');
  });

  it('answers an unknown /v1 route with a 404 in OpenAI’s shape', async () => {
    await expectOpenAIError(await unknownV1(new Request('http://localhost/v1/embeddings', { method: 'POST' })), 404, 'E_NOT_FOUND', null);
  });
});

describe('POST /v1/chat/completions', () => {
  it('answers a plain completion with usage, in the conversation it names in a header', async () => {
    h.model.setScript([reply.text('Meeting notes, tidied.', { usage: { prompt_tokens: 40, completion_tokens: 6, cached_tokens: 8 } })]);
    const res = await ask('scribe/scribe', [{ role: 'system', content: 'You are a pirate.' }, user('Tidy these notes')], { temperature: 0.2, tools: [{ type: 'function', function: { name: 'x' } }], n: 1, seed: 3 });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'scribe/scribe',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Meeting notes, tidied.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 40, completion_tokens: 6, total_tokens: 46, prompt_tokens_details: { cached_tokens: 8 } },
    });
    const id = res.headers.get('x-bmad-conversation-id')!;
    expect(await detail(id)).toMatchObject({ agentId: 'scribe', messages: [expect.objectContaining({ role: 'user', content: 'Tidy these notes' }), expect.objectContaining({ role: 'assistant' })] });
    // The client's tools and system prompt are not the agent's: the model got the agent's own.
    const sent = h.model.chatRequests()[0]!.body!;
    expect(sent.tools!.map((t) => t.function?.name)).not.toContain('x');
    expect(JSON.stringify(sent.messages)).not.toContain('pirate');
  });

  it('streams OpenAI chunks: the role, the text, a tool step as Open WebUI draws it, the finish, the usage, [DONE]; the document is saved', async () => {
    h.model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/notes/streamed.md', content: '# Streamed\n\nSaved through /v1.\n' } }], { text: 'Saving it now.' }),
      reply.text('Saved the note.', { usage: { prompt_tokens: 10, completion_tokens: 4 } }),
    ]);
    const res = await ask('acme/bmad-agent-pm', [user('Write the note')], { stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const chunks = await chunksOf(res);
    expect(chunks.at(-1)).toBe('[DONE]');
    const objects = chunks.filter((c): c is Record<string, any> => c !== '[DONE]');
    for (const c of objects) expect(c).toMatchObject({ id: objects[0]!.id, object: 'chat.completion.chunk', model: 'acme/bmad-agent-pm' });
    expect(objects[0]!.choices[0]).toEqual({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null });
    const content = objects.flatMap((c) => c.choices.map((x: any) => x.delta.content ?? '')).join('');
    expect(content).toMatch(/^Saving it now\.\n\n<details type="tool_calls" done="true" id="call_\w+" name="save_output" arguments="\{&quot;file_path&quot;:&quot;\{output_folder\}\/notes\/streamed\.md&quot;,&quot;content&quot;:&quot;# Streamed\\n\\nSaved through \/v1\.\\n&quot;\}" result="&quot;ok · \{[^"]*\}&quot;" files="" embeds="">\n<summary>Tool Executed<\/summary>\nsave_output: ok · \{[^\n]*\}\n<\/details>\n\nSaved the note\.$/);
    const finish = objects.filter((c) => c.choices[0]?.finish_reason);
    expect(finish.map((c) => c.choices[0].finish_reason)).toEqual(['stop']);
    expect(objects.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) } });
    expect(objects.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(await fs.readFile(path.join(projectsRoot, 'acme/_bmad-output/notes/streamed.md'), 'utf8')).toBe('# Streamed\n\nSaved through /v1.\n');
  });

  it('runs a menu command typed as *code, as our own chat does', async () => {
    h.model.setScript(({ body }) => (body.messages?.some((m) => m.role === 'tool') ? reply.text('The workflow is loaded.') : reply.text('No workflow came.')));
    const res = await ask('acme/bmad-agent-pm', [user('*bmad-help')]);
    const content = (await res.json()).choices[0].message.content as string;
    expect(content).toMatch(/^<details type="tool_calls" done="true" id="[^"]+" name="execute_workflow" /);
    expect(content.endsWith('The workflow is loaded.')).toBe(true);
  });

  it('continues one conversation while the client sends its history back, even reshaped (tool steps dropped, spaces changed)', async () => {
    h.model.setScript([
      reply.toolCalls([{ name: 'list_files', arguments: { path: '{bundle-root}' } }], { text: 'Let me look.' }),
      reply.text('Two  agents live  here.'),
      reply.text('Second answer.'),
      reply.text('Third answer.'),
    ]);
    const first = await ask('product-studio/product-lead', [user('What is in the bundle?')]);
    const id = first.headers.get('x-bmad-conversation-id')!;
    const a1 = (await first.json()).choices[0].message.content as string;
    expect(a1).toContain('<details type="tool_calls"');
    // As the client got it.
    const second = await ask('product-studio/product-lead', [user('What is in the bundle?'), assistant(a1), user('And then?')]);
    expect(second.headers.get('x-bmad-conversation-id')).toBe(id);
    const a2 = (await second.json()).choices[0].message.content as string;
    // As Open WebUI sends it back: its tool blocks stripped, the text re-spaced; content as parts.
    const reshaped = a1.replace(/<details[\s\S]*?<\/details>/g, '').replace(/\s+/g, '\n');
    const third = await ask('product-studio/product-lead', [user([{ type: 'text', text: 'What is in the bundle?' }]), assistant(reshaped), user('And then?'), assistant(` ${a2} `), user('Last one')]);
    expect(third.headers.get('x-bmad-conversation-id')).toBe(id);
    expect(await userTexts(id)).toEqual(['What is in the bundle?', 'And then?', 'Last one']);
  });

  it('an edited earlier message replaces it and what followed, as our own edit does; a regenerate answers it again', async () => {
    h.model.setScript(({ body }) => reply.text(`Answer to ${JSON.stringify(body.messages?.filter((m) => m.role === 'user').at(-1)?.content)}`));
    const one = await ask('scribe/scribe', [user('one')]);
    const id = one.headers.get('x-bmad-conversation-id')!;
    const a1 = (await one.json()).choices[0].message.content;
    const two = await ask('scribe/scribe', [user('one'), assistant(a1), user('two')]);
    const a2 = (await two.json()).choices[0].message.content;
    await ask('scribe/scribe', [user('one'), assistant(a1), user('two'), assistant(a2), user('three')]);
    expect(await userTexts(id)).toEqual(['one', 'two', 'three']);
    const edited = await ask('scribe/scribe', [user('one'), assistant(a1), user('TWO, edited')]);
    expect(edited.headers.get('x-bmad-conversation-id')).toBe(id);
    expect(await userTexts(id)).toEqual(['one', 'TWO, edited']);
    const again = await ask('scribe/scribe', [user('one'), assistant(a1), user('TWO, edited')]);
    expect(again.headers.get('x-bmad-conversation-id')).toBe(id);
    expect(await userTexts(id)).toEqual(['one', 'TWO, edited']);
    expect((await detail(id)).messages.filter((m) => m.role === 'assistant')).toHaveLength(2);
  });

  it('keys a conversation by X-OpenWebUI-Chat-Id: two chats with the same words stay apart, and the assistant’s words may change', async () => {
    h.model.setScript(() => reply.text('The same greeting every time.'));
    const chat = (key: string, messages: Msg[]) => ask('scribe/scribe', messages, {}, { 'X-OpenWebUI-Chat-Id': key });
    const a = (await chat('owui-a', [user('hi')])).headers.get('x-bmad-conversation-id')!;
    const b = (await chat('owui-b', [user('hi')])).headers.get('x-bmad-conversation-id')!;
    expect(b).not.toBe(a);
    expect((await chat('owui-a', [user('hi'), assistant('something else entirely'), user('on in a')])).headers.get('x-bmad-conversation-id')).toBe(a);
    expect((await chat('owui-b', [user('hi'), assistant('The same greeting every time.'), user('on in b')])).headers.get('x-bmad-conversation-id')).toBe(b);
    expect(await userTexts(a)).toEqual(['hi', 'on in a']);
    expect(await userTexts(b)).toEqual(['hi', 'on in b']);
    // The body's `conversation` and LibreChat's X-Conversation-Id key a chat the same way.
    const c = (await ask('scribe/scribe', [user('hi')], { conversation: 'lc-1' })).headers.get('x-bmad-conversation-id')!;
    expect((await ask('scribe/scribe', [user('hi'), assistant('?'), user('on in c')], {}, { 'X-Conversation-Id': 'lc-1' })).headers.get('x-bmad-conversation-id')).toBe(c);
    expect((await ask('scribe/scribe', [user('hi'), assistant('?'), user('on in c')], { metadata: { conversation_id: 'lc-1' } })).headers.get('x-bmad-conversation-id')).toBe(c);
  });

  it('looks a history up within the client’s `user`, which never keys a chat by itself; another model in the same chat is another conversation', async () => {
    h.model.setScript(() => reply.text('Same words.'));
    const first = (u: string) => ask('scribe/scribe', [user('greetings')], { user: u });
    const ann = (await first('ann')).headers.get('x-bmad-conversation-id')!;
    const ben = (await first('ben')).headers.get('x-bmad-conversation-id')!;
    expect(ben).not.toBe(ann);
    const next = (u: string) => ask('scribe/scribe', [user('greetings'), assistant('Same words.'), user(`more from ${u}`)], { user: u });
    expect((await next('ann')).headers.get('x-bmad-conversation-id')).toBe(ann);
    expect((await next('ben')).headers.get('x-bmad-conversation-id')).toBe(ben);
    // The same chat key, another agent: that agent's own conversation, holding the chat so far.
    const c = (await ask('scribe/scribe', [user('start')], {}, { 'X-OpenWebUI-Chat-Id': 'switch' })).headers.get('x-bmad-conversation-id')!;
    const switched = await ask('product-studio/product-lead', [user('start'), assistant('Same words.'), user('now you')], {}, { 'X-OpenWebUI-Chat-Id': 'switch' });
    const other = switched.headers.get('x-bmad-conversation-id')!;
    expect(other).not.toBe(c);
    expect(await userTexts(other)).toEqual(['start', 'now you']);
    expect((await detail(other)).agentId).toBe('product-lead');
  });

  it('starts a conversation that holds a history no conversation continues (a chat begun elsewhere, another model)', async () => {
    h.model.setScript(() => reply.text('Noted.'));
    const before = new Set(await conversationIds());
    const res = await ask('scribe/scribe', [user('Earlier question'), assistant('Earlier <details type="tool_calls" done="true">\n<summary>Tool Executed</summary>\n</details>\n\nanswer'), user('Now this')]);
    const id = res.headers.get('x-bmad-conversation-id')!;
    expect(before.has(id)).toBe(false);
    const messages = (await detail(id)).messages.filter((m) => m.role !== 'system');
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Earlier question'],
      ['assistant', 'Earlier \n\nanswer'],
      ['user', 'Now this'],
      ['assistant', 'Noted.'],
    ]);
    // The model read that history.
    expect(JSON.stringify(h.model.chatRequests()[0]!.body!.messages)).toContain('Earlier question');
  });

  it('a client closing the stream stops the turn and the upstream request, as Stop does', async () => {
    h.model.setScript([reply.text('word '.repeat(400), { tokenDelayMs: 20, chunkSize: 5 })]);
    const controller = new AbortController();
    const res = await post({ model: 'scribe/scribe', messages: [user('Tell a long story')], stream: true }, {}, { signal: controller.signal });
    const id = res.headers.get('x-bmad-conversation-id')!;
    const reader = res.body!.getReader();
    let seen = '';
    while ((seen.match(/"content":"word/g) ?? []).length < 2) seen += new TextDecoder().decode((await reader.read()).value);
    const started = Date.now();
    controller.abort();
    await reader.cancel();
    await h.model.waitFor(() => h.model.chatRequests()[0]?.clientClosed === true, 2000);
    expect(Date.now() - started).toBeLessThan(1500);
    for (let i = 0; i < 50 && (await detail(id)).status === 'running'; i++) await new Promise((r) => setTimeout(r, 20));
    const d = await detail(id);
    expect(d.status).toBe('stopped');
    const stored = d.messages.find((m) => m.role === 'assistant')!.content;
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThan('word '.repeat(400).length);
  });

  it('answers bad input with a 4xx in OpenAI’s error shape, never a 500', async () => {
    const before = (await conversationIds()).length;
    await expectOpenAIError(await post({ messages: [user('hi')] }), 400, 'E_VALIDATION', 'model');
    await expectOpenAIError(await ask('nobody/nothing', [user('hi')]), 404, 'model_not_found', 'model');
    await expectOpenAIError(await ask('no-slash', [user('hi')]), 404, 'model_not_found', 'model');
    await expectOpenAIError(await ask('scribe/scribe@no-such-profile', [user('hi')]), 404, 'model_not_found', 'model');
    await expectOpenAIError(await ask('scribe/scribe', [user('hi')], {}, { 'X-BMAD-Profile': 'no-such-profile' }), 400, 'E_VALIDATION', 'X-BMAD-Profile');
    await expectOpenAIError(await ask('scribe/scribe', [{ role: 'system', content: 'only a system prompt' }, assistant('and an answer')]), 400, 'E_VALIDATION', 'messages');
    await expectOpenAIError(await ask('scribe/scribe', [user([{ type: 'image_url', image_url: { url: 'data:,' } }])]), 400, 'E_VALIDATION', 'messages.0.content');
    await expectOpenAIError(await ask('scribe/scribe', []), 400, 'E_VALIDATION', 'messages');
    await expectOpenAIError(await post({ model: 'scribe/scribe', messages: 'hi' }), 400, 'E_VALIDATION', 'messages');
    await expectOpenAIError(await post({ model: 42, messages: [user('hi')] }), 400, 'E_VALIDATION', 'model');
    await expectOpenAIError(await ask('scribe/scribe', [user('hi')], { stream: 'yes' }), 400, 'E_VALIDATION', 'stream');
    await expectOpenAIError(await ask('scribe/scribe', [{ role: 'wizard', content: 'hi' }]), 400, 'E_VALIDATION', 'messages.0.role');
    await expectOpenAIError(await ask('scribe/scribe', [user(7)]), 400, 'E_VALIDATION', 'messages.0.content');
    await expectOpenAIError(await ask('scribe/scribe', [user('hi')], { metadata: { conversation_id: 5 } }), 400, 'E_VALIDATION', 'metadata.conversation_id');
    await expectOpenAIError(await ask('scribe/scribe', [user('x'.repeat(20_001))]), 400, 'E_VALIDATION', 'messages.0.content');
    await expectOpenAIError(await post('{"model": "scribe/scribe", '), 400, 'E_VALIDATION', 'body');
    await expectOpenAIError(await post(JSON.stringify({ model: 'scribe/scribe', messages: [user('x'.repeat(3 * 1024 * 1024))] })), 413, 'E_TOO_LARGE', null);
    expect(h.model.chatRequests()).toHaveLength(0);
    expect(await conversationIds()).toHaveLength(before);
  });

  it('takes a hostile history (unclosed tool blocks, long runs of one letter) as plain text', async () => {
    h.model.setScript(() => reply.text('ok'));
    const hostile = '<details '.repeat(20_000) + 'a'.repeat(100_000);
    const res = await ask('scribe/scribe', [user('hi'), assistant(hostile), user('and now')]);
    expect(res.status).toBe(200);
    expect((await detail(res.headers.get('x-bmad-conversation-id')!)).messages.find((m) => m.role === 'assistant')!.content).toBe(hostile.trim());
  });
});

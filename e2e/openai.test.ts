/**
 * The OpenAI-compatible endpoint against the production build (`next start`, accounts on), driven
 * by the official `openai` SDK as Open WebUI's and LibreChat's servers drive it: per-token model
 * lists, streamed and plain completions of a real BMAD 6.12 agent whose tool call saves a document
 * in the project, one conversation per client chat (by history, by X-OpenWebUI-Chat-Id, never
 * another person's), a closed stream stopping the turn, and refusals in OpenAI's error shape.
 *
 * Run: npx jest -c jest.e2e.config.ts e2e/openai   (E2E_SKIP_BUILD=1 reuses an existing build).
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import OpenAI from 'openai';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { makeFolders, startApp, type AppServer, type Folders } from './support';

jest.setTimeout(120_000);

let model: ScriptedModel;
let folders: Folders;
let projectsRoot: string;
let app: AppServer;
let client = 0;
const tokens: Record<string, string> = {};
const sessions: Record<string, string> = {};

async function call(method: string, route: string, who: { cookie?: string; token?: string }, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${app.url}${route}`, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json', origin: app.url } : {}),
      ...(who.cookie ? { cookie: who.cookie } : {}),
      ...(who.token ? { authorization: `Bearer ${who.token}` } : {}),
      'x-forwarded-for': `10.7.0.${++client % 250}`,
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

const cookieOf = (headers: Headers) =>
  headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');

async function signIn(email: string, password: string): Promise<string> {
  const res = await call('POST', '/api/auth/sign-in/email', {}, { email, password });
  expect(res.status).toBe(200);
  return cookieOf(res.headers);
}

const openai = (token: string, headers: Record<string, string> = {}) => new OpenAI({ baseURL: `${app.url}/v1`, apiKey: token, defaultHeaders: headers, maxRetries: 0, timeout: 60_000 });

/** A person's conversations as our own UI lists them. */
async function conversationsOf(who: string): Promise<{ id: string; agentId: string; projectId?: string }[]> {
  const res = await call('GET', '/api/conversations?limit=100', { token: tokens[who]! });
  expect(res.status).toBe(200);
  return res.body.data.items;
}
async function conversation(who: string, id: string): Promise<{ status: string; messages: { role: string; content: string; functionCalls?: { name: string }[] }[] }> {
  const res = await call('GET', `/api/conversations/${id}`, { token: tokens[who]! });
  expect(res.status).toBe(200);
  return res.body.data;
}
const userTurns = async (who: string, id: string) => (await conversation(who, id)).messages.filter((m) => m.role === 'user').map((m) => m.content);

const saveThenAnswer = (file: string, content: string, answer: string) => [
  reply.toolCalls([{ name: 'save_output', arguments: { file_path: `{output_folder}/${file}`, content } }], { text: 'Saving the brief.' }),
  reply.text(answer, { usage: { prompt_tokens: 50, completion_tokens: 9 } }),
];

beforeAll(async () => {
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('openai');
  projectsRoot = path.join(folders.root, 'projects');
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'acme' });
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'globex' });
  // Logs on: the last test checks that no request crashed into a 500.
  app = await startApp(folders, { AUTH: 'on', OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot, LOG_LEVEL: 'info' });
  const setup = await call('POST', '/api/auth/setup', {}, { email: 'root@example.com', name: 'Root', password: 'root-password-1' });
  expect(setup.status).toBe(201);
  sessions.root = cookieOf(setup.headers);
  for (const [who, project] of [
    ['alice', 'acme'],
    ['bob', 'globex'],
  ] as const) {
    expect((await call('POST', '/api/users', { cookie: sessions.root }, { email: `${who}@example.com`, name: who, password: `${who}-password-1`, role: 'member' })).status).toBe(201);
    expect((await call('PUT', `/api/projects/${project}/members`, { cookie: sessions.root }, { email: `${who}@example.com`, role: 'editor' })).status).toBe(200);
    sessions[who] = await signIn(`${who}@example.com`, `${who}-password-1`);
  }
  for (const who of ['alice', 'bob', 'root']) {
    const made = await call('POST', '/api/tokens', { cookie: sessions[who] }, { name: 'open-webui' });
    expect(made.status).toBe(201);
    tokens[who] = made.body.data.token;
  }
  const limited = await call('POST', '/api/tokens', { cookie: sessions.root }, { name: 'acme only', projectIds: ['acme'] });
  expect(limited.status).toBe(201);
  tokens.rootAcme = limited.body.data.token;
}, 240_000);

afterAll(async () => {
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

beforeEach(() => {
  model.reset();
  model.setScript([]);
});

it('lists the models each token may use: two people with different projects see different lists', async () => {
  const ids = async (token: string) => (await openai(token).models.list()).data.map((m) => m.id).sort();
  const alice = await ids(tokens.alice!);
  const bob = await ids(tokens.bob!);
  expect(alice).toEqual(expect.arrayContaining(['acme/bmad-agent-pm', 'acme/bmad-agent-architect', 'product-studio/product-lead', 'scribe/scribe']));
  expect(alice.filter((id) => id.startsWith('globex/'))).toEqual([]);
  expect(bob).toEqual(expect.arrayContaining(['globex/bmad-agent-pm', 'product-studio/product-lead']));
  expect(bob.filter((id) => id.startsWith('acme/'))).toEqual([]);
  const root = await ids(tokens.root!);
  expect(root).toEqual(expect.arrayContaining(['acme/bmad-agent-pm', 'globex/bmad-agent-pm']));
  // A token limited to acme: acme's agents only (not even the bundles', which are outside every project).
  const limited = await ids(tokens.rootAcme!);
  expect(limited.length).toBeGreaterThan(0);
  expect(limited.every((id) => id.startsWith('acme/'))).toBe(true);
  const pm = (await openai(tokens.alice!).models.retrieve('acme/bmad-agent-pm')) as OpenAI.Models.Model & { name?: string };
  expect(pm).toMatchObject({ id: 'acme/bmad-agent-pm', object: 'model', owned_by: 'acme', name: expect.stringContaining('(acme)') });
});

it('streams a BMAD agent’s answer with its tool step, saves the document in the project, and continues the same conversation when the client sends the history back', async () => {
  model.setScript([...saveThenAnswer('briefs/streamed.md', '# Brief\n\nStreamed through /v1.\n', 'The brief is saved.'), reply.text('Here is what comes next.')]);
  const ai = openai(tokens.alice!);
  const stream = await ai.chat.completions.create({ model: 'acme/bmad-agent-pm', messages: [{ role: 'user', content: 'Write a short brief' }], stream: true, stream_options: { include_usage: true } });
  let content = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | null | undefined;
  let role: string | undefined;
  for await (const chunk of stream) {
    role ??= chunk.choices[0]?.delta.role;
    content += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  expect(role).toBe('assistant');
  expect(finish).toBe('stop');
  expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) });
  expect(content).toContain('<details type="tool_calls" done="true"');
  expect(content).toContain('name="save_output"');
  expect(content).toContain('<summary>Tool Executed</summary>');
  expect(content.startsWith('Saving the brief.')).toBe(true);
  expect(content.endsWith('The brief is saved.')).toBe(true);
  expect(await fs.readFile(path.join(projectsRoot, 'acme/_bmad-output/briefs/streamed.md'), 'utf8')).toBe('# Brief\n\nStreamed through /v1.\n');

  const second = await ai.chat.completions.create({
    model: 'acme/bmad-agent-pm',
    messages: [
      { role: 'user', content: 'Write a short brief' },
      { role: 'assistant', content },
      { role: 'user', content: 'What comes next?' },
    ],
  });
  expect(second.choices[0]!.message.content).toBe('Here is what comes next.');
  const mine = await conversationsOf('alice');
  expect(mine).toHaveLength(1);
  expect(mine[0]).toMatchObject({ agentId: 'bmad-agent-pm', projectId: 'acme' });
  expect(await userTurns('alice', mine[0]!.id)).toEqual(['Write a short brief', 'What comes next?']);
});

it('answers a plain completion with usage; its tool step is in the answer and its document in the project', async () => {
  model.setScript(saveThenAnswer('briefs/plain.md', '# Plain\n', 'Saved it.'));
  const { data: done, response } = await openai(tokens.alice!).chat.completions.create({ model: 'acme/bmad-agent-pm', messages: [{ role: 'user', content: 'Save a plain brief' }] }).withResponse();
  expect(done.object).toBe('chat.completion');
  expect(done.choices[0]!.finish_reason).toBe('stop');
  expect(done.choices[0]!.message.content).toMatch(/^Saving the brief\.\n\n<details type="tool_calls" done="true" id="[^"]+" name="save_output" arguments="[^"]+" result="[^"]+" files="" embeds="">\n<summary>Tool Executed<\/summary>\nsave_output: ok · [^\n]+\n<\/details>\n\nSaved it\.$/);
  expect(done.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  expect(done.usage!.total_tokens).toBe(done.usage!.prompt_tokens + done.usage!.completion_tokens);
  expect(await fs.readFile(path.join(projectsRoot, 'acme/_bmad-output/briefs/plain.md'), 'utf8')).toBe('# Plain\n');
  const id = response.headers.get('x-bmad-conversation-id')!;
  // Our UI shows the same turn: the question, and the answer with its save_output call.
  const messages = (await conversation('alice', id)).messages;
  expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  expect(messages[1]!.functionCalls!.map((c) => c.name)).toEqual(['save_output']);
});

it('keys a conversation by X-OpenWebUI-Chat-Id: the same words in two chats are two conversations, each continued', async () => {
  model.setScript(() => reply.text('The same answer.'));
  const before = (await conversationsOf('alice')).length;
  const chat = (id: string) => openai(tokens.alice!, { 'X-OpenWebUI-Chat-Id': id });
  const turn = async (id: string, messages: OpenAI.Chat.ChatCompletionMessageParam[]) =>
    (await chat(id).chat.completions.create({ model: 'scribe/scribe', messages }).withResponse()).response.headers.get('x-bmad-conversation-id')!;
  const a = await turn('owui-chat-a', [{ role: 'user', content: 'hello' }]);
  const b = await turn('owui-chat-b', [{ role: 'user', content: 'hello' }]);
  expect(b).not.toBe(a);
  // Open WebUI sends the assistant's words back reshaped: the key needs only the user's.
  expect(await turn('owui-chat-a', [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'The same  answer.' }, { role: 'user', content: 'in chat a' }])).toBe(a);
  expect(await turn('owui-chat-b', [{ role: 'user', content: 'hello' }, { role: 'assistant', content: '' }, { role: 'user', content: 'in chat b' }])).toBe(b);
  expect(await userTurns('alice', a)).toEqual(['hello', 'in chat a']);
  expect(await userTurns('alice', b)).toEqual(['hello', 'in chat b']);
  expect((await conversationsOf('alice')).length).toBe(before + 2);
});

it('never continues another person’s conversation: the same history from someone else is their own', async () => {
  model.setScript(() => reply.text('A greeting.'));
  const first = await openai(tokens.alice!).chat.completions.create({ model: 'scribe/scribe', messages: [{ role: 'user', content: 'shared words' }] }).withResponse();
  const aliceConversation = first.response.headers.get('x-bmad-conversation-id')!;
  const history: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'shared words' }, { role: 'assistant', content: first.data.choices[0]!.message.content! }, { role: 'user', content: 'and on' }];
  const bob = await openai(tokens.bob!).chat.completions.create({ model: 'scribe/scribe', messages: history }).withResponse();
  const bobConversation = bob.response.headers.get('x-bmad-conversation-id')!;
  expect(bobConversation).not.toBe(aliceConversation);
  expect((await conversationsOf('bob')).map((c) => c.id)).toContain(bobConversation);
  expect(await userTurns('alice', aliceConversation)).toEqual(['shared words']);
  expect((await call('GET', `/api/conversations/${aliceConversation}`, { token: tokens.bob! })).status).toBe(404);
  // Alice's own next turn still continues hers.
  const again = await openai(tokens.alice!).chat.completions.create({ model: 'scribe/scribe', messages: history }).withResponse();
  expect(again.response.headers.get('x-bmad-conversation-id')).toBe(aliceConversation);
});

it('a client that closes the stream stops the turn and the model call, as Stop does', async () => {
  model.setScript([reply.text('word '.repeat(600), { tokenDelayMs: 15, chunkSize: 5 })]);
  const controller = new AbortController();
  const { data: stream, response } = await openai(tokens.alice!)
    .chat.completions.create({ model: 'scribe/scribe', messages: [{ role: 'user', content: 'A long story, please' }], stream: true }, { signal: controller.signal })
    .withResponse();
  const id = response.headers.get('x-bmad-conversation-id')!;
  let got = '';
  for await (const chunk of stream) {
    got += chunk.choices[0]?.delta.content ?? '';
    if (got.length > 30) break;
  }
  controller.abort();
  await model.waitFor(() => model.chatRequests()[0]?.clientClosed === true, 5000);
  let status = 'running';
  for (let i = 0; i < 100 && status === 'running'; i++) {
    status = (await conversation('alice', id)).status;
    if (status === 'running') await new Promise((r) => setTimeout(r, 50));
  }
  expect(status).toBe('stopped');
  const stored = (await conversation('alice', id)).messages.find((m) => m.role === 'assistant')?.content ?? '';
  expect(stored.length).toBeLessThan('word '.repeat(600).length);
});

it('refuses bad input and what the caller may not use with a 4xx in OpenAI’s error shape', async () => {
  const ai = openai(tokens.alice!);
  const refusal = async (p: Promise<unknown>) => {
    const e = (await p.then(
      () => null,
      (err: unknown) => err,
    )) as InstanceType<typeof OpenAI.APIError> | null;
    expect(e).toBeInstanceOf(OpenAI.APIError);
    expect(Object.keys(e!.error as object).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect((e!.error as { message: string }).message.length).toBeGreaterThan(10);
    return { status: e!.status, code: e!.code, param: e!.param };
  };
  expect(await refusal(ai.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }] } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming))).toEqual({ status: 400, code: 'E_VALIDATION', param: 'model' });
  expect(await refusal(ai.chat.completions.create({ model: 'acme/no-such-agent', messages: [{ role: 'user', content: 'hi' }] }))).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
  expect(await refusal(ai.chat.completions.create({ model: 'globex/bmad-agent-pm', messages: [{ role: 'user', content: 'hi' }] }))).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
  expect(await refusal(ai.chat.completions.create({ model: 'scribe/scribe', messages: [{ role: 'system', content: 'no user here' }] }))).toEqual({ status: 400, code: 'E_VALIDATION', param: 'messages' });
  expect(await refusal(ai.chat.completions.create({ model: 'scribe/scribe', messages: 'hi' } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming))).toEqual({ status: 400, code: 'E_VALIDATION', param: 'messages' });
  expect(await refusal(ai.chat.completions.create({ model: 'scribe/scribe', messages: [{ role: 'user', content: 'hi' }], stream: 'yes' } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming))).toEqual({ status: 400, code: 'E_VALIDATION', param: 'stream' });
  // A token limited to acme reaches acme's agents only.
  const limited = openai(tokens.rootAcme!);
  expect(await refusal(limited.chat.completions.create({ model: 'globex/bmad-agent-pm', messages: [{ role: 'user', content: 'hi' }] }))).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
  expect(await refusal(limited.chat.completions.create({ model: 'scribe/scribe', messages: [{ role: 'user', content: 'hi' }] }))).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
  // No token, a wrong one.
  expect(await refusal(openai('bmad_not-a-token').models.list())).toEqual({ status: 401, code: 'E_UNAUTHENTICATED', param: null });
  const bare = await fetch(`${app.url}/v1/models`);
  expect(bare.status).toBe(401);
  expect((await bare.json()).error).toMatchObject({ type: 'authentication_error', code: 'E_UNAUTHENTICATED' });
  const unknown = await fetch(`${app.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${tokens.alice}` } });
  expect(unknown.status).toBe(404);
  expect((await unknown.json()).error.code).toBe('E_NOT_FOUND');
  // Refused before any route runs (proxy.ts), still in OpenAI's shape: a host name the server does
  // not answer to, a path that is not valid percent-encoding.
  expect(await raw('/v1/models', { host: 'rebound.example', authorization: `Bearer ${tokens.alice}` })).toEqual({ status: 403, error: expect.objectContaining({ code: 'E_FORBIDDEN', type: 'permission_error' }) });
  expect(await raw('/v1/models/acme/%ZZ', { host: `127.0.0.1:${app.port}`, authorization: `Bearer ${tokens.alice}` })).toEqual({ status: 400, error: expect.objectContaining({ code: 'E_VALIDATION' }) });
  expect(model.chatRequests()).toHaveLength(0);
});

/** A GET with headers fetch will not send as given (Host), on loopback; its status and OpenAI error object. */
function raw(urlPath: string, headers: Record<string, string>): Promise<{ status: number; error: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: app.port, method: 'GET', path: urlPath, headers }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, error: (JSON.parse(data) as { error: unknown }).error }));
    });
    req.on('error', reject);
    req.end();
  });
}

it('no request of this file crashed into a 500', () => {
  const logs = app.logs();
  expect(logs).toContain('"route":"POST /v1/chat/completions"');
  expect(logs).not.toContain('"event":"request.crash"');
  expect(logs).not.toMatch(/"event":"http\.request"[^\n]*"status":500/);
});

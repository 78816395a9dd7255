import { POST as chat } from '@/app/api/chat/route';
import { GET as list } from '@/app/api/conversations/route';
import { GET as getOne, PATCH } from '@/app/api/conversations/[id]/route';
import { abortRunningTurns } from '@/lib/engine/runtime/shutdown';
import { reply, startScriptedModel } from '../scripted-model';
import type { ChatMessage } from '../scripted-model/types';
import { get, jsonRequest, params, readSse, startHarness, type Harness } from './harness';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const AGENT = 'product-lead';
const send = (body: Record<string, unknown>, init?: RequestInit) => chat(jsonRequest('/api/chat', { agentId: AGENT, ...body }, init));
const detail = async (id: string) => (await (await getOne(get(`/api/conversations/${id}`), params({ id }))).json()).data;
const listed = async (query = '') => (await (await list(get(`/api/conversations${query}`))).json()).data.items;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The user texts of a model request, in order. */
const userTexts = (messages: ChatMessage[] | undefined) => (messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
const lastRequest = () => h.model.chatRequests().at(-1)!.body!;

/** Text deltas and other frames of a streamed answer read so far. */
function parseFrames(text: string): Array<Record<string, any>> {
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('data: ') && f !== 'data: [DONE]')
    .map((f) => JSON.parse(f.slice('data: '.length)));
}

describe('retry after a failure never stores the message twice', () => {
  it('upstream 500 on a first message: the conversation stays, failed, with its message; regenerate answers it once', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    h.model.setScript(() => reply.error(500));
    const failed = await send({ message: 'X marks the spot' });
    expect(failed.status).toBe(502);
    const body = await failed.json();
    expect(body).toMatchObject({ success: false, code: 'E_LLM_UPSTREAM', conversationId: expect.any(String), userMessageId: expect.any(String) });
    const id = body.conversationId;

    // After a reload: listed with what was asked, marked failed with the error.
    const [item] = await listed();
    expect(item).toMatchObject({ id, status: 'failed', title: 'X marks the spot', lastMessagePreview: 'X marks the spot', lastTurn: { status: 'failed', error: { code: 'E_LLM_UPSTREAM' } } });
    const d = await detail(id);
    expect(d.status).toBe('failed');
    expect(d.lastTurn).toEqual({ status: 'failed', error: { code: 'E_LLM_UPSTREAM', message: body.error }, at: expect.any(String) });
    expect(d.messages.map((m: { role: string; content: string; id: string }) => [m.role, m.content, m.id])).toEqual([['user', 'X marks the spot', body.userMessageId]]);

    h.model.setScript([reply.text('Found it.')]);
    const retry = await send({ conversationId: id, regenerate: true });
    expect(retry.status).toBe(200);
    expect((await retry.json()).data).toMatchObject({ userMessageId: body.userMessageId, message: { content: 'Found it.' } });
    expect(userTexts(lastRequest().messages)).toEqual(['X marks the spot']);

    const after = await detail(id);
    expect(after.status).toBe('idle');
    expect(after).not.toHaveProperty('lastTurn');
    expect(after.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'X marks the spot'],
      ['assistant', 'Found it.'],
    ]);
    expect((await listed())[0]).toMatchObject({ id, status: 'idle', lastMessagePreview: 'Found it.' });
  });

  it('model server stopped mid-conversation (stream): retry drops the partial answer and its tool calls', async () => {
    h = await startHarness();
    h.model.setScript([reply.text('Hello.')]);
    const id = (await (await send({ message: 'hi' })).json()).data.conversationId;

    // The model reads a file, starts its answer, then its server dies.
    h.model.setScript([
      reply.toolCalls([{ name: 'list_files', arguments: { path: '{bundle-root}' } }]),
      reply.text('Half an answer that never ends', { chunkSize: 4, disconnectAfterChunks: 4 }),
    ]);
    const failed = await readSse(await send({ conversationId: id, message: 'X', stream: true }));
    expect(failed.find((c) => c !== '[DONE]' && c.type === 'error')).toBeDefined();
    const broken = await detail(id);
    expect(broken.status).toBe('failed');
    expect(broken.messages.at(-1).functionCalls).toHaveLength(1);

    const port = h.model.port;
    await h.model.close();
    const refused = await readSse(await send({ conversationId: id, regenerate: true, stream: true }));
    const error = refused.find((c) => c !== '[DONE]' && c.type === 'error') as Record<string, any>;
    expect(error.errorText).toMatch(/connection refused/);
    expect(refused.find((c) => c !== '[DONE]' && c.type === 'data-error')).toMatchObject({ data: { code: 'E_LLM_UPSTREAM' } });
    expect((await detail(id)).lastTurn).toMatchObject({ status: 'failed', error: { code: 'E_LLM_UPSTREAM' } });

    h.model = await startScriptedModel({ port });
    h.model.setScript([reply.text('Whole answer.')]);
    const ok = await readSse(await send({ conversationId: id, regenerate: true, message: 'ignored', stream: true }));
    expect(ok.at(-1)).toBe('[DONE]');
    expect(userTexts(lastRequest().messages)).toEqual(['hi', 'X']);
    expect(lastRequest().messages!.some((m) => m.role === 'tool')).toBe(false);
    const after = await detail(id);
    expect(after.messages.map((m: { role: string; content: string; functionCalls?: unknown[] }) => [m.role, m.content, m.functionCalls?.length ?? 0])).toEqual([
      ['user', 'hi', 0],
      ['assistant', 'Hello.', 0],
      ['user', 'X', 0],
      ['assistant', 'Whole answer.', 0],
    ]);
  });
});

describe('regenerate', () => {
  it('replaces the last answer, which is kept nowhere', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    h.model.setScript([reply.text('First idea: zebras.')]);
    const first = (await (await send({ message: 'Give me an idea' })).json()).data;
    h.model.setScript([reply.text('Second idea: otters.')]);
    const second = (await (await send({ conversationId: first.conversationId, regenerate: true })).json()).data;
    expect(second.message.content).toBe('Second idea: otters.');
    expect(second.userMessageId).toBe(first.userMessageId);
    expect(JSON.stringify(lastRequest().messages)).not.toContain('zebras');

    const d = await detail(first.conversationId);
    expect(d.messages.map((m: { content: string }) => m.content)).toEqual(['Give me an idea', 'Second idea: otters.']);
    expect(JSON.stringify(d)).not.toContain('zebras');
    expect(await listed('?q=zebras')).toEqual([]);
    expect((await listed('?q=otters')).map((c: { id: string }) => c.id)).toEqual([first.conversationId]);
  });

  it('refuses without a conversation, and while a turn runs', async () => {
    h = await startHarness();
    const none = await send({ regenerate: true });
    expect(none.status).toBe(400);
    expect(await none.json()).toMatchObject({ code: 'E_VALIDATION', field: 'conversationId' });
    const both = await send({ regenerate: true, conversationId: 'c', editMessageId: 'm' });
    expect(await both.json()).toMatchObject({ code: 'E_VALIDATION', field: 'editMessageId' });

    h.model.setScript([reply.text('first')]);
    const id = (await (await send({ message: 'hi' })).json()).data.conversationId;
    h.model.setScript([reply.text('slow', { latencyMs: 500 })]);
    const running = send({ conversationId: id, message: 'more' });
    await h.model.waitFor(() => h.model.chatRequests().length >= 2, 5000);
    const busy = await send({ conversationId: id, regenerate: true });
    expect(busy.status).toBe(409);
    expect((await busy.json()).code).toBe('E_CONVERSATION_BUSY');
    expect((await running).status).toBe(200);
    expect((await detail(id)).messages.map((m: { content: string }) => m.content)).toEqual(['hi', 'first', 'more', 'slow']);
  });
});

describe('edit an earlier user message', () => {
  it('truncates at it and runs the new text; count, preview and the automatic title follow', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    h.model.setScript([reply.text('Answer one.'), reply.text('Answer two.'), reply.text('Answer three.')]);
    const one = (await (await send({ message: 'Plan a launch party' })).json()).data;
    const id = one.conversationId;
    await send({ conversationId: id, message: 'With balloons' });
    const before = await detail(id);
    expect(before.title).toBe('Plan a launch party');

    const edited = await send({ conversationId: id, editMessageId: one.userMessageId, message: 'Plan a quiet dinner' });
    expect(edited.status).toBe(200);
    const data = (await edited.json()).data;
    expect(data.message.content).toBe('Answer three.');
    expect(data.userMessageId).not.toBe(one.userMessageId);
    expect(userTexts(lastRequest().messages)).toEqual(['Plan a quiet dinner']);

    const d = await detail(id);
    expect(d.messages.map((m: { content: string }) => m.content)).toEqual(['Plan a quiet dinner', 'Answer three.']);
    expect(d.messages[0].id).toBe(data.userMessageId);
    expect(d.title).toBe('Plan a quiet dinner');
    const [item] = await listed();
    // system context + user + answer
    expect(item).toMatchObject({ id, title: 'Plan a quiet dinner', messageCount: 3, lastMessagePreview: 'Answer three.' });
    expect(await listed('?q=balloons')).toEqual([]);
    // Agents' activation ran once: the conversation kept its server context.
    expect(lastRequest().messages![0].role).toBe('system');
  });

  it('keeps a renamed title, and edits a later message leaving what came before', async () => {
    h = await startHarness();
    h.model.setScript(() => reply.text('ok'));
    const one = (await (await send({ message: 'first' })).json()).data;
    const id = one.conversationId;
    const two = (await (await send({ conversationId: id, message: 'second' })).json()).data;
    await send({ conversationId: id, message: 'third' });
    await PATCH(new Request('http://localhost/x', { method: 'PATCH', body: JSON.stringify({ title: 'My title' }) }), params({ id }));

    await send({ conversationId: id, editMessageId: two.userMessageId, message: 'second, better' });
    expect((await detail(id)).messages.map((m: { content: string }) => m.content)).toEqual(['first', 'ok', 'second, better', 'ok']);
    await send({ conversationId: id, editMessageId: one.userMessageId, message: 'new first' });
    const d = await detail(id);
    expect(d.messages.map((m: { content: string }) => m.content)).toEqual(['new first', 'ok']);
    expect(d.title).toBe('My title');
  });

  it('refuses an id that is not a user message of this conversation, changing nothing; 409 while a turn runs', async () => {
    h = await startHarness();
    h.model.setScript(() => reply.text('ok'));
    const a = (await (await send({ message: 'in a' })).json()).data;
    const b = (await (await send({ message: 'in b' })).json()).data;
    const assistantId = (await detail(a.conversationId)).messages[1].id;
    const requests = h.model.chatRequests().length;
    for (const bad of [assistantId, b.userMessageId, 'msg_nope']) {
      const res = await send({ conversationId: a.conversationId, editMessageId: bad, message: 'new' });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body).toMatchObject({ code: 'E_VALIDATION', field: 'editMessageId' });
    }
    expect(await (await send({ editMessageId: a.userMessageId, message: 'new' })).json()).toMatchObject({ code: 'E_VALIDATION', field: 'conversationId' });
    expect(await (await send({ conversationId: a.conversationId, editMessageId: a.userMessageId })).json()).toMatchObject({ code: 'E_VALIDATION', field: 'message' });
    expect(h.model.chatRequests()).toHaveLength(requests);
    expect(await detail(a.conversationId)).toMatchObject({ status: 'idle', messages: [{ content: 'in a' }, { content: 'ok' }] });

    h.model.setScript([reply.text('slow', { latencyMs: 500 })]);
    const running = send({ conversationId: a.conversationId, message: 'more' });
    await h.model.waitFor(() => h.model.chatRequests().length > requests, 5000);
    const busy = await send({ conversationId: a.conversationId, editMessageId: a.userMessageId, message: 'new' });
    expect(busy.status).toBe(409);
    expect((await running).status).toBe(200);
    expect((await detail(a.conversationId)).messages.map((m: { content: string }) => m.content)).toEqual(['in a', 'ok', 'more', 'slow']);
  });
});

describe('how a turn ended, after a reload', () => {
  it('Stop: stopped as soon as the stream ends, with exactly the text the client received', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    h.model.setScript([reply.text('word '.repeat(600), { tokenDelayMs: 2, chunkSize: 3 })]);
    const controller = new AbortController();
    const res = await send({ message: 'Tell me a long story', stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (parseFrames(received).filter((f) => f.type === 'text-delta').length < 8) received += decoder.decode((await reader.read()).value);
    // Stop while the server is gathering the next tokens for its next write, as a browser reading
    // the whole time would: those tokens never reach the screen.
    const next = reader.read();
    await sleep(8);
    controller.abort();
    await reader.cancel();
    const last = await next;
    if (last.value) received += decoder.decode(last.value);

    const frames = parseFrames(received);
    const id = frames.find((f) => f.type === 'data-conversation')!.data.conversationId;
    const shown = frames.filter((f) => f.type === 'text-delta').map((f) => f.delta).join('');
    expect(shown.length).toBeGreaterThan(0);
    // No wait: the turn has ended by the time the stream is gone.
    const [item] = await listed();
    expect(item).toMatchObject({ id, status: 'stopped', lastTurn: { status: 'stopped' } });
    const d = await detail(id);
    expect(d.status).toBe('stopped');
    expect(d.lastTurn).toEqual({ status: 'stopped', at: expect.any(String) });
    expect(d.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(d.messages[1].content).toBe(shown);

    // Retry replaces the stopped answer.
    h.model.setScript([reply.text('A short story.')]);
    await send({ conversationId: id, regenerate: true });
    expect((await detail(id)).messages.map((m: { content: string }) => m.content)).toEqual(['Tell me a long story', 'A short story.']);
  });

  it('Stop before any text: no empty answer is stored', async () => {
    h = await startHarness();
    h.model.setScript([reply.hang()]);
    const controller = new AbortController();
    const res = await send({ message: 'Think', stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const id = /"conversationId":"([^"]+)"/.exec(first)![1];
    await h.model.waitFor(() => h.model.chatRequests().length === 1, 5000);
    controller.abort();
    await reader.cancel();
    const d = await detail(id);
    expect(d).toMatchObject({ status: 'stopped', lastTurn: { status: 'stopped' } });
    expect(d.messages.map((m: { role: string }) => m.role)).toEqual(['user']);
  });

  it('a client that disconnects without cancelling the body still ends the turn as stopped', async () => {
    h = await startHarness();
    h.model.setScript([reply.text('word '.repeat(400), { tokenDelayMs: 5, chunkSize: 5 })]);
    const controller = new AbortController();
    const res = await send({ message: 'Go', stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('text-delta')) seen += new TextDecoder().decode((await reader.read()).value);
    const id = /"conversationId":"([^"]+)"/.exec(seen)![1];
    // The request's signal fires; nobody reads or cancels the body any more.
    controller.abort();
    await h.model.waitFor(() => h.model.chatRequests()[0]?.clientClosed === true, 2000);
    for (let i = 0; i < 50 && (await detail(id)).status === 'running'; i++) await sleep(20);
    expect((await detail(id)).status).toBe('stopped');
  });

  it('a server shutting down leaves the turn interrupted, and the stream still ends', async () => {
    h = await startHarness();
    h.model.setScript([reply.hang()]);
    const res = await send({ message: 'Think hard', stream: true });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    await h.model.waitFor(() => h.model.chatRequests().length === 1, 5000);
    expect(abortRunningTurns()).toBeGreaterThan(0);
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const frames = parseFrames(text);
    expect(frames.find((f) => f.type === 'data-stop')).toMatchObject({ data: { stopReason: 'aborted' } });
    const id = frames.find((f) => f.type === 'data-conversation')!.data.conversationId;
    expect(await detail(id)).toMatchObject({ status: 'interrupted', lastTurn: { status: 'interrupted' } });
  });

  it('a failure keeps what was shown, and its code and message', async () => {
    h = await startHarness();
    h.model.setScript([reply.text('Partial answer before the error', { chunkSize: 4, errorAfterChunks: 3 })]);
    const chunks = await readSse(await send({ message: 'hi', stream: true }));
    const frames = chunks.filter((c): c is Record<string, any> => c !== '[DONE]');
    const shown = frames.filter((f) => f.type === 'text-delta').map((f) => f.delta).join('');
    const error = frames.find((f) => f.type === 'error')!;
    const code = frames.find((f) => f.type === 'data-error')!.data.code;
    const d = await detail(frames[1]!.data.conversationId);
    expect(d.status).toBe('failed');
    expect(d.lastTurn).toMatchObject({ status: 'failed', error: { code, message: error.errorText } });
    expect(d.messages[1].content).toBe(shown);
  });
});

describe('error texts', () => {
  it('are the plain message in the stream and in JSON, with the code beside it', async () => {
    h = await startHarness();
    h.model.setScript(() => reply.error(404));
    const chunks = (await readSse(await send({ message: 'hi', stream: true }))).filter((c): c is Record<string, any> => c !== '[DONE]');
    const i = chunks.findIndex((c) => c.type === 'error');
    expect(chunks[i - 1]).toEqual({ type: 'data-error', data: { code: 'E_LLM_UPSTREAM', message: chunks[i]!.errorText }, transient: true });
    // Neither "E_LLM_UPSTREAM: …" in front nor "… (E_LLM_UPSTREAM)" at the end: the code is beside it.
    const codeInText = /^E_[A-Z_]+\b|\(E_[A-Z_]+\)\s*$/;
    expect(chunks[i]!.errorText).not.toMatch(codeInText);

    const json = await (await send({ message: 'hi' })).json();
    expect(json).toMatchObject({ success: false, code: 'E_LLM_UPSTREAM', error: chunks[i]!.errorText });
    expect(json.error).not.toMatch(codeInText);
  });

  it('names the stored user message in the stream', async () => {
    h = await startHarness();
    h.model.setScript([reply.text('ok')]);
    const chunks = (await readSse(await send({ message: 'hi', stream: true }))).filter((c): c is Record<string, any> => c !== '[DONE]');
    const named = chunks.find((c) => c.type === 'data-user-message')!;
    const d = await detail(chunks[1]!.data.conversationId);
    expect(named.data.id).toBe(d.messages[0].id);
  });
});

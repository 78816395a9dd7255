import fs from 'node:fs/promises';
import path from 'node:path';
import { POST as chat } from '@/app/api/chat/route';
import { GET as health } from '@/app/api/health/route';
import { GET as agents } from '@/app/api/agents/route';
import { GET as bundles } from '@/app/api/bundles/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import { GET as listFiles } from '@/app/api/conversations/[id]/files/route';
import { GET as getFile } from '@/app/api/conversations/[id]/files/[...path]/route';
import { GET as getAudit } from '@/app/api/conversations/[id]/audit/route';
import { reply } from '../scripted-model';
import { get, jsonRequest, params, readSse, startHarness, type Harness } from './harness';

let h: Harness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

const send = (body: Record<string, unknown>, init?: RequestInit) => chat(jsonRequest('/api/chat', body, init));

describe('GET endpoints', () => {
  it('reports health with the model configuration', async () => {
    const body = await (await health(get('/api/health'))).json();
    expect(body).toEqual({
      success: true,
      data: {
        status: 'ok',
        llm: { configured: true, model: 'scripted-test' },
        capabilities: { scripts: expect.any(Boolean), sandbox: expect.any(Boolean), setupNetwork: expect.any(Boolean) },
        store: { kind: 'memory', ok: true, migrations: { applied: 0, latest: 0, current: true } },
      },
    });
  });

  it('lists entry-point agents with their commands, never helpers', async () => {
    const body = await (await agents(get('/api/agents'))).json();
    expect(body.success).toBe(true);
    const ids = body.data.map((a: { id: string }) => a.id);
    expect(ids).toEqual(expect.arrayContaining(['product-lead', 'story-writer', 'scribe']));
    expect(ids).not.toContain('research-helper');
    const lead = body.data.find((a: { id: string }) => a.id === 'product-lead');
    expect(lead).toMatchObject({ name: expect.any(String), title: expect.any(String), bundleName: expect.any(String) });
    expect(lead.commands.map((c: { cmd: string }) => c.cmd)).toContain('*plan');
    expect(JSON.stringify(body)).not.toContain(h.tmp);
    // Greetings come with the agent's config variables resolved.
    const theo = body.data.find((a: { id: string }) => a.id === 'story-writer');
    expect(theo.greeting).toContain('Hello Friend!');
    expect(theo.greeting).not.toContain('{user_name}');
  });

  it('lists bundles for builders without absolute paths', async () => {
    const body = await (await bundles(get('/api/bundles'))).json();
    expect(body.success).toBe(true);
    expect(body.data.length).toBeGreaterThanOrEqual(2);
    for (const b of body.data) expect(b.valid).toBe(true);
    expect(JSON.stringify(body)).not.toContain(path.resolve(__dirname, '../..'));
  });
});

describe('POST /api/chat (JSON)', () => {
  it('answers a plain message in one model call and keeps the conversation', async () => {
    h.model.setScript([reply.text('Hello! How can I help?')]);
    const res = await send({ agentId: 'product-lead', message: 'hi there' });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.success).toBe(true);
    expect(body.data).toMatchObject({
      conversationId: expect.any(String),
      message: { id: expect.any(String), role: 'assistant', content: 'Hello! How can I help?', timestamp: expect.any(String), functionCalls: [] },
      usage: { promptTokens: expect.any(Number), completionTokens: expect.any(Number) },
      iterations: 1,
      stopReason: 'stop',
    });

    // Critical actions ran before the first model call: the config was read through the sandbox.
    const [first] = h.model.chatRequests();
    const system = first.body!.messages![0];
    expect(system.role).toBe('system');
    expect(String(system.content)).toContain('{bundle-root}/config.yaml');
    expect(String(system.content)).not.toContain(h.config.bundlesRoot);
    expect(first.body!.tools!.map((t) => t.function!.name)).toEqual(
      expect.arrayContaining(['read_file', 'list_files', 'search_files', 'save_output', 'edit_file', 'apply_patch', 'execute_workflow']),
    );

    // The second turn sends the whole history, with the same system prompt prefix.
    h.model.setScript([reply.text('Second answer')]);
    const res2 = await send({ agentId: 'product-lead', message: 'and again', conversationId: body.data.conversationId });
    expect((await res2.json()).data.message.content).toBe('Second answer');
    const second = h.model.chatRequests()[1];
    expect(second.body!.messages![0]).toEqual(system);
    expect(second.body!.messages!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
  });

  it('runs a workflow command before the first model call: one round trip', async () => {
    h.model.setScript([reply.text('Welcome to the product brief. What is the product idea?')]);
    const res = await send({ agentId: 'product-lead', message: '*plan' });
    const body = await res.json();
    expect(res.status).toBe(200);
    expect(body.data.iterations).toBe(1);
    expect(h.model.chatRequests()).toHaveLength(1);

    const [call] = body.data.message.functionCalls;
    expect(call.name).toBe('execute_workflow');
    expect(call.arguments).toEqual({ workflow_path: expect.stringContaining('{bundle-root}/workflows/product-brief/workflow.yaml') });
    expect(call.result.ok).toBe(true);
    expect(call.result.instructions.path).toBe('{bundle-root}/workflows/product-brief/instructions.md');
    expect(call.result.instructions.content.length).toBeGreaterThan(50);
    expect(call.result.template.path).toBe('{bundle-root}/workflows/product-brief/template.md');
    expect(call.result.engine.path).toMatch(/^\{core-root\}\/tasks\/workflow\.(md|xml)$/);

    // The model saw the call and its result in the history of its very first request.
    const messages = h.model.chatRequests()[0].body!.messages!;
    const roles = messages.map((m) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(messages[2].tool_calls![0].function!.name).toBe('execute_workflow');
    expect(JSON.stringify(messages)).not.toContain(h.config.bundlesRoot);
    expect(JSON.stringify(messages)).not.toContain(h.config.outputPath);
  });

  it('runs tool calls the model asks for and keeps what it writes', async () => {
    const brief = `# Brief\n\n${'A sentence of the brief. '.repeat(40)}\n`;
    h.model.setScript([
      reply.toolCalls([
        { name: 'read_file', arguments: { file_path: '{bundle-root}/config.yaml' } },
        { name: 'list_files', arguments: { path: '{bundle-root}/workflows' } },
      ]),
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/brief.md', content: brief } }]),
      reply.text('Saved your brief.'),
    ]);
    const res = await send({ agentId: 'product-lead', message: 'write a brief' });
    const body = await res.json();
    expect(body.data.iterations).toBe(3);
    expect(body.data.message.functionCalls.map((c: { name: string }) => c.name)).toEqual(['read_file', 'list_files', 'save_output']);
    for (const c of body.data.message.functionCalls) expect(c.result.ok).toBe(true);
    expect(body.data.message.functionCalls[2].result.path).toBe('{output_folder}/brief.md');

    const id = body.data.conversationId;
    const onDisk = await fs.readFile(path.join(h.config.outputPath, id, 'brief.md'), 'utf8');
    expect(onDisk).toBe(brief);

    const files = await (await listFiles(get(`/api/conversations/${id}/files`), params({ id }))).json();
    expect(files.data.files).toEqual([expect.objectContaining({ path: 'brief.md', type: 'file', size: onDisk.length })]);
    const file = await getFile(get(`/api/conversations/${id}/files/brief.md?download=1`), params({ id, path: ['brief.md'] }));
    expect(file.headers.get('content-type')).toContain('text/markdown');
    expect(file.headers.get('content-disposition')).toContain('attachment');
    expect(await file.text()).toBe(onDisk);

    const escape = await getFile(get(`/api/conversations/${id}/files/..`), params({ id, path: ['..', 'other', 'x.md'] }));
    expect(escape.status).toBeGreaterThanOrEqual(400);

    // Every tool call (the critical read included) is in the audit log.
    const audit = await (await getAudit(get(`/api/conversations/${id}/audit`), params({ id }))).json();
    const names = audit.data.map((e: { toolName: string }) => e.toolName);
    // Parallel calls are logged as they complete, in any order.
    expect([...names].sort()).toEqual(['list_files', 'read_file', 'read_file', 'save_output']);
    // The audit log keeps sizes, hashes and previews, never whole contents.
    expect(JSON.stringify(audit)).not.toContain(JSON.stringify(brief).slice(1, -1));

    const detail = await (await getConversation(get(`/api/conversations/${id}`), params({ id }))).json();
    const assistant = detail.data.messages.find((m: { role: string }) => m.role === 'assistant');
    expect(assistant.functionCalls).toHaveLength(3);
    expect(assistant.content).toBe('Saved your brief.');
  });

  it('sends bad arguments and unknown tools back to the model as tool errors', async () => {
    h.model.setScript([
      reply.toolCalls([
        { name: 'read_file', arguments: '{"file_path": ' },
        { name: 'fs.read', arguments: { path: 'x' } },
        { name: 'read_file', arguments: { file_path: '../../../etc/passwd' } },
      ]),
      reply.text('Sorry, let me fix that.'),
    ]);
    const body = await (await send({ agentId: 'product-lead', message: 'go' })).json();
    const codes = body.data.message.functionCalls.map((c: { result: { error: { code: string } } }) => c.result.error.code);
    expect(codes).toEqual(['E_INVALID_ARGS', 'E_UNKNOWN_TOOL', 'E_SANDBOX_VIOLATION']);
    const toolMessages = h.model.chatRequests()[1].body!.messages!.filter((m) => m.role === 'tool');
    expect(toolMessages).toHaveLength(3);
    expect(JSON.stringify(toolMessages)).not.toContain(h.tmp);
  });

  it('ends a turn at MAX_ITERATIONS with stopReason max_iterations', async () => {
    await h.close();
    h = await startHarness({ MAX_ITERATIONS: '3' });
    h.model.setScript(() => reply.toolCalls([{ name: 'list_files', arguments: { path: '{bundle-root}' } }]));
    const body = await (await send({ agentId: 'product-lead', message: 'loop' })).json();
    expect(body.success).toBe(true);
    expect(body.data.stopReason).toBe('max_iterations');
    expect(body.data.iterations).toBe(3);
    expect(h.model.chatRequests()).toHaveLength(3);

    // The conversation can go on afterwards.
    h.model.setScript([reply.text('Done now.')]);
    const next = await (await send({ agentId: 'product-lead', message: 'continue', conversationId: body.data.conversationId })).json();
    expect(next.data.stopReason).toBe('stop');
  });
});

describe('POST /api/chat errors', () => {
  it.each([
    [{}, 'agentId'],
    [{ agentId: 'product-lead' }, 'message'],
    [{ agentId: 'product-lead', message: '' }, 'message'],
    [{ agentId: 'product-lead', message: '  \n ' }, 'message'],
    [{ agentId: 'product-lead', message: 'x'.repeat(20_001) }, 'message'],
    [{ agentId: 'product-lead', message: 'hi', stream: 'yes' }, 'stream'],
  ])('400 E_VALIDATION for %#', async (payload, field) => {
    const res = await send(payload);
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body).toMatchObject({ success: false, code: 'E_VALIDATION' });
    expect(body.error).toContain(field);
  });

  it('400 for a body that is not JSON', async () => {
    const res = await chat(jsonRequest('/api/chat', '{nope'));
    expect(res.status).toBe(400);
  });

  it('413 for an oversized body', async () => {
    const res = await chat(jsonRequest('/api/chat', JSON.stringify({ agentId: 'a', message: 'x'.repeat(400_000) })));
    expect(res.status).toBe(413);
    expect((await res.json()).code).toBe('E_TOO_LARGE');
  });

  it('413 for an oversized body sent without a length, before reading all of it', async () => {
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        pulled++;
        if (pulled > 10_000) ctrl.close();
        else ctrl.enqueue(new Uint8Array(64 * 1024).fill(120));
      },
    });
    const res = await chat(new Request('http://localhost/api/chat', { method: 'POST', body, duplex: 'half' } as RequestInit));
    expect(res.status).toBe(413);
    expect(pulled).toBeLessThan(20);
  });

  it('404 for an unknown agent or conversation, never a silent new conversation', async () => {
    const a = await send({ agentId: 'nobody', message: 'hi' });
    expect(a.status).toBe(404);
    expect((await a.json()).code).toBe('E_AGENT_NOT_FOUND');
    const c = await send({ agentId: 'product-lead', message: 'hi', conversationId: 'c7b9e0a4-1111-4111-8111-111111111111' });
    expect(c.status).toBe(404);
    expect((await c.json()).code).toBe('E_CONVERSATION_NOT_FOUND');
    const bad = await send({ agentId: 'product-lead', message: 'hi', conversationId: '../../etc' });
    expect(bad.status).toBe(404);
    expect(h.model.chatRequests()).toHaveLength(0);
  });

  it('503 with what to set when no model is configured', async () => {
    await h.close();
    h = await startHarness({ OPENAI_BASE_URL: '', OPENAI_API_KEY: '' });
    const res = await send({ agentId: 'product-lead', message: 'hi' });
    expect(res.status).toBe(503);
    const body = await res.json();
    expect(body.code).toBe('E_LLM_NOT_CONFIGURED');
    expect(body.error).toMatch(/OPENAI_API_KEY|OPENAI_BASE_URL/);
    expect((await (await health(get('/api/health'))).json()).data.llm.configured).toBe(false);
  });

  it.each([
    [401, /key/i],
    [404, /model/i],
    [429, /rate|quota/i],
  ])('502 E_LLM_UPSTREAM says which for upstream %i', async (status, pattern) => {
    h.model.setScript(() => reply.error(status));
    const res = await send({ agentId: 'product-lead', message: 'hi' });
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body.code).toBe('E_LLM_UPSTREAM');
    expect(body.error).toMatch(pattern);
  });

  it('409 when a turn is already running on the conversation', async () => {
    h.model.setScript([reply.text('first')]);
    const first = await (await send({ agentId: 'product-lead', message: 'hi' })).json();
    const id = first.data.conversationId;
    h.model.setScript([reply.text('slow answer', { latencyMs: 600 })]);
    const running = send({ agentId: 'product-lead', message: 'one', conversationId: id });
    await h.model.waitFor(() => h.model.chatRequests().length >= 2, 5000).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    const busy = await send({ agentId: 'product-lead', message: 'two', conversationId: id });
    expect(busy.status).toBe(409);
    expect((await busy.json()).code).toBe('E_CONVERSATION_BUSY');
    expect((await running).status).toBe(200);
  });
});

describe('POST /api/chat (stream)', () => {
  it('streams the UI message stream protocol with tool activity', async () => {
    h.model.setScript([
      reply.toolCalls([{ name: 'read_file', arguments: { file_path: '{bundle-root}/config.yaml' } }]),
      reply.text('All loaded, here is the answer.'),
    ]);
    const res = await send({ agentId: 'product-lead', message: 'hi', stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    const chunks = await readSse(res);
    const types = chunks.map((c) => (c === '[DONE]' ? c : c.type));
    expect(types[0]).toBe('start');
    expect(types[1]).toBe('data-conversation');
    expect(types.at(-1)).toBe('[DONE]');
    expect(types).toContain('tool-input-available');
    expect(types).toContain('tool-output-available');
    expect(types.filter((t) => t === 'start-step')).toHaveLength(2);
    expect(types.filter((t) => t === 'finish-step')).toHaveLength(2);
    expect(types.indexOf('tool-output-available')).toBeLessThan(types.indexOf('text-start'));
    const text = chunks.filter((c): c is Record<string, any> => c !== '[DONE]' && c.type === 'text-delta').map((c) => c.delta).join('');
    expect(text).toBe('All loaded, here is the answer.');
    const stop = chunks.find((c) => c !== '[DONE]' && c.type === 'data-stop') as Record<string, any>;
    expect(stop.data.stopReason).toBe('stop');
    expect(types.at(-2)).toBe('finish');
    const conv = chunks[1] as Record<string, any>;
    expect(conv.data.conversationId).toEqual(expect.any(String));
  });

  it('honours Accept: text/event-stream', async () => {
    h.model.setScript([reply.text('streamed')]);
    const res = await chat(jsonRequest('/api/chat', { agentId: 'product-lead', message: 'hi' }, { headers: { accept: 'text/event-stream' } }));
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    await res.text();
  });

  it('reports upstream errors as an error chunk, then [DONE]', async () => {
    h.model.setScript(() => reply.error(500));
    const chunks = await readSse(await send({ agentId: 'product-lead', message: 'hi', stream: true }));
    const error = chunks.find((c) => c !== '[DONE]' && c.type === 'error') as Record<string, any>;
    expect(error.errorText).toMatch(/failed \(500\)/);
    expect(chunks.find((c) => c !== '[DONE]' && c.type === 'data-error')).toMatchObject({ data: { code: 'E_LLM_UPSTREAM', message: error.errorText } });
    expect(chunks.at(-1)).toBe('[DONE]');
  });

  it('stops the turn and the upstream request when the client goes away', async () => {
    h.model.setScript([reply.text('word '.repeat(400), { tokenDelayMs: 20, chunkSize: 5 })]);
    const controller = new AbortController();
    const res = await send({ agentId: 'product-lead', message: 'hi', stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('text-delta')) seen += new TextDecoder().decode((await reader.read()).value);
    const id = /"conversationId":"([^"]+)"/.exec(seen)![1];
    const started = Date.now();
    controller.abort();
    await reader.cancel();
    await h.model.waitFor(() => h.model.chatRequests()[0]?.clientClosed === true, 2000);
    expect(Date.now() - started).toBeLessThan(1000);
    // The lock is released: the conversation goes on.
    await new Promise((r) => setTimeout(r, 50));
    h.model.setScript([reply.text('back again')]);
    const next = await send({ agentId: 'product-lead', message: 'again', conversationId: id });
    expect(next.status).toBe(200);
  });
});

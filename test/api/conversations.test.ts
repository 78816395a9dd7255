import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as chat } from '@/app/api/chat/route';
import { GET as list } from '@/app/api/conversations/route';
import { GET as getOne, PATCH, DELETE } from '@/app/api/conversations/[id]/route';
import { GET as getAudit } from '@/app/api/conversations/[id]/audit/route';
import { GET as exportConversation } from '@/app/api/conversations/[id]/export/route';
import { GET as listFiles } from '@/app/api/conversations/[id]/files/route';
import { GET as getFile } from '@/app/api/conversations/[id]/files/[...path]/route';
import { NOTE_CONTENT, reply } from '../scripted-model';
import { REPO, get, jsonRequest, params, startHarness, type Harness } from './harness';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const send = (body: Record<string, unknown>) => chat(jsonRequest('/api/chat', body));

it('lists, renames and deletes conversations with their outputs and audit log', async () => {
  h = await startHarness({}, { store: 'sqlite' });
  h.model.setScript(() => reply.text('ok'));
  const ids: string[] = [];
  for (const message of ['first idea', 'second idea', '*plan']) {
    ids.push((await (await send({ agentId: 'product-lead', message })).json()).data.conversationId);
  }
  const page1 = await (await list(get('/api/conversations?limit=2'))).json();
  expect(page1.data.items.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[1]]);
  // Named by the workflow and the document this run writes (dated, so two runs read apart).
  expect(page1.data.items[0].title).toMatch(/^Product brief · product-brief-\d{4}-\d{2}-\d{2}\.md$/);
  expect(page1.data.items[1]).toMatchObject({ title: 'second idea', agentId: 'product-lead', messageCount: expect.any(Number), lastMessagePreview: 'ok' });
  const page2 = await (await list(get(`/api/conversations?limit=2&cursor=${page1.data.nextCursor}`))).json();
  expect(page2.data.items.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
  expect(page2.data.nextCursor).toBeUndefined();
  expect((await list(get('/api/conversations?limit=0'))).status).toBe(400);

  const renamed = await PATCH(new Request('http://localhost/x', { method: 'PATCH', body: JSON.stringify({ title: 'Budget app' }) }), params({ id: ids[0] }));
  expect((await renamed.json()).data.title).toBe('Budget app');

  const detail = await (await getOne(get(`/api/conversations/${ids[0]}`), params({ id: ids[0] }))).json();
  expect(detail.data.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);

  const out = path.join(h.config.outputPath, ids[0]);
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'x.md'), 'x');
  const del = await DELETE(new Request('http://localhost/x', { method: 'DELETE' }), params({ id: ids[0] }));
  expect(del.status).toBe(200);
  await expect(fs.stat(out)).rejects.toThrow();
  expect((await getOne(get('/x'), params({ id: ids[0] }))).status).toBe(404);
  expect((await getAudit(get('/x'), params({ id: ids[0] }))).status).toBe(404);
  expect((await getOne(get('/x'), params({ id: '../../etc' }))).status).toBe(404);
});

it('refuses to start an agent whose critical file is missing, naming the file', async () => {
  const bundles = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-bundles-')), 'bundles');
  await fs.cp(path.join(REPO, 'bmad/custom/bundles'), bundles, { recursive: true });
  await fs.rm(path.join(bundles, 'product-studio/config.yaml'));
  h = await startHarness({ BUNDLES_ROOT: bundles });
  const res = await send({ agentId: 'product-lead', message: 'hi' });
  expect(res.status).toBe(422);
  const body = await res.json();
  expect(body.code).toBe('E_CRITICAL_ACTION');
  expect(body.error).toContain('{bundle-root}/config.yaml');
  expect(body.error).not.toContain(bundles);
  expect(h.model.chatRequests()).toHaveLength(0);
  expect((await (await list(get('/api/conversations'))).json()).data.items).toHaveLength(0);
  await fs.rm(path.dirname(bundles), { recursive: true, force: true });
});

it('keeps a conversation with its agent', async () => {
  h = await startHarness();
  h.model.setScript(() => reply.text('ok'));
  const id = (await (await send({ agentId: 'product-lead', message: 'hi' })).json()).data.conversationId;
  const res = await send({ agentId: 'scribe', message: 'hi', conversationId: id });
  expect(res.status).toBe(400);
  expect((await res.json()).error).toContain('product-lead');
});

it("loads the bundle's config when an agent asks for an IDE install's {project-root}/bmad/.../config.yaml", async () => {
  const bundles = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-bundles-')), 'bundles');
  await fs.cp(path.join(REPO, 'bmad/custom/bundles'), bundles, { recursive: true });
  const agentFile = path.join(bundles, 'product-studio/agents/product-lead.md');
  const text = await fs.readFile(agentFile, 'utf8');
  await fs.writeFile(agentFile, text.replace('Load into memory {bundle-root}/config.yaml', 'Load into memory {project-root}/bmad/bmm/config.yaml'));
  h = await startHarness({ BUNDLES_ROOT: bundles });
  h.model.setScript([reply.text('hello')]);
  const res = await send({ agentId: 'product-lead', message: 'hi' });
  expect(res.status).toBe(200);
  const system = String(h.model.chatRequests()[0].body!.messages![0].content);
  expect(system).toContain('{project-root}/bmad/bmm/config.yaml is not available here');
  expect(system).toContain('{user_name} = Friend');
  await fs.rm(path.dirname(bundles), { recursive: true, force: true });
});

describe('GET /api/conversations?q=', () => {
  it('searches titles and message text, with the agent filter and paging', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    h.model.setScript(({ body }) => {
      const last = String(body.messages?.filter((m) => m.role === 'user').at(-1)?.content ?? '');
      return reply.text(last.includes('garden') ? 'Plant tomatoes and basil.' : 'Noted.');
    });
    const id = async (agentId: string, message: string) => (await (await send({ agentId, message })).json()).data.conversationId as string;
    const garden = await id('product-lead', 'A garden planner');
    const budget = await id('product-lead', 'A budget tracker');
    const notes = await id('scribe', 'Notes about the garden meeting');
    await PATCH(new Request('http://localhost/x', { method: 'PATCH', body: JSON.stringify({ title: 'Zebra finance' }) }), params({ id: budget }));
    const q = async (query: string) => {
      const res = await list(get(`/api/conversations?${query}`));
      const body = await res.json();
      return { status: res.status, ids: body.data?.items.map((c: { id: string }) => c.id), body };
    };

    expect((await q('q=garden')).ids).toEqual([notes, garden]);
    expect((await q('q=TOMATO')).ids).toEqual([notes, garden]);
    expect((await q('q=zebra')).ids).toEqual([budget]);
    expect((await q('q=garden&agentId=scribe')).ids).toEqual([notes]);
    const page1 = await q('q=garden&limit=1');
    expect(page1.ids).toEqual([notes]);
    expect((await q(`q=garden&limit=1&cursor=${page1.body.data.nextCursor}`)).ids).toEqual([garden]);
    expect((await q('q=nothing-like-this')).ids).toEqual([]);
    // An empty box lists everything.
    expect((await q('q=%20')).ids).toHaveLength(3);
    const long = await q(`q=${'x'.repeat(201)}`);
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ code: 'E_VALIDATION', field: 'q' });
  });
});

describe('GET /api/conversations/:id/export', () => {
  it('exports markdown and JSON as attachments with a safe file name', async () => {
    h = await startHarness({}, { store: 'sqlite' });
    h.model.setScript([
      reply.toolCalls([
        { name: 'read_file', arguments: { file_path: '{bundle-root}/config.yaml' } },
        { name: 'read_file', arguments: { file_path: '{bundle-root}/missing.md' } },
      ]),
      reply.text('Here is what I **found**.'),
    ]);
    const id = (await (await send({ agentId: 'product-lead', message: 'Plan "Ünïcode" / launch: v2?' })).json()).data.conversationId;

    const md = await exportConversation(get(`/api/conversations/${id}/export?format=md`), params({ id }));
    expect(md.status).toBe(200);
    expect(md.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    const disposition = md.headers.get('content-disposition')!;
    expect(disposition).toMatch(/^attachment; filename="plan-unicode-launch-v2-\d{4}-\d{2}-\d{2}\.md"; filename\*=UTF-8''plan-unicode-launch-v2-/);
    const text = await md.text();
    expect(text.split('\n')[0]).toBe('# Plan "Ünïcode" / launch: v2?');
    expect(text).toContain('- Agent: `product-lead` (bundle `product-studio`)');
    expect(text).toMatch(/## User · \d{4}-.*\n\nPlan "Ünïcode" \/ launch: v2\?/);
    expect(text).toContain('- Tool `read_file` `{"file_path":"{bundle-root}/config.yaml"}`: ok');
    expect(text).toMatch(/- Tool `read_file` `\{"file_path":"\{bundle-root\}\/missing\.md"\}`: error `ENOENT` /);
    expect(text).toContain('Here is what I **found**.');
    // Server context and tool results' content stay out.
    expect(text).not.toContain('user_name');
    expect(text.indexOf('## Assistant')).toBeGreaterThan(text.indexOf('## User'));

    const json = await exportConversation(get(`/api/conversations/${id}/export?format=json`), params({ id }));
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(json.headers.get('content-disposition')).toMatch(/filename="plan-unicode-launch-v2-\d{4}-\d{2}-\d{2}\.json"/);
    const exported = JSON.parse(await json.text());
    const detail = (await (await getOne(get(`/api/conversations/${id}`), params({ id }))).json()).data;
    expect(exported).toEqual(detail);

    expect((await exportConversation(get(`/api/conversations/${id}/export`), params({ id }))).headers.get('content-type')).toContain('markdown');
    const bad = await exportConversation(get(`/api/conversations/${id}/export?format=pdf`), params({ id }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'E_VALIDATION', field: 'format' });
    const missing = await exportConversation(get('/api/conversations/nope/export?format=md'), params({ id: 'nope' }));
    expect(missing.status).toBe(404);
    expect((await missing.json()).code).toBe('E_CONVERSATION_NOT_FOUND');
  });

  it('says how a failed last turn ended', async () => {
    h = await startHarness();
    h.model.setScript(() => reply.error(500));
    const id = (await (await send({ agentId: 'product-lead', message: 'hi' })).json()).conversationId;
    const text = await (await exportConversation(get(`/api/conversations/${id}/export`), params({ id }))).text();
    expect(text).toMatch(/- Last turn: failed \(`E_LLM_UPSTREAM`: The model endpoint .* failed \(500\)/);
  });
});

describe('the README walk-through', () => {
  it('scripted:write-file writes a note that GET /api/conversations/<id>/files/<path> serves as listed', async () => {
    h = await startHarness({ OPENAI_MODEL: 'scripted:write-file' });
    const id = (await (await send({ agentId: 'product-lead', message: 'write something' })).json()).data.conversationId;
    const files = (await (await listFiles(get(`/api/conversations/${id}/files`), params({ id }))).json()).data.files;
    expect(files.map((f: { path: string }) => f.path)).toEqual(['scripted-note.md']);
    const file = await getFile(get(`/api/conversations/${id}/files/scripted-note.md`), params({ id, path: ['scripted-note.md'] }));
    expect(file.status).toBe(200);
    expect(await file.text()).toBe(NOTE_CONTENT);
  });
});

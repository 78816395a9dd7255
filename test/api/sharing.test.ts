import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { POST as authPost } from '@/app/api/auth/[...all]/route';
import { POST as chat } from '@/app/api/chat/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { GET as getConversation, PATCH as patchConversation, DELETE as deleteConversation } from '@/app/api/conversations/[id]/route';
import { POST as stopConversation } from '@/app/api/conversations/[id]/stop/route';
import { POST as copyConversation } from '@/app/api/conversations/[id]/copy/route';
import { GET as exportConversation } from '@/app/api/conversations/[id]/export/route';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { MCP_SERVER_TOOLS } from '@/app/api/mcp/tools';
import type { Caller } from '@/lib/core/access';
import type { ChatMessageView, ConversationDetail, ConversationSummaryView } from '@/types/api';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, type Harness } from './harness';

/**
 * Read-only sharing and authors, with accounts on: only a conversation's owner writes in it; a
 * reader (an admin, a project member once it is shared) is told so with a 403 and may continue
 * in a copy of their own; one who may not read it gets 404 for everything. Every user message
 * names who wrote it: the person behind a session, a token, a run.
 */
type Who = { cookie?: string; token?: string };

function req(method: string, url: string, who: Who, body?: unknown): Request {
  const headers: Record<string, string> = {};
  if (who.cookie) headers.cookie = who.cookie;
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Request(`http://localhost${url}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
}

const json = async (res: Response) => ({ status: res.status, body: await res.json() });

async function signIn(email: string, password: string): Promise<string> {
  const res = await authPost(req('POST', '/api/auth/sign-in/email', {}, { email, password }));
  expect(res.status).toBe(200);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');
}

let h: Harness;
let projectsRoot: string;
const people: Record<string, { id: string; session: Who; token: Who }> = {};
let adaConversation: string;

const read = async (id: string, who: Who) => json(await getConversation(req('GET', `/api/conversations/${id}`, who), params({ id })));
const detail = async (id: string, who: Who) => {
  const res = await read(id, who);
  expect(res.status).toBe(200);
  return res.body.data as ConversationDetail;
};
const send = (who: Who, body: Record<string, unknown>) => chat(req('POST', '/api/chat', who, { projectId: 'shop', agentId: 'pm', stream: false, ...body }));
const users = (d: ConversationDetail) => d.messages.filter((m) => m.role === 'user');
const authorsOf = (d: ConversationDetail) => users(d).map((m: ChatMessageView) => m.author?.name ?? null);

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-sharing-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const all = [['admin', admin.id]] as Array<[string, string]>;
  for (const [name, role] of [['ada', 'editor'], ['bob', 'editor'], ['carol', 'viewer']] as const) {
    const person = await accounts.createPerson({ email: `${name}@example.com`, name: name[0]!.toUpperCase() + name.slice(1), password: `${name}-password-1`, role: 'member' });
    await accounts.setMember('shop', person.id, role);
    all.push([name, person.id]);
  }
  for (const [name, id] of all) {
    people[name] = { id, session: { cookie: await signIn(`${name}@example.com`, `${name}-password-1`) }, token: { token: (await accounts.createToken(id, { name: 'ci' })).token } };
  }
}, 240_000);

afterAll(async () => {
  await h?.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

describe('a conversation is written by its owner and read by others', () => {
  it('names the author of each user message: a session, a token (its owner), the MCP chat tool', async () => {
    const { ada } = people;
    h.model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/notes.md', content: '# Notes\n' } }]),
      reply.text('Saved your notes.'),
    ]);
    const first = await json(await send(ada!.session, { message: 'write notes' }));
    expect(first.status).toBe(200);
    adaConversation = first.body.data.conversationId;
    h.model.setScript([reply.text('Again.')]);
    expect((await send(ada!.token, { message: 'from the script', conversationId: adaConversation })).status).toBe(200);
    const mcpChat = MCP_SERVER_TOOLS.find((t) => t.name === 'chat')!;
    const viaToken: Caller = { kind: 'token', id: ada!.id, name: 'Ada', role: 'member', tokenId: 't' };
    h.model.setScript([reply.text('Over MCP.')]);
    await mcpChat.run({ projectId: 'shop', agentId: 'pm', message: 'over mcp', conversationId: adaConversation }, { caller: viaToken, signal: new AbortController().signal });

    const mine = await detail(adaConversation, ada!.session);
    expect(mine).toMatchObject({ ownerId: ada!.id, owner: { id: ada!.id, name: 'Ada' }, canWrite: true });
    expect(users(mine).map((m) => m.author)).toEqual([
      { id: ada!.id, name: 'Ada' },
      { id: ada!.id, name: 'Ada' },
      { id: ada!.id, name: 'Ada' },
    ]);
    // The tool call and its result are part of the stored history the views fold in.
    expect(mine.messages.find((m) => m.role === 'assistant')?.functionCalls?.[0]?.name).toBe('save_output');
  });

  it("lets an admin read a member's private conversation but not write in it: 403 in words for every write", async () => {
    const { admin, ada } = people;
    const seen = await detail(adaConversation, admin!.session);
    expect(seen).toMatchObject({ owner: { name: 'Ada' }, canWrite: false });
    const before = seen.messages.length;
    const lastUser = users(seen).at(-1)!.id;
    const writes: Array<[string, Promise<Response>]> = [
      ['chat', send(admin!.session, { message: 'I was here', conversationId: adaConversation })],
      ['chat by token', send(admin!.token, { message: 'I was here', conversationId: adaConversation })],
      ['regenerate', send(admin!.session, { regenerate: true, conversationId: adaConversation })],
      ['edit', send(admin!.session, { message: 'edited', editMessageId: lastUser, conversationId: adaConversation })],
      ['rename', patchConversation(req('PATCH', `/api/conversations/${adaConversation}`, admin!.session, { title: 'mine' }), params({ id: adaConversation }))],
      ['model', patchConversation(req('PATCH', `/api/conversations/${adaConversation}`, admin!.session, { model: null }), params({ id: adaConversation }))],
      ['share', patchConversation(req('PATCH', `/api/conversations/${adaConversation}`, admin!.session, { shared: true }), params({ id: adaConversation }))],
      ['delete', deleteConversation(req('DELETE', `/api/conversations/${adaConversation}`, admin!.session), params({ id: adaConversation }))],
    ];
    for (const [what, pending] of writes) {
      const res = await json(await pending);
      expect([what, res.status, res.body.code]).toEqual([what, 403, 'E_FORBIDDEN']);
      expect(res.body.error).toMatch(/read this conversation but not write in it/);
    }
    // Stop is no write of words: an admin stops a runaway turn in anyone's conversation.
    expect((await stopConversation(req('POST', `/api/conversations/${adaConversation}/stop`, admin!.session), params({ id: adaConversation }))).status).toBe(200);
    const mcpChat = MCP_SERVER_TOOLS.find((t) => t.name === 'chat')!;
    const asAdmin: Caller = { kind: 'token', id: admin!.id, name: 'Admin', role: 'admin', tokenId: 't' };
    await expect(mcpChat.run({ projectId: 'shop', agentId: 'pm', message: 'sneak', conversationId: adaConversation }, { caller: asAdmin, signal: new AbortController().signal })).rejects.toMatchObject({
      code: 'E_FORBIDDEN',
    });
    // Nothing changed: not a word of the admin's, and the member's conversation still hers.
    const after = await detail(adaConversation, ada!.session);
    expect(after.messages).toHaveLength(before);
    expect(authorsOf(after)).toEqual(['Ada', 'Ada', 'Ada']);
    expect(after.shared).toBeUndefined();
    expect(after.title).toBe(seen.title);
  });

  it('answers 404 to every write of one who may not read it, shared or not for a stranger', async () => {
    const { bob } = people;
    expect((await read(adaConversation, bob!.session)).status).toBe(404);
    for (const pending of [
      send(bob!.session, { message: 'hi', conversationId: adaConversation }),
      patchConversation(req('PATCH', `/api/conversations/${adaConversation}`, bob!.session, { title: 'x' }), params({ id: adaConversation })),
      deleteConversation(req('DELETE', `/api/conversations/${adaConversation}`, bob!.session), params({ id: adaConversation })),
      stopConversation(req('POST', `/api/conversations/${adaConversation}/stop`, bob!.session), params({ id: adaConversation })),
      copyConversation(req('POST', `/api/conversations/${adaConversation}/copy`, bob!.session), params({ id: adaConversation })),
    ]) {
      const res = await json(await pending);
      expect([res.status, res.body.code]).toEqual([404, 'E_CONVERSATION_NOT_FOUND']);
    }
  });

  it("shared, the project's members read it, may not write in it, and continue in a copy of their own", async () => {
    const { ada, bob, carol } = people;
    expect((await patchConversation(req('PATCH', `/api/conversations/${adaConversation}`, ada!.session, { shared: true }), params({ id: adaConversation }))).status).toBe(200);
    const shared = await detail(adaConversation, bob!.session);
    expect(shared).toMatchObject({ shared: true, owner: { id: ada!.id, name: 'Ada' }, canWrite: false });
    const refused = await json(await send(bob!.session, { message: 'mine now', conversationId: adaConversation }));
    expect(refused).toMatchObject({ status: 403, body: { code: 'E_FORBIDDEN' } });
    expect(refused.body.error).toMatch(/continue in a copy/);
    expect((await patchConversation(req('PATCH', `/api/conversations/${adaConversation}`, bob!.session, { title: 'x' }), params({ id: adaConversation }))).status).toBe(403);

    // The list names the owner and says who may write.
    const listed = (await json(await listConversations(req('GET', '/api/conversations?projectId=shop', bob!.session)))).body.data.items as ConversationSummaryView[];
    expect(listed.find((c) => c.id === adaConversation)).toMatchObject({ owner: { id: ada!.id, name: 'Ada' }, canWrite: false });

    // A viewer reads it but cannot chat in the project, so cannot copy it either.
    expect((await read(adaConversation, carol!.session)).status).toBe(200);
    expect(await json(await copyConversation(req('POST', `/api/conversations/${adaConversation}/copy`, carol!.session), params({ id: adaConversation })))).toMatchObject({
      status: 403,
      body: { code: 'E_FORBIDDEN' },
    });

    const copied = await json(await copyConversation(req('POST', `/api/conversations/${adaConversation}/copy`, bob!.session), params({ id: adaConversation })));
    expect(copied.status).toBe(201);
    const copyId = copied.body.data.id as string;
    expect(copyId).not.toBe(adaConversation);
    const copy = await detail(copyId, bob!.session);
    expect(copy).toMatchObject({ ownerId: bob!.id, owner: { name: 'Bob' }, canWrite: true, agentId: shared.agentId, projectId: 'shop', title: shared.title });
    expect(copy.shared).toBeUndefined();
    // The same messages, authors kept: what Ada wrote stays hers.
    expect(copy.messages.map((m) => [m.role, m.content])).toEqual(shared.messages.map((m) => [m.role, m.content]));
    expect(authorsOf(copy)).toEqual(['Ada', 'Ada', 'Ada']);
    // The copy is private to Bob.
    expect((await read(copyId, ada!.session)).status).toBe(404);

    // Bob chats there; the model is sent the copied history, tool call and result included.
    h.model.reset();
    h.model.setScript([reply.text('Continuing for Bob.')]);
    expect((await send(bob!.session, { message: 'go on', conversationId: copyId })).status).toBe(200);
    const sent = h.model.chatRequests().at(-1)!.body as { messages: Array<{ role: string; content?: string | null; tool_calls?: unknown[] }> };
    expect(sent.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    expect(sent.messages.some((m) => m.role === 'assistant' && m.tool_calls?.length)).toBe(true);
    expect(sent.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(expect.arrayContaining(['write notes', 'go on']));
    const after = await detail(copyId, bob!.session);
    expect(authorsOf(after)).toEqual(['Ada', 'Ada', 'Ada', 'Bob']);
    // The original did not move.
    expect((await detail(adaConversation, ada!.session)).messages).toHaveLength(shared.messages.length);

    // Anyone who reads it may copy it (an admin too); the export names the authors as the view does.
    const adminCopy = await json(await copyConversation(req('POST', `/api/conversations/${adaConversation}/copy`, people.admin!.token), params({ id: adaConversation })));
    expect(adminCopy.status).toBe(201);
    expect((await detail(adminCopy.body.data.id, people.admin!.session)).ownerId).toBe(people.admin!.id);
    const exported = await exportConversation(req('GET', `/api/conversations/${adaConversation}/export?format=json`, bob!.session), params({ id: adaConversation }));
    expect(authorsOf((await exported.json()) as ConversationDetail)).toEqual(['Ada', 'Ada', 'Ada']);
  });

  it("names a run's messages after the run's owner", async () => {
    const { ada } = people;
    h.model.setScript('headless-complete');
    const created = await createRun(req('POST', '/api/runs', ada!.token, { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.' }));
    expect(created.status).toBe(202);
    const { runId } = ((await created.json()) as { data: { runId: string } }).data;
    let run: { status: string; conversationId?: string } = { status: 'queued' };
    for (let i = 0; i < 300 && ['queued', 'running'].includes(run.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      run = ((await (await getRun(req('GET', `/api/runs/${runId}`, ada!.token), params({ id: runId }))).json()) as { data: typeof run }).data;
    }
    expect(run.status).toBe('complete');
    const conversation = await detail(run.conversationId!, ada!.session);
    expect(conversation).toMatchObject({ ownerId: ada!.id, canWrite: true });
    expect(users(conversation).length).toBeGreaterThan(0);
    expect(users(conversation).map((m) => m.author)).toEqual(users(conversation).map(() => ({ id: ada!.id, name: 'Ada' })));
  }, 60_000);

  it('shows a renamed person by their new name, and a deleted one by the name kept with their words', async () => {
    const { ada, bob } = people;
    const db = (h.runtime.accounts as unknown as { db: import('@/lib/store/db/postgres').Db }).db;
    await sql`UPDATE "user" SET name = ${'Ada Lovelace'} WHERE id = ${ada!.id}`.execute(db);
    expect(await detail(adaConversation, bob!.session)).toMatchObject({ owner: { name: 'Ada Lovelace' } });
    expect(authorsOf(await detail(adaConversation, bob!.session))).toEqual(['Ada Lovelace', 'Ada Lovelace', 'Ada Lovelace']);
    // What the person's own tables hold goes with them (as removing a person does).
    for (const table of ['session', 'account', 'apikey']) await sql`DELETE FROM ${sql.table(table)} WHERE "userId" = ${ada!.id}`.execute(db).catch(() => undefined);
    await sql`DELETE FROM project_member WHERE user_id = ${ada!.id}`.execute(db);
    await sql`DELETE FROM "user" WHERE id = ${ada!.id}`.execute(db);
    expect(await h.runtime.accounts!.personById(ada!.id)).toBeNull();
    const orphan = await detail(adaConversation, bob!.session);
    expect(authorsOf(orphan)).toEqual(['Ada', 'Ada', 'Ada']);
    expect(orphan.owner).toEqual({ id: ada!.id, name: 'Ada' });
  });
});

describe('the projects list', () => {
  it("gives a member the last activity of what they may read, however many newer conversations of others' there are", async () => {
    const { GET: listProjects } = await import('@/app/api/projects/route');
    const store = h.runtime.store;
    const mine = await store.create({ agentId: 'pm', bundleName: 'shop', projectId: 'shop', ownerId: people.carol!.id, title: 'Carol’s own' });
    for (let i = 0; i < 21; i++) await store.create({ agentId: 'pm', bundleName: 'shop', projectId: 'shop', ownerId: people.bob!.id, title: `Bob’s ${i}` });
    const all = await store.list({ projectId: 'shop', limit: 100 });
    const carol: Caller = { kind: 'session', id: people.carol!.id, role: 'member' };
    const readable = [];
    for (const c of all.items) if (await h.runtime.access.conversation(carol, c, 'read')) readable.push(c);
    expect(readable.map((c) => c.id)).toContain(mine.id);
    const expected = readable[0]!.updatedAt;
    const shop = (await json(await listProjects(req('GET', '/api/projects', people.carol!.session)))).body.data.find((p: { id: string }) => p.id === 'shop');
    expect(shop).toMatchObject({ role: 'viewer', lastActivity: expected });
    const asAdmin = (await json(await listProjects(req('GET', '/api/projects', people.admin!.session)))).body.data.find((p: { id: string }) => p.id === 'shop');
    expect(asAdmin.lastActivity).toBe(all.items[0]!.updatedAt);
  });
});

describe('continuing a bundle conversation in a copy', () => {
  it('copies its own files with its messages', async () => {
    const { outputRootOf } = await import('@/lib/content/outputs');
    const source = await h.runtime.store.create({ agentId: 'pm', bundleName: 'sample', ownerId: people.bob!.id, title: 'Bundle chat' });
    const from = outputRootOf(h.runtime.config, source.id);
    await fs.mkdir(path.join(from, 'docs'), { recursive: true });
    await fs.writeFile(path.join(from, 'docs', 'prd.md'), '# PRD\n');
    const made = await json(await copyConversation(req('POST', `/api/conversations/${source.id}/copy`, people.bob!.session), params({ id: source.id })));
    expect(made.status).toBe(201);
    expect(await fs.readFile(path.join(outputRootOf(h.runtime.config, made.body.data.id), 'docs', 'prd.md'), 'utf8')).toBe('# PRD\n');
  });
});

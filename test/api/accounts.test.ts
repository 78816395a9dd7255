import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as authPost } from '@/app/api/auth/[...all]/route';
import { GET as setupGet, POST as setupPost } from '@/app/api/auth/setup/route';
import { GET as listUsers, POST as createUser } from '@/app/api/users/route';
import { GET as me } from '@/app/api/users/me/route';
import { GET as listTokens, POST as createToken } from '@/app/api/tokens/route';
import { DELETE as revokeToken } from '@/app/api/tokens/[id]/route';
import { GET as listProjects } from '@/app/api/projects/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { GET as listMembers, PUT as putMember, DELETE as deleteMember } from '@/app/api/projects/[id]/members/route';
import { GET as listDocuments } from '@/app/api/projects/[id]/files/route';
import { GET as getDocument } from '@/app/api/projects/[id]/files/[...path]/route';
import { POST as restore } from '@/app/api/projects/[id]/restore/route';
import { GET as agents } from '@/app/api/agents/route';
import { POST as chat } from '@/app/api/chat/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { GET as getConversation, PATCH as patchConversation, DELETE as deleteConversation } from '@/app/api/conversations/[id]/route';
import { GET as audit } from '@/app/api/conversations/[id]/audit/route';
import { GET as exportConversation } from '@/app/api/conversations/[id]/export/route';
import { GET as conversationFiles } from '@/app/api/conversations/[id]/files/route';
import { GET as conversationFile } from '@/app/api/conversations/[id]/files/[...path]/route';
import { SIGN_IN_ATTEMPTS_PER_MINUTE } from '@/lib/store/auth';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, type Harness } from './harness';

// People reach this server through one proxy, which names each client in X-Forwarded-For.
process.env.TRUST_PROXY = '1';

type Who = { cookie?: string; token?: string };
interface Call extends Who {
  body?: unknown;
  origin?: string;
  headers?: Record<string, string>;
}

/** A request as a browser (cookie) or a script (bearer token) sends it. */
function req(method: string, url: string, call: Call = {}): Request {
  const headers: Record<string, string> = { ...call.headers };
  if (call.cookie) headers.cookie = call.cookie;
  if (call.token) headers.authorization = `Bearer ${call.token}`;
  if (call.origin) headers.origin = call.origin;
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  return new Request(`http://localhost${url}`, { method, headers, ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}) });
}

const json = async (res: Response) => ({ status: res.status, body: await res.json() });

/** The name=value pairs of a response's Set-Cookie headers, as a Cookie header. */
function cookieOf(res: Response): string {
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');
}

async function signIn(email: string, password: string, ip = '10.0.0.1'): Promise<string> {
  const res = await authPost(req('POST', '/api/auth/sign-in/email', { body: { email, password }, headers: { 'x-forwarded-for': ip } }));
  expect(res.status).toBe(200);
  return cookieOf(res);
}

let h: Harness;
let projectsRoot: string;
let admin: Who;
let alice: Who;
let bob: Who;
let carol: Who;
let aliceConversation: string;

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-accounts-'));
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite', auth: {} });
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'shop' });
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'lab' });
}, 180_000);
afterAll(async () => {
  await h.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

describe('accounts, one step after the other on one server', () => {
  it('asks for the first admin; two at once make exactly one', async () => {
    expect((await json(await setupGet(req('GET', '/api/auth/setup')))).body.data).toMatchObject({ auth: true, needsSetup: true });
    const tries = await Promise.all(
      ['root@example.com', 'other@example.com', 'third@example.com'].map((email) => setupPost(req('POST', '/api/auth/setup', { body: { email, name: email.split('@')[0], password: 'correct horse battery' } }))),
    );
    const statuses = tries.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409]);
    const winner = tries.find((r) => r.status === 201)!;
    admin = { cookie: cookieOf(winner) };
    expect(admin.cookie).toMatch(/session_token=/);
    const people = await h.runtime.accounts!.listPeople();
    expect(people).toHaveLength(1);
    expect(people[0]).toMatchObject({ role: 'admin' });
    expect((await json(await setupGet(req('GET', '/api/auth/setup')))).body.data.needsSetup).toBe(false);
    expect((await json(await me(req('GET', '/api/users/me', admin)))).body.data).toMatchObject({ kind: 'session', role: 'admin' });
  });

  it('lets an admin create people; self sign-up is closed; members cannot manage people', async () => {
    for (const [name, role] of [['alice', 'member'], ['bob', 'member'], ['carol', 'member']] as const) {
      const res = await json(await createUser(req('POST', '/api/users', { ...admin, body: { email: `${name}@example.com`, name, password: `${name}-password-1`, role } })));
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ email: `${name}@example.com`, role });
    }
    alice = { cookie: await signIn('alice@example.com', 'alice-password-1') };
    bob = { cookie: await signIn('bob@example.com', 'bob-password-1') };
    carol = { cookie: await signIn('carol@example.com', 'carol-password-1') };
    const duplicate = await json(await createUser(req('POST', '/api/users', { ...admin, body: { email: 'alice@example.com', name: 'a', password: 'whatever-123' } })));
    expect(duplicate.status).toBe(409);
    expect((await listUsers(req('GET', '/api/users', alice))).status).toBe(403);
    expect((await createUser(req('POST', '/api/users', { ...alice, body: { email: 'x@example.com', name: 'x', password: 'xxxxxxxxxx' } }))).status).toBe(403);
    const signUp = await authPost(req('POST', '/api/auth/sign-up/email', { body: { email: 'eve@example.com', name: 'eve', password: 'eve-password-1' }, headers: { 'x-forwarded-for': '10.0.0.5' } }));
    expect(signUp.status).toBeGreaterThanOrEqual(400);
    expect(await h.runtime.accounts!.personByEmail('eve@example.com')).toBeNull();
  });

  it('shows projects without members to admins only, then to their members with their roles', async () => {
    const ids = async (who: Who) => (await json(await listProjects(req('GET', '/api/projects', who)))).body.data.map((p: { id: string }) => p.id).sort();
    expect(await ids(admin)).toEqual(['lab', 'shop']);
    expect(await ids(alice)).toEqual([]);
    expect((await json(await getProject(req('GET', '/api/projects/shop', alice), params({ id: 'shop' })))).body.code).toBe('E_PROJECT_NOT_FOUND');

    const put = (id: string, email: string, role: string, who: Who = admin) => putMember(req('PUT', `/api/projects/${id}/members`, { ...who, body: { email, role } }), params({ id }));
    expect((await put('shop', 'alice@example.com', 'owner')).status).toBe(200);
    expect((await put('lab', 'bob@example.com', 'editor')).status).toBe(200);
    // An owner manages the members of their project.
    const added = await json(await put('shop', 'carol@example.com', 'viewer', alice));
    expect(added.status).toBe(200);
    // Members first, then the admins (who are not members), marked by their access.
    expect(added.body.data.members.map((m: { email: string; projectRole: string; access: string }) => `${m.email}:${m.projectRole}:${m.access}`)).toEqual([
      'alice@example.com:owner:member',
      'carol@example.com:viewer:member',
      'root@example.com:owner:admin',
    ]);
    expect(added.body.data.canManage).toBe(true);
    // An editor does not; a viewer neither.
    expect((await put('lab', 'carol@example.com', 'viewer', bob)).status).toBe(403);
    expect((await put('shop', 'bob@example.com', 'viewer', carol)).status).toBe(403);
    // The last owner stays.
    expect((await put('shop', 'alice@example.com', 'editor', alice)).status).toBe(409);

    expect(await ids(alice)).toEqual(['shop']);
    expect(await ids(bob)).toEqual(['lab']);
    expect(await ids(carol)).toEqual(['shop']);
    expect((await json(await listMembers(req('GET', '/api/projects/shop/members', carol), params({ id: 'shop' })))).status).toBe(200);
  });

  it('makes conversations private to who started them; shared, the project reads them', async () => {
    h.model.setScript([reply.text('Hello Alice')]);
    const started = await json(await chat(req('POST', '/api/chat', { ...alice, body: { projectId: 'shop', agentId: 'pm', message: 'hello', stream: false } })));
    expect(started.status).toBe(200);
    aliceConversation = started.body.data.conversationId;
    const read = (who: Who) => getConversation(req('GET', `/api/conversations/${aliceConversation}`, who), params({ id: aliceConversation }));
    const own = await json(await read(alice));
    expect(own.status).toBe(200);
    expect(own.body.data).toMatchObject({ owner: { name: 'alice' }, canWrite: true });
    expect(own.body.data.ownerId).toBe(own.body.data.owner.id);
    expect((await read(admin)).status).toBe(200);
    expect((await json(await read(carol))).body.code).toBe('E_CONVERSATION_NOT_FOUND');
    const listed = async (who: Who) => (await json(await listConversations(req('GET', '/api/conversations', who)))).body.data.items.map((c: { id: string }) => c.id);
    expect(await listed(alice)).toEqual([aliceConversation]);
    expect(await listed(carol)).toEqual([]);

    // Only its owner shares it.
    const share = (who: Who, shared: boolean) => patchConversation(req('PATCH', `/api/conversations/${aliceConversation}`, { ...who, body: { shared } }), params({ id: aliceConversation }));
    expect((await share(carol, true)).status).toBe(404);
    const shared = await json(await share(alice, true));
    expect(shared.body.data.shared).toBe(true);
    expect((await read(carol)).status).toBe(200);
    expect(await listed(carol)).toEqual([aliceConversation]);
    // Shared is read-only: a viewer cannot chat in the project, a member cannot write someone else's conversation.
    const carolChat = await json(await chat(req('POST', '/api/chat', { ...carol, body: { projectId: 'shop', agentId: 'pm', message: 'mine now', conversationId: aliceConversation, stream: false } })));
    expect(carolChat.status).toBe(403);
    expect((await json(await chat(req('POST', '/api/chat', { ...carol, body: { projectId: 'shop', agentId: 'pm', message: 'new', stream: false } })))).status).toBe(403);
    // She reads it, so a write is refused in words, not as if it did not exist.
    expect((await patchConversation(req('PATCH', `/api/conversations/${aliceConversation}`, { ...carol, body: { title: 'taken' } }), params({ id: aliceConversation }))).status).toBe(403);
    expect((await deleteConversation(req('DELETE', `/api/conversations/${aliceConversation}`, carol), params({ id: aliceConversation }))).status).toBe(403);
    // A member of another project never sees it, shared or not.
    expect((await read(bob)).status).toBe(404);
    expect(await listed(bob)).toEqual([]);
  });

  it('names the person in the versions their turns and restores make', async () => {
    h.model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/prd.md', content: '# PRD one\n' } }]),
      reply.text('Saved.'),
    ]);
    const first = await json(await chat(req('POST', '/api/chat', { ...alice, body: { projectId: 'shop', agentId: 'pm', message: 'write', conversationId: aliceConversation, stream: false } })));
    expect(first.status).toBe(200);
    h.model.setScript([
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/prd.md', content: '# PRD two\n' } }]),
      reply.text('Saved again.'),
    ]);
    expect((await chat(req('POST', '/api/chat', { ...alice, body: { projectId: 'shop', agentId: 'pm', message: 'again', conversationId: aliceConversation, stream: false } }))).status).toBe(200);
    const versions = async () => (await json(await getDocument(req('GET', '/api/projects/shop/files/prd.md?versions', carol), params({ id: 'shop', path: ['prd.md'] })))).body.data.versions;
    const before = await versions();
    expect(before.map((v: { by?: string }) => v.by)).toEqual(['alice', 'alice']);
    // A viewer reads them but cannot restore; the owner's token can, and is named as a token.
    const older = before[1].version;
    expect((await restore(req('POST', '/api/projects/shop/restore', { ...carol, body: { path: 'prd.md', version: older } }), params({ id: 'shop' }))).status).toBe(403);
    const token = (await json(await createToken(req('POST', '/api/tokens', { ...alice, body: { name: 'restorer' } })))).body.data.token;
    expect((await restore(req('POST', '/api/projects/shop/restore', { token, body: { path: 'prd.md', version: older } }), params({ id: 'shop' }))).status).toBe(200);
    expect((await versions())[0]).toMatchObject({ kind: 'restore', by: 'alice (token)' });
    // The audit lines of her turns name her too.
    const lines = (await json(await audit(req('GET', `/api/conversations/${aliceConversation}/audit`, alice), params({ id: aliceConversation })))).body.data;
    const entries = Array.isArray(lines) ? lines : lines.entries;
    expect(entries.filter((e: { toolName: string }) => e.toolName === 'save_output').map((e: { by?: string }) => e.by)).toEqual(['alice', 'alice']);
  });

  it('answers 404 to a member of another project on every read and write vector', async () => {
    const id = aliceConversation;
    const vectors: Array<[string, () => Promise<Response>]> = [
      ['GET project', () => getProject(req('GET', '/api/projects/shop', bob), params({ id: 'shop' }))],
      ['GET documents', () => listDocuments(req('GET', '/api/projects/shop/files', bob), params({ id: 'shop' }))],
      ['GET document', () => getDocument(req('GET', '/api/projects/shop/files/README.md', bob), params({ id: 'shop', path: ['README.md'] }))],
      ['GET versions', () => getDocument(req('GET', '/api/projects/shop/files/prd.md?versions', bob), params({ id: 'shop', path: ['prd.md'] }))],
      ['POST restore', () => restore(req('POST', '/api/projects/shop/restore', { ...bob, body: { path: 'prd.md', version: 'a'.repeat(40) } }), params({ id: 'shop' }))],
      ['GET members', () => listMembers(req('GET', '/api/projects/shop/members', bob), params({ id: 'shop' }))],
      ['PUT members', () => putMember(req('PUT', '/api/projects/shop/members', { ...bob, body: { email: 'bob@example.com', role: 'owner' } }), params({ id: 'shop' }))],
      ['DELETE members', () => deleteMember(req('DELETE', '/api/projects/shop/members', { ...bob, body: { email: 'alice@example.com' } }), params({ id: 'shop' }))],
      ['GET agents', () => agents(req('GET', '/api/agents?projectId=shop', bob))],
      ['GET conversations of the project', () => listConversations(req('GET', '/api/conversations?projectId=shop', bob))],
      ['POST chat in the project', () => chat(req('POST', '/api/chat', { ...bob, body: { projectId: 'shop', agentId: 'pm', message: 'hi', stream: false } }))],
      ['POST chat on the conversation', () => chat(req('POST', '/api/chat', { ...bob, body: { agentId: 'pm', conversationId: id, message: 'hi', stream: false } }))],
      ['GET conversation', () => getConversation(req('GET', `/api/conversations/${id}`, bob), params({ id }))],
      ['PATCH conversation', () => patchConversation(req('PATCH', `/api/conversations/${id}`, { ...bob, body: { title: 'mine' } }), params({ id }))],
      ['DELETE conversation', () => deleteConversation(req('DELETE', `/api/conversations/${id}`, bob), params({ id }))],
      ['GET audit', () => audit(req('GET', `/api/conversations/${id}/audit`, bob), params({ id }))],
      ['GET export', () => exportConversation(req('GET', `/api/conversations/${id}/export`, bob), params({ id }))],
      ['GET conversation files', () => conversationFiles(req('GET', `/api/conversations/${id}/files`, bob), params({ id }))],
      ['GET conversation file', () => conversationFile(req('GET', `/api/conversations/${id}/files/x.md`, bob), params({ id, path: ['x.md'] }))],
    ];
    const answers = await Promise.all(vectors.map(async ([name, run]) => [name, (await run()).status] as const));
    expect(answers.filter(([, status]) => status !== 404)).toEqual([]);
    // A token of that member does no better.
    const token = (await json(await createToken(req('POST', '/api/tokens', { ...bob, body: { name: 'bob-ci' } })))).body.data.token;
    expect((await getProject(req('GET', '/api/projects/shop', { token }), params({ id: 'shop' }))).status).toBe(404);
    expect((await getConversation(req('GET', `/api/conversations/${id}`, { token }), params({ id }))).status).toBe(404);
  });

  it('shows a token once, stores only its hash, limits it to its projects and revokes it at once', async () => {
    const created = await json(await createToken(req('POST', '/api/tokens', { ...admin, body: { name: 'ci', projectIds: ['lab'] } })));
    expect(created.status).toBe(201);
    const { token, id } = created.body.data;
    expect(token).toMatch(/^bmad_/);
    expect(created.body.data).toMatchObject({ name: 'ci', projectIds: ['lab'], expiresAt: null });
    const listed = await json(await listTokens(req('GET', '/api/tokens', admin)));
    expect(listed.body.data).toEqual([expect.objectContaining({ id, name: 'ci' })]);
    expect(JSON.stringify(listed.body)).not.toContain(token);
    expect(listed.body.data[0].token).toBeUndefined();

    // The database file (and its write-ahead log) never holds the secret.
    const dbBytes = ['conversations.db', 'conversations.db-wal'].map((f) => path.join(h.config.dataDir, f)).filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f));
    expect(dbBytes.length).toBeGreaterThan(0);
    for (const bytes of dbBytes) expect(bytes.includes(Buffer.from(token))).toBe(false);
    expect(dbBytes.some((b) => b.includes(Buffer.from(id)))).toBe(true);

    // An admin's token limited to lab: lab only.
    const seen = await json(await listProjects(req('GET', '/api/projects', { token })));
    expect(seen.body.data.map((p: { id: string }) => p.id)).toEqual(['lab']);
    expect((await getProject(req('GET', '/api/projects/shop', { token }), params({ id: 'shop' }))).status).toBe(404);
    expect((await getConversation(req('GET', `/api/conversations/${aliceConversation}`, { token }), params({ id: aliceConversation }))).status).toBe(404);
    expect((await json(await me(req('GET', '/api/users/me', { token })))).body.data).toMatchObject({ kind: 'token', role: 'admin', projectIds: ['lab'] });
    // Bundle agents are outside its projects.
    expect((await chat(req('POST', '/api/chat', { token, body: { agentId: 'product-lead', message: 'hi', stream: false } }))).status).toBe(403);
    // It cannot mint a wider token.
    expect((await createToken(req('POST', '/api/tokens', { token, body: { name: 'wider' } }))).status).toBe(403);
    // Bearer requests are not browser requests: no Origin check.
    expect((await createToken(req('POST', '/api/tokens', { token, origin: 'http://evil.example', body: { name: 'narrow', projectIds: ['lab'] } }))).status).toBe(201);

    // A member's token does what the member may, no more.
    const aliceToken = (await json(await createToken(req('POST', '/api/tokens', { ...alice, body: { name: 'mine' } })))).body.data.token;
    expect((await listUsers(req('GET', '/api/users', { token: aliceToken }))).status).toBe(403);
    expect((await json(await listProjects(req('GET', '/api/projects', { token: aliceToken })))).body.data.map((p: { id: string }) => p.id)).toEqual(['shop']);
    // A token for a project the person cannot see is refused like the project is absent.
    expect((await createToken(req('POST', '/api/tokens', { ...alice, body: { name: 'lab', projectIds: ['lab'] } }))).status).toBe(404);

    // Someone else's token cannot be revoked by them.
    expect((await revokeToken(req('DELETE', `/api/tokens/${id}`, alice), params({ id }))).status).toBe(404);
    expect((await revokeToken(req('DELETE', `/api/tokens/${id}`, admin), params({ id }))).status).toBe(200);
    const after = await json(await listProjects(req('GET', '/api/projects', { token })));
    expect(after).toMatchObject({ status: 401, body: { code: 'E_UNAUTHENTICATED' } });
  });

  it('refuses an expired token', async () => {
    const created = await json(await createToken(req('POST', '/api/tokens', { ...alice, body: { name: 'short', expiresAt: new Date(Date.now() + 1000).toISOString() } })));
    expect(created.status).toBe(201);
    const { token } = created.body.data;
    expect((await listProjects(req('GET', '/api/projects', { token }))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2300));
    expect((await listProjects(req('GET', '/api/projects', { token }))).status).toBe(401);
    expect((await createToken(req('POST', '/api/tokens', { ...alice, body: { name: 'past', expiresAt: '2001-01-01T00:00:00Z' } }))).status).toBe(400);
    expect(await json(await createToken(req('POST', '/api/tokens', { ...alice, body: { name: 'far', expiresAt: '2999-01-01T00:00:00Z' } })))).toMatchObject({ status: 400, body: { code: 'E_VALIDATION', field: 'expiresAt' } });
  });

  it('refuses cookie requests that change state from another origin', async () => {
    const id = aliceConversation;
    const patch = (extra: Call) => patchConversation(req('PATCH', `/api/conversations/${id}`, { ...alice, body: { title: 'Renamed' }, ...extra }), params({ id }));
    expect(await json(await patch({ origin: 'http://evil.example' }))).toMatchObject({ status: 403, body: { code: 'E_FORBIDDEN' } });
    expect((await patch({ headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
    expect((await patch({ origin: 'null' })).status).toBe(403);
    expect((await patch({ origin: 'http://localhost' })).status).toBe(200);
    expect((await patch({ headers: { 'sec-fetch-site': 'same-origin' } })).status).toBe(200);
    // Behind a proxy that sends its own Host, the browser's Sec-Fetch-Site decides, both ways.
    expect((await patch({ origin: 'http://localhost:8443', headers: { 'sec-fetch-site': 'same-origin' } })).status).toBe(200);
    expect((await patch({ origin: 'http://localhost', headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
    // Reads from elsewhere are not refused (a browser does not let the page read them).
    expect((await getConversation(req('GET', `/api/conversations/${id}`, { ...alice, origin: 'http://evil.example' }), params({ id }))).status).toBe(200);
    expect((await chat(req('POST', '/api/chat', { ...alice, origin: 'http://evil.example', body: { projectId: 'shop', agentId: 'pm', message: 'x', stream: false } }))).status).toBe(403);
    // Better Auth's own routes check the origin too.
    expect((await authPost(req('POST', '/api/auth/sign-out', { ...alice, origin: 'http://evil.example', body: {} }))).status).toBe(403);
    expect((await me(req('GET', '/api/users/me', alice))).status).toBe(200);
  });

  it('rate limits sign-in: 429 after repeated failures', async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_MINUTE; i++) {
      const res = await authPost(req('POST', '/api/auth/sign-in/email', { body: { email: 'alice@example.com', password: `wrong-${i}` }, headers: { 'x-forwarded-for': '10.9.9.9' } }));
      statuses.push(res.status);
      if (res.status === 429) expect(await res.json()).toMatchObject({ code: 'E_RATE_LIMITED' });
    }
    expect(statuses.slice(0, SIGN_IN_ATTEMPTS_PER_MINUTE).every((s) => s === 401)).toBe(true);
    expect(statuses[SIGN_IN_ATTEMPTS_PER_MINUTE]).toBe(429);
    // Another address still signs in.
    await signIn('alice@example.com', 'alice-password-1', '10.9.9.10');
  });

  it('signs out: the cookie no longer works', async () => {
    const cookie = await signIn('carol@example.com', 'carol-password-1', '10.0.0.7');
    expect((await me(req('GET', '/api/users/me', { cookie }))).status).toBe(200);
    const out = await authPost(req('POST', '/api/auth/sign-out', { cookie, origin: 'http://localhost', body: {} }));
    expect(out.status).toBe(200);
    expect((await me(req('GET', '/api/users/me', { cookie }))).status).toBe(401);
  });
});

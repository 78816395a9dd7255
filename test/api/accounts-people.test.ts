import fsp from 'node:fs/promises';
import { sql } from 'kysely';
import os from 'node:os';
import path from 'node:path';
import { POST as authPost } from '@/app/api/auth/[...all]/route';
import { GET as me } from '@/app/api/users/me/route';
import { PUT as changeOwnPassword } from '@/app/api/users/me/password/route';
import { GET as listUsers, POST as createUser } from '@/app/api/users/route';
import { PATCH as patchUser, DELETE as deleteUser } from '@/app/api/users/[id]/route';
import { PUT as setPassword } from '@/app/api/users/[id]/password/route';
import { GET as listTokens, POST as createToken } from '@/app/api/tokens/route';
import { DELETE as revokeToken } from '@/app/api/tokens/[id]/route';
import { POST as createProject } from '@/app/api/projects/route';
import { GET as listMembers, PUT as putMember } from '@/app/api/projects/[id]/members/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import { params, startHarness, type Harness } from './harness';

/**
 * People administration through the real route handlers and Better Auth on SQLite: deactivating,
 * deleting, passwords set by an admin and changed by their owner, token refusals that say why,
 * and the members view with admins and what the caller may do.
 */
const json = async (res: Response) => ({ status: res.status, body: await res.json() });
let ip = 0;
type Who = { cookie?: string; token?: string };
function req(method: string, url: string, who: Who = {}, body?: unknown): Request {
  return new Request(`http://localhost${url}`, {
    method,
    headers: {
      'x-forwarded-for': `10.4.${++ip % 250}.1`,
      ...(who.cookie ? { cookie: who.cookie } : {}),
      ...(who.token ? { authorization: `Bearer ${who.token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}
const cookieOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');
async function signInStatus(email: string, password: string): Promise<{ status: number; cookie: string; body: { message?: string; code?: string } }> {
  const res = await authPost(req('POST', '/api/auth/sign-in/email', {}, { email, password }));
  return { status: res.status, cookie: cookieOf(res), body: await res.json().catch(() => ({})) };
}
async function signIn(email: string, password: string): Promise<Who> {
  const r = await signInStatus(email, password);
  expect(r.status).toBe(200);
  return { cookie: r.cookie };
}
/** Forgets an account's sign-in attempts this minute (each sign-in and password change counts). */
async function forgetAttempts(email: string) {
  const db = (h.runtime.accounts as unknown as { db: import('kysely').Kysely<never> }).db;
  await sql`DELETE FROM "rateLimit" WHERE "key" = ${`account:${email}|/sign-in/email`}`.execute(db);
}
const whoAmI = async (who: Who) => json(await me(req('GET', '/api/users/me', who)));

let h: Harness;
let projectsRoot: string;
let admin: Who;
const ids: Record<string, string> = {};

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-people-'));
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { auth: {} });
  ids.root = (await h.runtime.accounts!.createFirstAdmin({ email: 'root@example.com', name: 'Root', password: 'root-password-1' })).id;
  admin = await signIn('root@example.com', 'root-password-1');
  for (const name of ['dee', 'eli', 'fay', 'gus', 'hal']) {
    const made = await json(await createUser(req('POST', '/api/users', admin, { email: `${name}@example.com`, name, password: `${name}-password-1`, role: name === 'hal' ? 'admin' : 'member' })));
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ status: 'active' });
    ids[name] = made.body.data.id;
  }
}, 60_000);
afterAll(async () => {
  await h.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

describe('deactivating and deleting people', () => {
  it('ends a deactivated person’s sessions and tokens at once, refuses their sign-in, keeps their conversations', async () => {
    const dee = await signIn('dee@example.com', 'dee-password-1');
    const otherTab = await signIn('dee@example.com', 'dee-password-1');
    const token = (await json(await createToken(req('POST', '/api/tokens', dee, { name: 'ci' })))).body.data.token as string;
    expect((await whoAmI({ token })).status).toBe(200);
    const conversation = await h.runtime.store.create({ agentId: 'pm', bundleName: 'b', ownerId: ids.dee! });
    // A turn of theirs running in the chat: the deactivation asks it to stop.
    const busy = await h.runtime.store.create({ agentId: 'pm', bundleName: 'b', ownerId: ids.dee! });
    const lease = (await h.runtime.store.beginTurn(busy.id))!;
    const heard: string[] = [];
    const unwatch = h.runtime.store.watchTurn(lease, (signal) => heard.push(signal));

    // A member cannot do it; an admin can.
    expect((await patchUser(req('PATCH', `/api/users/${ids.root}`, dee, { active: false }), params({ id: ids.root! }))).status).toBe(403);
    const off = await json(await patchUser(req('PATCH', `/api/users/${ids.dee}`, admin, { active: false }), params({ id: ids.dee! })));
    expect(off).toMatchObject({ status: 200, body: { data: { id: ids.dee, status: 'deactivated' } } });
    for (let i = 0; i < 50 && !heard.length; i++) await new Promise((r) => setTimeout(r, 20));
    expect(heard).toEqual(['stop']);
    unwatch();
    await h.runtime.store.endTurn(lease, 'stopped');

    for (const who of [dee, otherTab]) expect((await whoAmI(who)).status).toBe(401);
    expect(await whoAmI({ token })).toMatchObject({ status: 401, body: { code: 'E_UNAUTHENTICATED', error: expect.stringMatching(/deactivated/) } });
    const refused = await signInStatus('dee@example.com', 'dee-password-1');
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/deactivated/);
    expect(refused.cookie).not.toMatch(/session_token=/);

    // The people list and the owner lookup say so; the conversation is still there.
    const people = (await json(await listUsers(req('GET', '/api/users', admin)))).body.data as Array<{ id: string; status: string }>;
    expect(people.find((p) => p.id === ids.dee)?.status).toBe('deactivated');
    expect(await h.runtime.accounts!.personSummary(ids.dee!)).toEqual({ id: ids.dee, name: 'dee', status: 'deactivated' });
    expect(await h.runtime.store.get(conversation.id)).toBeTruthy();
    const listed = (await json(await listConversations(req('GET', '/api/conversations', admin)))).body.data.items as Array<{ id: string; owner?: unknown }>;
    expect(listed.find((c) => c.id === conversation.id)?.owner).toEqual({ id: ids.dee, name: 'dee', status: 'deactivated' });

    // Reactivated, they sign in again; the tokens that ended stay ended.
    expect((await json(await patchUser(req('PATCH', `/api/users/${ids.dee}`, admin, { active: true }), params({ id: ids.dee! })))).body.data.status).toBe('active');
    const back = await signIn('dee@example.com', 'dee-password-1');
    expect((await whoAmI(back)).body.data.email).toBe('dee@example.com');
    expect((await whoAmI({ token })).status).toBe(401);
    expect((await json(await listTokens(req('GET', '/api/tokens', back)))).body.data).toEqual([]);
  });

  it('deletes a person: account, sessions and tokens go, their name stays on what they wrote, the email is free again', async () => {
    const eli = await signIn('eli@example.com', 'eli-password-1');
    const token = (await json(await createToken(req('POST', '/api/tokens', eli, { name: 'ci' })))).body.data.token as string;
    const conversation = await h.runtime.store.create({ agentId: 'pm', bundleName: 'b', ownerId: ids.eli! });
    expect((await deleteUser(req('DELETE', `/api/users/${ids.eli}`, eli), params({ id: ids.eli! }))).status).toBe(403);
    expect((await json(await deleteUser(req('DELETE', `/api/users/${ids.eli}`, admin), params({ id: ids.eli! })))).body.data).toEqual({ id: ids.eli, removed: true });
    expect((await whoAmI(eli)).status).toBe(401);
    expect(await whoAmI({ token })).toMatchObject({ status: 401, body: { error: expect.stringMatching(/removed/) } });
    expect((await signInStatus('eli@example.com', 'eli-password-1')).status).toBe(401);
    expect(await h.runtime.accounts!.personSummary(ids.eli!)).toEqual({ id: ids.eli, name: 'eli', status: 'removed' });
    const summaries = await h.runtime.accounts!.personSummaries([ids.eli!, ids.root!, 'nobody']);
    expect([...summaries.values()].map((s) => `${s.name}:${s.status}`).sort()).toEqual(['Root:active', 'eli:removed']);
    expect(await h.runtime.store.get(conversation.id)).toBeTruthy();
    const detail = (await json(await getConversation(req('GET', `/api/conversations/${conversation.id}`, admin), params({ id: conversation.id })))).body.data;
    expect(detail.owner).toEqual({ id: ids.eli, name: 'eli', status: 'removed' });
    expect((await deleteUser(req('DELETE', `/api/users/${ids.eli}`, admin), params({ id: ids.eli! }))).status).toBe(404);
    expect((await createUser(req('POST', '/api/users', admin, { email: 'eli@example.com', name: 'eli two', password: 'eli-password-2' }))).status).toBe(201);
  });

  it('never lets an admin deactivate, delete or demote themselves, and always keeps an active admin', async () => {
    for (const res of [
      await patchUser(req('PATCH', `/api/users/${ids.root}`, admin, { active: false }), params({ id: ids.root! })),
      await deleteUser(req('DELETE', `/api/users/${ids.root}`, admin), params({ id: ids.root! })),
      await patchUser(req('PATCH', `/api/users/${ids.root}`, admin, { role: 'member' }), params({ id: ids.root! })),
    ]) {
      expect(await json(res)).toMatchObject({ status: 409, body: { code: 'E_CONFLICT' } });
    }
    // Two admins deactivating each other at the same moment: one of them stays.
    const hal = await signIn('hal@example.com', 'hal-password-1');
    const both = await Promise.all([
      patchUser(req('PATCH', `/api/users/${ids.hal}`, admin, { active: false }), params({ id: ids.hal! })),
      patchUser(req('PATCH', `/api/users/${ids.root}`, hal, { active: false }), params({ id: ids.root! })),
    ]);
    const statuses = both.map((r) => r.status);
    // Whoever went second either finds itself deactivated (401) or the other the last admin (409).
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    const people = await h.runtime.accounts!.listPeople();
    expect(people.filter((p) => p.role === 'admin' && p.status === 'active')).toHaveLength(1);
    // Put things back for the tests that follow.
    const survivor = people.find((p) => p.role === 'admin' && p.status === 'active')!;
    await h.runtime.accounts!.setActive(survivor.id, survivor.id === ids.root ? ids.hal! : ids.root!, true);
    admin = await signIn('root@example.com', 'root-password-1');
  });
});

describe('a role and a state in one request', () => {
  it('applies both together, or neither when the admins’ rule refuses', async () => {
    const both = await json(await patchUser(req('PATCH', `/api/users/${ids.gus}`, admin, { role: 'admin', active: false }), params({ id: ids.gus! })));
    expect(both).toMatchObject({ status: 200, body: { data: { role: 'admin', status: 'deactivated' } } });
    expect((await json(await patchUser(req('PATCH', `/api/users/${ids.gus}`, admin, { role: 'member', active: true }), params({ id: ids.gus! })))).body.data).toMatchObject({ role: 'member', status: 'active' });
    // The only other active admin cannot be demoted and deactivated: nothing of it is written.
    const others = (await h.runtime.accounts!.listPeople()).filter((p) => p.role === 'admin' && p.status === 'active' && p.id !== ids.root);
    for (const o of others) await h.runtime.accounts!.setActive(ids.root!, o.id, false);
    await expect(h.runtime.accounts!.update(ids.hal!, ids.root!, { role: 'member', active: false })).rejects.toMatchObject({ code: 'E_CONFLICT' });
    expect(await h.runtime.accounts!.personById(ids.root!)).toMatchObject({ role: 'admin', status: 'active' });
    for (const o of others) await h.runtime.accounts!.setActive(ids.root!, o.id, true);
  });
});

describe('passwords', () => {
  it('lets an admin set a person’s password: the old one stops working, their sessions end', async () => {
    const fay = await signIn('fay@example.com', 'fay-password-1');
    expect((await setPassword(req('PUT', `/api/users/${ids.root}/password`, fay, { password: 'taken-over-1' }), params({ id: ids.root! }))).status).toBe(403);
    expect(await json(await setPassword(req('PUT', `/api/users/${ids.fay}/password`, admin, { password: 'short' }), params({ id: ids.fay! })))).toMatchObject({ status: 400, body: { field: 'password' } });
    expect((await setPassword(req('PUT', `/api/users/${ids.fay}/password`, admin, { password: 'fay-new-password' }), params({ id: ids.fay! }))).status).toBe(200);
    expect((await whoAmI(fay)).status).toBe(401);
    expect((await signInStatus('fay@example.com', 'fay-password-1')).status).toBe(401);
    expect((await whoAmI(await signIn('fay@example.com', 'fay-new-password'))).body.data.email).toBe('fay@example.com');
    expect((await setPassword(req('PUT', '/api/users/nobody/password', admin, { password: 'whatever-123' }), params({ id: 'nobody' }))).status).toBe(404);
  });

  it('lets everyone change their own password with the current one; other sessions end, this one goes on', async () => {
    const gus = await signIn('gus@example.com', 'gus-password-1');
    const laptop = await signIn('gus@example.com', 'gus-password-1');
    const wrong = await json(await changeOwnPassword(req('PUT', '/api/users/me/password', gus, { currentPassword: 'not-it-at-all', newPassword: 'gus-password-2' })));
    expect(wrong).toMatchObject({ status: 400, body: { code: 'E_VALIDATION', field: 'currentPassword' } });
    const token = (await json(await createToken(req('POST', '/api/tokens', gus, { name: 'ci' })))).body.data.token as string;
    expect((await changeOwnPassword(req('PUT', '/api/users/me/password', { token }, { currentPassword: 'gus-password-1', newPassword: 'gus-password-2' }))).status).toBe(403);
    const changed = await changeOwnPassword(req('PUT', '/api/users/me/password', gus, { currentPassword: 'gus-password-1', newPassword: 'gus-password-2' }));
    expect(changed.status).toBe(200);
    const renewed = cookieOf(changed);
    expect((await whoAmI({ cookie: renewed || gus.cookie })).status).toBe(200);
    expect((await whoAmI(laptop)).status).toBe(401);
    await forgetAttempts('gus@example.com');
    expect((await signInStatus('gus@example.com', 'gus-password-1')).status).toBe(401);
    expect((await signInStatus('gus@example.com', 'gus-password-2')).status).toBe(200);
  });
});

describe('admin tokens cannot take accounts', () => {
  it('refuses a project-limited admin token every admin route, and any token passwords, roles, deactivating, deleting and new admins', async () => {
    const hal = await signIn('hal@example.com', 'hal-password-1');
    expect((await createProject(req('POST', '/api/projects', hal, { name: 'limited' }))).status).toBe(201);
    const limited = (await json(await createToken(req('POST', '/api/tokens', hal, { name: 'one project', projectIds: ['limited'] })))).body.data.token as string;
    const full = (await json(await createToken(req('POST', '/api/tokens', hal, { name: 'everything' })))).body.data.token as string;
    for (const token of [limited, full]) {
      for (const res of [
        await setPassword(req('PUT', `/api/users/${ids.root}/password`, { token }, { password: 'taken-over-1' }), params({ id: ids.root! })),
        await patchUser(req('PATCH', `/api/users/${ids.gus}`, { token }, { active: false }), params({ id: ids.gus! })),
        await patchUser(req('PATCH', `/api/users/${ids.gus}`, { token }, { role: 'admin' }), params({ id: ids.gus! })),
        await deleteUser(req('DELETE', `/api/users/${ids.gus}`, { token }), params({ id: ids.gus! })),
        await createUser(req('POST', '/api/users', { token }, { email: 'mallory@example.com', name: 'm', password: 'mallory-pass-1', role: 'admin' })),
      ]) {
        const out = await json(res);
        expect(out).toMatchObject({ status: 403, body: { code: 'E_FORBIDDEN', error: expect.stringMatching(/token/) } });
      }
    }
    // The limited token is no admin at all; the unrestricted one may still list and add members.
    expect((await listUsers(req('GET', '/api/users', { token: limited }))).status).toBe(403);
    expect((await listUsers(req('GET', '/api/users', { token: full }))).status).toBe(200);
    expect((await signInStatus('root@example.com', 'root-password-1')).status).toBe(200);
    expect(await h.runtime.accounts!.personById(ids.gus!)).toMatchObject({ role: 'member', status: 'active' });
  });
});

describe('tokens that no longer work say why', () => {
  it('answers a revoked token with "revoked" and an expired one with "expired", every time', async () => {
    const made = await json(await createToken(req('POST', '/api/tokens', admin, { name: 'gone' })));
    const { id, token } = made.body.data as { id: string; token: string };
    expect((await revokeToken(req('DELETE', `/api/tokens/${id}`, admin), params({ id }))).status).toBe(200);
    for (let i = 0; i < 2; i++) expect(await whoAmI({ token })).toMatchObject({ status: 401, body: { code: 'E_UNAUTHENTICATED', error: expect.stringMatching(/^This token was revoked/) } });

    const soon = await json(await createToken(req('POST', '/api/tokens', admin, { name: 'soon', expiresAt: new Date(Date.now() + 1500).toISOString() })));
    const short = soon.body.data.token as string;
    expect((await whoAmI({ token: short })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2600));
    // Twice: the API-key plugin deletes an expired key on first sight; the answer stays the same.
    for (let i = 0; i < 2; i++) expect(await whoAmI({ token: short })).toMatchObject({ status: 401, body: { error: expect.stringMatching(/^This token expired/) } });
    // A token that never existed gets the plain answer.
    expect(await whoAmI({ token: 'bmad_made-up-token-that-never-was' })).toMatchObject({ status: 401, body: { error: expect.stringMatching(/^Sign in first/) } });
  });
});

describe('the members of a project', () => {
  it('lists admins beside members, marked, and tells each caller whether they may manage them', async () => {
    await forgetAttempts('gus@example.com');
    const gus = await signIn('gus@example.com', 'gus-password-2');
    const fay = await signIn('fay@example.com', 'fay-new-password');
    expect((await createProject(req('POST', '/api/projects', gus, { name: 'orchard' }))).status).toBe(201);
    expect((await putMember(req('PUT', '/api/projects/orchard/members', gus, { email: 'fay@example.com', role: 'editor' }), params({ id: 'orchard' }))).status).toBe(200);
    const asOwner = await json(await listMembers(req('GET', '/api/projects/orchard/members', gus), params({ id: 'orchard' })));
    expect(asOwner.body.data.canManage).toBe(true);
    expect(asOwner.body.data.members.map((m: { email: string; projectRole: string; access: string }) => `${m.email}:${m.projectRole}:${m.access}`)).toEqual([
      'gus@example.com:owner:member',
      'fay@example.com:editor:member',
      'root@example.com:owner:admin',
      'hal@example.com:owner:admin',
    ]);
    const asEditor = await json(await listMembers(req('GET', '/api/projects/orchard/members', fay), params({ id: 'orchard' })));
    expect(asEditor.body.data.canManage).toBe(false);
    expect(asEditor.body.data.members).toHaveLength(4);
    // Names only for those who do not manage the members: no one's address goes to every viewer.
    expect(asEditor.body.data.members.map((m: { name: string; email?: string }) => [m.name, m.email])).toEqual([['gus', undefined], ['fay', undefined], ['Root', undefined], ['hal', undefined]]);
    expect((await putMember(req('PUT', '/api/projects/orchard/members', fay, { email: 'dee@example.com', role: 'viewer' }), params({ id: 'orchard' }))).status).toBe(403);
    expect((await json(await listMembers(req('GET', '/api/projects/orchard/members', admin), params({ id: 'orchard' })))).body.data.canManage).toBe(true);
  });
});

import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as authPost } from '@/app/api/auth/[...all]/route';
import { GET as setupGet } from '@/app/api/auth/setup/route';
import { GET as me } from '@/app/api/users/me/route';
import { GET as listProjects, POST as createProject } from '@/app/api/projects/route';
import { GET as listMembers, PUT as putMember, DELETE as deleteMember } from '@/app/api/projects/[id]/members/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import { POST as createUser } from '@/app/api/users/route';
import { PATCH as patchUser } from '@/app/api/users/[id]/route';
import { params, startHarness, type Harness } from './harness';

const json = async (res: Response) => ({ status: res.status, body: await res.json() });
let ip = 0;
function req(method: string, url: string, cookie?: string, body?: unknown): Request {
  return new Request(`http://localhost${url}`, {
    method,
    headers: { 'x-forwarded-for': `10.3.0.${++ip % 250}`, ...(cookie ? { cookie } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}
const cookieOf = (res: Response) => res.headers.getSetCookie().map((c) => c.split(';')[0]).filter((c) => !c.endsWith('=')).join('; ');
async function signIn(email: string, password: string) {
  const res = await authPost(req('POST', '/api/auth/sign-in/email', undefined, { email, password }));
  expect(res.status).toBe(200);
  return cookieOf(res);
}

describe('accounts from the environment and self sign-up', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({}, { auth: { adminEmail: 'ops@example.com', adminPassword: 'ops-password-1', allowSignup: true } });
  });
  afterAll(async () => {
    await h.close();
  });

  it('creates the admin of ADMIN_EMAIL and ADMIN_PASSWORD at start: no first-run page', async () => {
    expect((await json(await setupGet(req('GET', '/api/auth/setup')))).body.data).toMatchObject({ needsSetup: false, signUp: true });
    const cookie = await signIn('ops@example.com', 'ops-password-1');
    expect((await json(await me(req('GET', '/api/users/me', cookie)))).body.data).toMatchObject({ role: 'admin', email: 'ops@example.com' });
  });

  it('signs people up as members when ALLOW_SIGNUP=true, whatever role they ask for', async () => {
    const res = await authPost(req('POST', '/api/auth/sign-up/email', undefined, { email: 'eve@example.com', name: 'Eve', password: 'eve-password-1', role: 'admin' }));
    expect(res.status).toBe(200);
    expect((await json(await me(req('GET', '/api/users/me', cookieOf(res))))).body.data).toMatchObject({ role: 'member', email: 'eve@example.com' });
    expect((await h.runtime.accounts!.personByEmail('eve@example.com'))?.role).toBe('member');
  });

  it('lets an admin change the role of others, never their own', async () => {
    const admin = await signIn('ops@example.com', 'ops-password-1');
    const eve = (await h.runtime.accounts!.personByEmail('eve@example.com'))!;
    const ops = (await h.runtime.accounts!.personByEmail('ops@example.com'))!;
    const eveCookie = await signIn('eve@example.com', 'eve-password-1');
    expect((await patchUser(req('PATCH', `/api/users/${ops.id}`, eveCookie, { role: 'member' }), params({ id: ops.id }))).status).toBe(403);
    expect((await json(await patchUser(req('PATCH', `/api/users/${eve.id}`, admin, { role: 'admin' }), params({ id: eve.id })))).body.data).toMatchObject({ role: 'admin' });
    expect((await json(await me(req('GET', '/api/users/me', eveCookie)))).body.data.role).toBe('admin');
    expect((await patchUser(req('PATCH', `/api/users/${ops.id}`, admin, { role: 'member' }), params({ id: ops.id }))).status).toBe(409);
  });
});

describe('owners, members and lists', () => {
  let h: Harness;
  let projectsRoot: string;
  let admin: string;
  let bo: string;
  let cy: string;
  beforeAll(async () => {
    projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-owners-'));
    h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { auth: {} });
    await h.runtime.accounts!.createFirstAdmin({ email: 'root@example.com', name: 'root', password: 'root-password-1' });
    admin = await signIn('root@example.com', 'root-password-1');
    for (const name of ['bo', 'cy']) {
      expect((await createUser(req('POST', '/api/users', admin, { email: `${name}@example.com`, name, password: `${name}-password-1` }))).status).toBe(201);
    }
    bo = await signIn('bo@example.com', 'bo-password-1');
    cy = await signIn('cy@example.com', 'cy-password-1');
  }, 60_000);
  afterAll(async () => {
    await h.close();
    await fsp.rm(projectsRoot, { recursive: true, force: true });
  });

  it("makes a project's creator its owner, seen by nobody else but admins", async () => {
    const made = await json(await createProject(req('POST', '/api/projects', bo, { name: 'bakery' })));
    expect(made.status).toBe(201);
    const ids = async (cookie: string) => (await json(await listProjects(req('GET', '/api/projects', cookie)))).body.data.map((p: { id: string }) => p.id);
    expect(await ids(bo)).toEqual(['bakery']);
    expect(await ids(admin)).toEqual(['bakery']);
    expect(await ids(cy)).toEqual([]);
    const members = await json(await listMembers(req('GET', '/api/projects/bakery/members', bo), params({ id: 'bakery' })));
    expect(members.body.data.members.map((m: { email: string; projectRole: string; access: string }) => `${m.email}:${m.projectRole}:${m.access}`)).toEqual(['bo@example.com:owner:member', 'root@example.com:owner:admin']);
    expect(members.body.data.canManage).toBe(true);
  }, 120_000);

  it('pages through only the conversations a member may read, and forgets them when the member leaves', async () => {
    const { store } = h.runtime;
    const people = await h.runtime.accounts!.listPeople();
    const id = (email: string) => people.find((p) => p.email === email)!.id;
    expect((await putMember(req('PUT', '/api/projects/bakery/members', bo, { email: 'cy@example.com', role: 'viewer' }), params({ id: 'bakery' }))).status).toBe(200);
    // Interleaved: bo's private ones, bo's shared ones, cy's own.
    const expected: string[] = [];
    for (let i = 0; i < 7; i++) {
      const mine = await store.create({ agentId: 'pm', bundleName: 'bakery', projectId: 'bakery', ownerId: id('bo@example.com') });
      const shared = await store.create({ agentId: 'pm', bundleName: 'bakery', projectId: 'bakery', ownerId: id('bo@example.com') });
      await store.setShared(shared.id, true);
      const cys = await store.create({ agentId: 'pm', bundleName: 'bakery', projectId: 'bakery', ownerId: id('cy@example.com') });
      void mine;
      expected.push(shared.id, cys.id);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const res = await json(await listConversations(req('GET', `/api/conversations?limit=3${cursor ? `&cursor=${cursor}` : ''}`, cy)));
      expect(res.body.data.items.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.data.items.map((c: { id: string }) => c.id));
      cursor = res.body.data.nextCursor;
      if (!cursor) break;
    }
    expect(seen.sort()).toEqual([...expected].sort());

    // Removed from the project, cy no longer reads even her own conversations there.
    expect((await deleteMember(req('DELETE', '/api/projects/bakery/members', bo, { email: 'cy@example.com' }), params({ id: 'bakery' }))).status).toBe(200);
    expect((await json(await listConversations(req('GET', '/api/conversations', cy)))).body.data.items).toEqual([]);
    expect((await getConversation(req('GET', `/api/conversations/${expected[1]}`, cy), params({ id: expected[1]! }))).status).toBe(404);
    // The last owner cannot leave.
    expect((await deleteMember(req('DELETE', '/api/projects/bakery/members', bo, { email: 'bo@example.com' }), params({ id: 'bakery' }))).status).toBe(409);
  });
});

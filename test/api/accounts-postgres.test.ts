import { POST as authPost } from '@/app/api/auth/[...all]/route';
import { POST as setupPost } from '@/app/api/auth/setup/route';
import { GET as me } from '@/app/api/users/me/route';
import { POST as createToken } from '@/app/api/tokens/route';
import { DELETE as revokeToken } from '@/app/api/tokens/[id]/route';
import { POST as createUser } from '@/app/api/users/route';
import { PATCH as patchUser, DELETE as deleteUser } from '@/app/api/users/[id]/route';
import { PUT as setPassword } from '@/app/api/users/[id]/password/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { POST as chat } from '@/app/api/chat/route';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../postgres';
import { params, startHarness, type Harness } from './harness';

/**
 * Accounts on the Postgres database of DATABASE_URL, beside the conversations: the tables every
 * instance shares. The same rules as on SQLite, through the real route handlers.
 */
const json = async (res: Response) => ({ status: res.status, body: await res.json() });
let ip = 0;
function req(method: string, url: string, headers: Record<string, string> = {}, body?: unknown): Request {
  return new Request(`http://localhost${url}`, {
    method,
    headers: { 'x-forwarded-for': `10.9.0.${++ip % 250}`, ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}
const cookieOf = (res: Response) => res.headers.getSetCookie().map((c) => c.split(';')[0]).filter((c) => !c.endsWith('=')).join('; ');

let database: TestDatabase;
let h: Harness;

beforeAll(async () => {
  database = await createTestDatabase('accounts');
  h = await startHarness({ DATABASE_URL: database.url }, { store: 'postgres', auth: {} });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await database?.drop();
});

it('keeps its people on Postgres: one admin from concurrent first sign-ups, sessions, a token, 401 without', async () => {
  expect(h.runtime.config.store).toBe('postgres');
  const first = await Promise.all(
    ['a', 'b', 'c'].map((n) => setupPost(req('POST', '/api/auth/setup', { origin: 'http://localhost' }, { email: `${n}@example.com`, name: n, password: `${n}-password-123` }))),
  );
  expect(first.map((r) => r.status).sort()).toEqual([201, 409, 409]);
  const admin = (await Promise.all(first.map(json))).find((r) => r.status === 201)!.body.data.email as string;
  const signIn = await authPost(req('POST', '/api/auth/sign-in/email', {}, { email: admin, password: `${admin[0]}-password-123` }));
  expect(signIn.status).toBe(200);
  const cookie = cookieOf(signIn);
  expect((await json(await me(req('GET', '/api/users/me', { cookie })))).body.data).toMatchObject({ email: admin, role: 'admin' });
  const token = await json(await createToken(req('POST', '/api/tokens', { cookie, origin: 'http://localhost' }, { name: 'ci' })));
  expect(token.status).toBe(201);
  const bearer = { authorization: `Bearer ${token.body.data.token}` };
  expect((await json(await me(req('GET', '/api/users/me', bearer)))).body.data.email).toBe(admin);
  expect((await listConversations(req('GET', '/api/conversations'))).status).toBe(401);
  // A conversation started with the token is the admin's, stored on Postgres with its owner.
  h.model.setScript('plain');
  const turn = await json(await chat(req('POST', '/api/chat', bearer, { agentId: 'product-lead', message: 'Hello from CI' })));
  expect(turn.status).toBe(200);
  const stored = await h.runtime.store.get(turn.body.data.conversationId);
  expect(stored?.ownerId).toBe((await json(await me(req('GET', '/api/users/me', bearer)))).body.data.id);
  const listed = await json(await listConversations(req('GET', '/api/conversations', bearer)));
  expect(listed.body.data.items.map((c: { id: string }) => c.id)).toEqual([turn.body.data.conversationId]);
  // The rows are in Postgres itself (the token only hashed).
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    expect((await client.query('SELECT email, role FROM "user" ORDER BY email')).rows).toEqual([{ email: admin, role: 'admin' }]);
    expect((await client.query('SELECT owner_id FROM conversations')).rows).toEqual([{ owner_id: stored?.ownerId }]);
    const dump = JSON.stringify((await client.query('SELECT * FROM apikey')).rows);
    expect(dump).not.toContain(token.body.data.token);
  } finally {
    await client.end();
  }
}, 60_000);

it('deactivates, deletes and resets people on Postgres; two admins deactivating each other at once leave one', async () => {
  const accounts = h.runtime.accounts!;
  const root = (await accounts.listPeople()).find((p) => p.role === 'admin')!;
  const rootPassword = `${root.email[0]}-password-123`;
  const session = async (email: string, password: string) => {
    const res = await authPost(req('POST', '/api/auth/sign-in/email', {}, { email, password }));
    return { status: res.status, cookie: cookieOf(res) };
  };
  const admin = { cookie: (await session(root.email, rootPassword)).cookie, origin: 'http://localhost' };
  for (const [name, role] of [['pia', 'admin'], ['quin', 'member']] as const) {
    expect((await createUser(req('POST', '/api/users', admin, { email: `${name}@example.com`, name, password: `${name}-password-1`, role }))).status).toBe(201);
  }
  const pia = (await accounts.personByEmail('pia@example.com'))!;
  const quin = (await accounts.personByEmail('quin@example.com'))!;

  // Deactivated: the session and the token end, sign-in is refused.
  const quinCookie = (await session('quin@example.com', 'quin-password-1')).cookie;
  const quinToken = (await json(await createToken(req('POST', '/api/tokens', { cookie: quinCookie, origin: 'http://localhost' }, { name: 'ci' })))).body.data.token as string;
  expect((await patchUser(req('PATCH', `/api/users/${quin.id}`, admin, { active: false }), params({ id: quin.id }))).status).toBe(200);
  expect((await me(req('GET', '/api/users/me', { cookie: quinCookie }))).status).toBe(401);
  expect((await json(await me(req('GET', '/api/users/me', { authorization: `Bearer ${quinToken}` })))).body.error).toMatch(/deactivated/);
  expect((await session('quin@example.com', 'quin-password-1')).status).toBe(403);
  expect((await patchUser(req('PATCH', `/api/users/${quin.id}`, admin, { active: true }), params({ id: quin.id }))).status).toBe(200);
  expect((await setPassword(req('PUT', `/api/users/${quin.id}/password`, admin, { password: 'quin-password-2' }), params({ id: quin.id }))).status).toBe(200);
  expect((await session('quin@example.com', 'quin-password-2')).status).toBe(200);

  // A revoked token says so.
  const made = (await json(await createToken(req('POST', '/api/tokens', admin, { name: 'gone' })))).body.data as { id: string; token: string };
  expect((await revokeToken(req('DELETE', `/api/tokens/${made.id}`, admin), params({ id: made.id }))).status).toBe(200);
  expect((await json(await me(req('GET', '/api/users/me', { authorization: `Bearer ${made.token}` })))).body.error).toMatch(/^This token was revoked/);

  // Two admins, each deactivating the other at the same moment: the lock leaves one active.
  const piaSession = { cookie: (await session('pia@example.com', 'pia-password-1')).cookie, origin: 'http://localhost' };
  const both = await Promise.all([
    patchUser(req('PATCH', `/api/users/${pia.id}`, admin, { active: false }), params({ id: pia.id })),
    patchUser(req('PATCH', `/api/users/${root.id}`, piaSession, { active: false }), params({ id: root.id })),
  ]);
  expect(both.filter((r) => r.status === 200)).toHaveLength(1);
  expect((await accounts.listPeople()).filter((p) => p.role === 'admin' && p.status === 'active')).toHaveLength(1);

  // Deleted: the name stays for their conversations.
  const survivor = (await accounts.listPeople()).find((p) => p.role === 'admin' && p.status === 'active')!;
  const survivorCookie = (await session(survivor.email, survivor.id === root.id ? rootPassword : 'pia-password-1')).cookie;
  expect((await deleteUser(req('DELETE', `/api/users/${quin.id}`, { cookie: survivorCookie, origin: 'http://localhost' }), params({ id: quin.id }))).status).toBe(200);
  expect(await accounts.personSummary(quin.id)).toEqual({ id: quin.id, name: 'quin', status: 'removed' });
}, 60_000);

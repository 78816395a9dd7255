import { POST as authPost } from '@/app/api/auth/[...all]/route';
import { POST as setupPost } from '@/app/api/auth/setup/route';
import { GET as me } from '@/app/api/users/me/route';
import { POST as createToken } from '@/app/api/tokens/route';
import { GET as listConversations } from '@/app/api/conversations/route';
import { POST as chat } from '@/app/api/chat/route';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../postgres';
import { startHarness, type Harness } from './harness';

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

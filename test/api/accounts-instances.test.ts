import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { clientAddressed, openAccounts, SIGN_IN_ATTEMPTS_PER_MINUTE, type Accounts, type AuthSettings } from '@/lib/store/auth';
import { openDatabase } from '@/lib/store/db';
import { createTestDatabase, type TestDatabase } from '../postgres';

/**
 * Two instances behind a round-robin balancer share one database: what one of them counts, the
 * other must see. The second instance is opened from a second copy of the modules (Better Auth's
 * included), so that nothing kept in one module's memory is shared, as between two `next start`
 * processes; each has its own pool or connection to the same database.
 */
function secondInstance(): typeof openAccounts {
  let open: typeof openAccounts | undefined;
  jest.isolateModules(() => {
    open = (require('@/lib/store/auth') as typeof import('@/lib/store/auth')).openAccounts;
  });
  return open!;
}

const settings: AuthSettings = { enabled: true, allowSignup: false, secret: 'test-secret-test-secret-test-secret-0123' };
const ALICE = { email: 'alice@example.com', name: 'alice', password: 'alice-password-1' };

/** As the auth route sends it, behind one trusted proxy (TRUST_PROXY=1) that says who the client is. */
function signIn(accounts: Accounts, password: string, ip: string): Promise<Response> {
  return accounts.auth.handler(
    clientAddressed(new Request('http://localhost/api/auth/sign-in/email', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
      body: JSON.stringify({ email: ALICE.email, password }),
    }), { TRUST_PROXY: '1' }),
  );
}

const cookieOf = (res: Response) => res.headers.getSetCookie().map((c) => c.split(';')[0]).filter((c) => !c.endsWith('=')).join('; ');

const rateLimitRows = async (accounts: Accounts): Promise<number> => {
  const ctx = await accounts.auth.$context;
  return (await ctx.adapter.findMany({ model: 'rateLimit', limit: 10_000 })).length;
};

async function sharedLimit(a: Accounts, b: Accounts): Promise<void> {
  await Promise.all([a.ready(), b.ready()]);
  await a.createPerson({ ...ALICE, role: 'member' });
  // Alternating between the instances, as a balancer does: the limit is the deployment's, not each one's.
  const statuses: number[] = [];
  for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_MINUTE; i++) statuses.push((await signIn(i % 2 ? b : a, `wrong-${i}`, '10.7.7.7')).status);
  expect(statuses).toEqual([...Array(SIGN_IN_ATTEMPTS_PER_MINUTE).fill(401), 429]);
  expect((await signIn(a, ALICE.password, '10.7.7.7')).status).toBe(429);
  expect((await signIn(b, ALICE.password, '10.7.7.7')).status).toBe(429);
  // Another address is counted on its own.
  const ok = await signIn(b, ALICE.password, '10.7.7.8');
  expect(ok.status).toBe(200);

  // Only Better Auth's own routes are counted: the app's calls into it (a session or a token
  // checked on every API request) neither write the table nor meet the limit.
  const cookie = cookieOf(ok);
  const token = await a.createToken((await a.personByEmail(ALICE.email))!.id, { name: 'ci' });
  const before = await rateLimitRows(a);
  expect(before).toBeGreaterThan(0);
  for (let i = 0; i < 2 * SIGN_IN_ATTEMPTS_PER_MINUTE; i++) {
    const accounts = i % 2 ? b : a;
    const headers = { 'x-forwarded-for': '10.7.7.7' };
    expect((await accounts.callerOf(new Request('http://localhost/api/users/me', { headers: { ...headers, cookie } })))?.email).toBe(ALICE.email);
    expect((await accounts.callerOf(new Request('http://localhost/api/users/me', { headers: { ...headers, authorization: `Bearer ${token.token}` } })))?.email).toBe(ALICE.email);
  }
  expect(await rateLimitRows(b)).toBe(before);
}

describe('sign-in limit shared by two instances', () => {
  let database: TestDatabase;
  const open: Accounts[] = [];
  let tmp: string;

  beforeAll(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-instances-'));
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((a) => a.close()));
  });
  afterAll(async () => {
    await database?.drop();
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('on one Postgres database: 5 attempts in all, not 5 per instance', async () => {
    database = await createTestDatabase('instances');
    const dataDir = path.join(tmp, 'pg');
    const options = { dataDir, database: openDatabase({ store: 'postgres', dataDir, databaseUrl: database.url }), settings };
    open.push(openAccounts(options), secondInstance()(options));
    await sharedLimit(open[0]!, open[1]!);
  }, 60_000);

  it('on one SQLite file: the same', async () => {
    const dataDir = path.join(tmp, 'sqlite');
    const options = { dataDir, database: openDatabase({ store: 'sqlite', dataDir }), settings };
    open.push(openAccounts(options), secondInstance()(options));
    await sharedLimit(open[0]!, open[1]!);
  }, 60_000);

  it('beside the memory store: still limited (on its in-memory database)', async () => {
    const accounts = openAccounts({ dataDir: path.join(tmp, 'memory'), database: { kind: 'memory' }, settings });
    open.push(accounts);
    await accounts.ready();
    await accounts.createPerson({ ...ALICE, role: 'member' });
    const statuses: number[] = [];
    for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_MINUTE; i++) statuses.push((await signIn(accounts, `wrong-${i}`, '10.7.7.9')).status);
    expect(statuses).toEqual([...Array(SIGN_IN_ATTEMPTS_PER_MINUTE).fill(401), 429]);
  });
});

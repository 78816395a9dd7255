import { POST as authPost } from '@/app/api/auth/[...all]/route';
import { SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE, SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE_BEHIND_PROXY, SIGN_IN_ATTEMPTS_PER_MINUTE, SIGN_IN_ATTEMPTS_PER_MINUTE_UNKNOWN_CLIENTS } from '@/lib/store/auth';
import { PUT as changeOwnPassword } from '@/app/api/users/me/password/route';
import { startHarness, type Harness } from './harness';

/**
 * The sign-in limit through the auth route, on a real SQLite database: X-Forwarded-For counts only
 * when TRUST_PROXY says a proxy wrote it. Without one, a made-up address per attempt dodges nothing.
 */
let h: Harness;
let address = 0;

function signIn(email: string, password: string, xff?: string): Promise<Response> {
  return authPost(
    new Request('http://localhost/api/auth/sign-in/email', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(xff ? { 'x-forwarded-for': xff } : {}) },
      body: JSON.stringify({ email, password }),
    }),
  );
}

beforeEach(async () => {
  delete process.env.TRUST_PROXY;
  h = await startHarness({}, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  await accounts.ready();
  for (const name of ['alice', 'bob', 'carol']) await accounts.createPerson({ email: `${name}@example.com`, name, password: `${name}-password-1`, role: 'member' });
});
afterEach(async () => {
  delete process.env.TRUST_PROXY;
  await h?.close();
});

it('without TRUST_PROXY, a new X-Forwarded-For per attempt still meets the account limit, and the right password waits too', async () => {
  const statuses: number[] = [];
  for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE; i++) statuses.push((await signIn('alice@example.com', `wrong-${i}`, `10.66.0.${++address}`)).status);
  expect(statuses).toEqual([...Array(SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE).fill(401), 429]);
  const locked = await signIn('alice@example.com', 'alice-password-1', `10.66.1.${++address}`);
  expect(locked.status).toBe(429);
  expect(await locked.json()).toMatchObject({ code: 'E_RATE_LIMITED' });
  expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
  // Another account is not locked by alice's.
  expect((await signIn('bob@example.com', 'bob-password-1', `10.66.2.${++address}`)).status).toBe(200);
  // The account is matched whatever its case.
  expect((await signIn('ALICE@example.com', 'alice-password-1')).status).toBe(429);
});

it('without TRUST_PROXY, all attempts share one ceiling whatever the addresses and accounts', async () => {
  const statuses: number[] = [];
  for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_MINUTE_UNKNOWN_CLIENTS; i++) statuses.push((await signIn(`nobody-${i}@example.com`, 'wrong-password', `10.67.${i}.1`)).status);
  expect(statuses.slice(0, SIGN_IN_ATTEMPTS_PER_MINUTE_UNKNOWN_CLIENTS).every((s) => s === 401)).toBe(true);
  expect(statuses[SIGN_IN_ATTEMPTS_PER_MINUTE_UNKNOWN_CLIENTS]).toBe(429);
  expect((await signIn('carol@example.com', 'carol-password-1', '10.67.200.1')).status).toBe(429);
  // Thirty-one password checks in a row: a loaded machine needs more than the default 30 s; the
  // limit's own window (a minute) bounds how long the walk may take and still mean something.
}, 60_000);

it('with TRUST_PROXY=1, clients are counted apart by the address the proxy appended, not by what they wrote left of it', async () => {
  process.env.TRUST_PROXY = '1';
  const statuses: number[] = [];
  // The client writes a new address each time; the proxy appends the one it really came from.
  for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_MINUTE; i++) statuses.push((await signIn('alice@example.com', `wrong-${i}`, `1.2.3.${i}, 10.68.0.1`)).status);
  expect(statuses).toEqual([...Array(SIGN_IN_ATTEMPTS_PER_MINUTE).fill(401), 429]);
  expect((await signIn('alice@example.com', 'alice-password-1', '10.68.0.1')).status).toBe(429);
  // Another client signs in to the same account: behind a trusted proxy nobody locks a colleague out.
  expect((await signIn('alice@example.com', 'alice-password-1', '10.68.0.2')).status).toBe(200);
  expect((await signIn('bob@example.com', 'bob-password-1', '9.9.9.9, 10.68.0.3')).status).toBe(200);
});

it('a client cannot name itself in the header Better Auth reads', async () => {
  const statuses: number[] = [];
  for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE; i++) {
    const res = await authPost(
      new Request('http://localhost/api/auth/sign-in/email', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-bmad-client-address': `10.69.0.${i}` },
        body: JSON.stringify({ email: 'carol@example.com', password: `wrong-${i}` }),
      }),
    );
    statuses.push(res.status);
  }
  expect(statuses).toEqual([...Array(SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE).fill(401), 429]);
});

it('with TRUST_PROXY=1, an account still has a ceiling over all addresses', async () => {
  process.env.TRUST_PROXY = '1';
  const statuses: number[] = [];
  // A fresh address per attempt (many clients, or one that writes its own header beside the proxy).
  for (let i = 0; i <= SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE_BEHIND_PROXY; i++) statuses.push((await signIn('alice@example.com', `wrong-${i}`, `10.70.${i}.1`)).status);
  expect(statuses).toEqual([...Array(SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE_BEHIND_PROXY).fill(401), 429]);
  expect((await signIn('alice@example.com', 'alice-password-1', '10.70.250.1')).status).toBe(429);
  expect((await signIn('bob@example.com', 'bob-password-1', '10.70.251.1')).status).toBe(200);
});

it('changing one’s own password counts on the same per-account attempts as sign-in', async () => {
  const signedIn = await signIn('bob@example.com', 'bob-password-1');
  expect(signedIn.status).toBe(200);
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');
  const statuses: number[] = [];
  for (let i = 0; i < SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE; i++) {
    const res = await changeOwnPassword(
      new Request('http://localhost/api/users/me/password', { method: 'PUT', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ currentPassword: `guess-${i}-wrong`, newPassword: 'bob-password-2' }) }),
    );
    statuses.push(res.status);
  }
  // The sign-in was the account's first attempt this minute.
  expect(statuses).toEqual([...Array(SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE - 1).fill(400), 429]);
  expect((await signIn('bob@example.com', 'bob-password-1')).status).toBe(429);
});

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as authGet, POST as authPost } from '@/app/api/auth/[...all]/route';
import { POST as createUser } from '@/app/api/users/route';
import { GET as me } from '@/app/api/users/me/route';
import { REPO, startHarness, type Harness } from './harness';

// People reach this server through one proxy, which names each client in X-Forwarded-For.
process.env.TRUST_PROXY = '1';

/**
 * Single sign-on end to end against a real OpenID Connect provider (`oidc-provider`, started here
 * on loopback): discovery, PKCE, state and the ID token's issuer are Better Auth's; these tests
 * sign in through the provider's own login form as a browser would, with cookies on both sides.
 */
const CLIENT_ID = 'bmad-app';
const CLIENT_SECRET = 'a-client-secret-for-the-sso-tests';
const CALLBACK = 'http://localhost/api/auth/callback/oidc';

let idp: ChildProcess;
let issuer: string;
let accountsFile: string;
let h: Harness;
let admin: string;

async function writeAccounts(accounts: Record<string, Record<string, unknown>>) {
  await fs.writeFile(accountsFile, JSON.stringify(accounts));
}

class Jar {
  private cookies = new Map<string, string>();
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      if (value) this.cookies.set(name, value);
      else this.cookies.delete(name);
    }
  }
  get header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

// Each sign-in from its own address: Better Auth limits sign-in starts per address (3 in 10 s).
let address = 0;
const appRequest = (method: string, url: string, jar: Jar, body?: unknown) =>
  new Request(`http://localhost${url}`, {
    method,
    headers: {
      ...(jar.header ? { cookie: jar.header } : {}),
      'x-forwarded-for': `10.1.2.${++address % 250}`,
      // A browser names the page's origin on every POST.
      ...(body !== undefined ? { 'content-type': 'application/json', origin: 'http://localhost' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

/**
 * Starts single sign-on in the app, signs in at the provider as `sub`, and returns the URL the
 * provider sends the browser back to, with the app's cookies so far.
 */
async function throughProvider(sub: string): Promise<{ callback: URL; app: Jar }> {
  const app = new Jar();
  const start = await authPost(appRequest('POST', '/api/auth/sign-in/social', app, { provider: 'oidc', callbackURL: '/' }));
  expect(start.status).toBe(200);
  app.take(start);
  const { url } = (await start.json()) as { url: string };
  const authorize = new URL(url);
  expect(authorize.origin).toBe(issuer);
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorize.searchParams.get('state')).toBeTruthy();

  const idpJar = new Jar();
  let next = authorize.toString();
  for (let hop = 0; hop < 20; hop++) {
    const res = await fetch(next, { redirect: 'manual', headers: { cookie: idpJar.header } });
    idpJar.take(res);
    if (res.status >= 300 && res.status < 400) {
      const location = new URL(res.headers.get('location')!, next);
      if (location.toString().startsWith(CALLBACK)) return { callback: location, app };
      next = location.toString();
      continue;
    }
    // The provider's own interaction page: its login form, then its consent form.
    const page = await res.text();
    expect(res.status).toBe(200);
    const form: Record<string, string> = page.includes('name="login"') ? { prompt: 'login', login: sub, password: 'any' } : { prompt: 'consent' };
    const posted = await fetch(next, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: idpJar.header, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    idpJar.take(posted);
    next = new URL(posted.headers.get('location')!, next).toString();
  }
  throw new Error('the provider never sent the browser back');
}

/** Back at the app: its callback; returns where it sends the browser and the session cookie, if any. */
async function callback(url: URL, app: Jar): Promise<{ location: string; app: Jar }> {
  const res = await authGet(appRequest('GET', `${url.pathname}${url.search}`, app));
  app.take(res);
  expect(res.status).toBe(302);
  return { location: res.headers.get('location') ?? '', app };
}

async function whoIs(app: Jar) {
  const res = await me(appRequest('GET', '/api/users/me', app));
  return res.status === 200 ? ((await res.json()) as { data: { id: string; email: string; role: string; kind: string } }).data : null;
}

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-sso-'));
  accountsFile = path.join(dir, 'accounts.json');
  await writeAccounts({});
  idp = spawn(process.execPath, [path.join(REPO, 'test/oidc/provider.mjs')], {
    env: { PATH: process.env.PATH ?? '', CLIENT_ID, CLIENT_SECRET, REDIRECT_URI: CALLBACK, ACCOUNTS_FILE: accountsFile } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  issuer = await new Promise<string>((resolve, reject) => {
    let out = '';
    idp.stdout!.on('data', (d) => {
      out += d;
      const m = /ready (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    idp.once('exit', (code) => reject(new Error(`the OIDC provider exited (${code})`)));
  });
  h = await startHarness({}, { auth: { oidc: { issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, adminGroup: 'ops' } } });
  await h.runtime.accounts!.createFirstAdmin({ email: 'root@example.com', name: 'root', password: 'root-password-1' });
  const signIn = await authPost(new Request('http://localhost/api/auth/sign-in/email', { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.1.1.2' }, body: JSON.stringify({ email: 'root@example.com', password: 'root-password-1' }) }));
  admin = signIn.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
}, 60_000);
afterAll(async () => {
  await h?.close();
  idp?.kill();
  await fs.rm(path.dirname(accountsFile), { recursive: true, force: true });
});

describe('single sign-on against a real OpenID Connect provider', () => {
  it('signs a new person in, an admin by the admin group, and links the next sign-in by subject', async () => {
    await writeAccounts({ 'sub-dana': { email: 'dana@example.com', email_verified: true, name: 'Dana', groups: ['ops', 'dev'] } });
    const first = await throughProvider('sub-dana');
    const back = await callback(first.callback, first.app);
    expect(back.location).toBe('/');
    const dana = await whoIs(back.app);
    expect(dana).toMatchObject({ kind: 'session', email: 'dana@example.com', role: 'admin' });

    // The provider now says another email: the same subject is the same person.
    await writeAccounts({ 'sub-dana': { email: 'dana.new@example.com', email_verified: true, name: 'Dana', groups: [] } });
    const again = await throughProvider('sub-dana');
    const second = await callback(again.callback, again.app);
    expect((await whoIs(second.app))?.id).toBe(dana!.id);
    expect((await h.runtime.accounts!.listPeople()).filter((p) => p.email.startsWith('dana'))).toHaveLength(1);
  });

  it('refuses a callback whose state was changed', async () => {
    await writeAccounts({ 'sub-erin': { email: 'erin@example.com', email_verified: true, name: 'Erin' } });
    const { callback: url, app } = await throughProvider('sub-erin');
    const state = url.searchParams.get('state')!;
    url.searchParams.set('state', `${state.slice(0, -4)}AAAA`);
    const back = await callback(url, app);
    expect(back.location).toMatch(/error=/);
    expect(await whoIs(back.app)).toBeNull();
    expect(await h.runtime.accounts!.personByEmail('erin@example.com')).toBeNull();
  });

  it('never links an unverified email to an existing local account', async () => {
    const made = await createUser(new Request('http://localhost/api/users', { method: 'POST', headers: { cookie: admin, 'content-type': 'application/json' }, body: JSON.stringify({ email: 'alice@example.com', name: 'alice', password: 'alice-password-1' }) }));
    expect(made.status).toBe(201);
    await writeAccounts({ 'sub-mallory': { email: 'alice@example.com', email_verified: false, name: 'Mallory' } });
    const { callback: url, app } = await throughProvider('sub-mallory');
    const back = await callback(url, app);
    expect(back.location).toMatch(/error=/);
    expect(await whoIs(back.app)).toBeNull();
    // Alice's account has no single sign-on identity attached.
    const ctx = await h.runtime.accounts!.auth.$context;
    const alice = await h.runtime.accounts!.personByEmail('alice@example.com');
    expect((await ctx.internalAdapter.findAccounts(alice!.id)).map((a) => a.providerId)).toEqual(['credential']);
  });
});

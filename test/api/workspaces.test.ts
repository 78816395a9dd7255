import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GET as getBuild, PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { GET as listWorkspaces, POST as createWorkspace } from '@/app/api/projects/[id]/workspaces/route';
import { GET as getWorkspace, DELETE as discardWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/route';
import { GET as getDiff } from '@/app/api/projects/[id]/workspaces/[wid]/diff/route';
import { POST as mergeWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/merge/route';
import { GET as getProject } from '@/app/api/projects/[id]/route';
import { POST as chat } from '@/app/api/chat/route';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { setupOf } from '@/lib/services';
import { reply } from '../scripted-model';
import { bmadProject } from '../bmad-installs';
import { commit, sh, writeFiles } from '../git-repo';
import { params, startHarness, type Harness } from './harness';

/**
 * The build settings and workspace routes with accounts on, on a real BMAD install that is a
 * real git repository: who may do what, the workspace lifecycle through the routes, and that no
 * answer names a server path.
 */
let h: Harness;
let projectsRoot: string;
let shop: string;
const tokens: Record<string, string> = {};

type Who = 'admin' | 'ada' | 'ed' | 'vic' | 'bob' | 'adaLab';

const req = (method: string, url: string, who: Who, body?: unknown) =>
  new Request(`http://localhost${url}`, {
    method,
    headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });

interface Answer {
  status: number;
  body: { success: boolean; data?: any; code?: string; field?: string; paths?: string[]; error?: string };
  text: string;
}
async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

const build = (who: Who, id = 'shop') => getBuild(req('GET', `/api/projects/${id}/build`, who), params({ id })).then(answer);
const setBuild = (who: Who, body: unknown, id = 'shop') => putBuild(req('PUT', `/api/projects/${id}/build`, who, body), params({ id })).then(answer);
const create = (who: Who, name: unknown, id = 'shop') => createWorkspace(req('POST', `/api/projects/${id}/workspaces`, who, { name }), params({ id })).then(answer);
const list = (who: Who, id = 'shop') => listWorkspaces(req('GET', `/api/projects/${id}/workspaces`, who), params({ id })).then(answer);
const one = (who: Who, wid: string, id = 'shop') => getWorkspace(req('GET', `/api/projects/${id}/workspaces/${wid}`, who), params({ id, wid })).then(answer);
const diff = (who: Who, wid: string, query = '', id = 'shop') => getDiff(req('GET', `/api/projects/${id}/workspaces/${wid}/diff${query}`, who), params({ id, wid })).then(answer);
const merge = (who: Who, wid: string, id = 'shop') => mergeWorkspace(req('POST', `/api/projects/${id}/workspaces/${wid}/merge`, who), params({ id, wid })).then(answer);
const discard = (who: Who, wid: string, id = 'shop') => discardWorkspace(req('DELETE', `/api/projects/${id}/workspaces/${wid}`, who), params({ id, wid })).then(answer);

/** What a command in the workspace would do: commit there, then the server's sync. */
async function work(wid: string, files: Record<string, string>, message = 'work'): Promise<void> {
  const ws = h.runtime.workspaces;
  const row = (await ws.store.get(wid))!;
  commit(ws.checkoutPath(row), files, message);
  expect((await ws.sync({ id: 'shop', root: shop }, row)).synced).toBe(true);
}

function noServerPath(a: Answer): void {
  for (const p of [h.tmp, projectsRoot, os.tmpdir()]) expect(a.text).not.toContain(p);
}

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-workspaces-'));
  shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'lab' });
  sh(shop, ['init', '-q', '-b', 'main']);
  writeFiles(shop, { 'src/app.txt': 'one\ntwo\nthree\n' });
  sh(shop, ['add', '-A']);
  sh(shop, ['commit', '-q', '-m', 'initial']);
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name: name[0]!.toUpperCase() + name.slice(1), password: `${name}-password-1`, role: 'member' });
  const [ada, ed, vic, bob] = [await person('ada'), await person('ed'), await person('vic'), await person('bob')];
  await accounts.setMember('shop', ada.id, 'owner');
  await accounts.setMember('lab', ada.id, 'owner');
  await accounts.setMember('shop', ed.id, 'editor');
  await accounts.setMember('shop', vic.id, 'viewer');
  tokens.admin = (await accounts.createToken(admin.id, { name: 't' })).token;
  tokens.ada = (await accounts.createToken(ada.id, { name: 't' })).token;
  tokens.adaLab = (await accounts.createToken(ada.id, { name: 'lab only', projectIds: ['lab'] })).token;
  tokens.ed = (await accounts.createToken(ed.id, { name: 't' })).token;
  tokens.vic = (await accounts.createToken(vic.id, { name: 't' })).token;
  tokens.bob = (await accounts.createToken(bob.id, { name: 't' })).token;
}, 240_000);

afterAll(async () => {
  await h?.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

describe('project view', () => {
  it('shows the repository (branch, head, clean), never a path; null for a folder outside git', async () => {
    const head = sh(shop, ['rev-parse', 'HEAD']).trim();
    const a = await answer(await getProject(req('GET', '/api/projects/shop', 'vic'), params({ id: 'shop' })));
    expect(a.status).toBe(200);
    expect(a.body.data.repository).toEqual({ branch: 'main', head, clean: true });
    noServerPath(a);
    const lab = await answer(await getProject(req('GET', '/api/projects/lab', 'ada'), params({ id: 'lab' })));
    expect(lab.body.data.repository).toBeNull();
  }, 60_000);
});

describe('build settings', () => {
  it('are off by default, read by whoever sees the project, 404 to others and to a token limited to another project', async () => {
    expect((await build('vic')).body.data).toEqual({ enabled: false, baseBranch: null, setup: null, env: {}, test: null, appendOnly: [] });
    expect((await build('bob')).status).toBe(404);
    expect((await build('bob')).body.code).toBe('E_PROJECT_NOT_FOUND');
    expect((await build('adaLab')).status).toBe(404);
    expect((await build('ada', 'nope')).status).toBe(404);
  });

  it('are changed by the owner and admins only (403 for an editor, 404 for a stranger)', async () => {
    const ed = await setBuild('ed', { enabled: true });
    expect(ed.status).toBe(403);
    expect(ed.body.code).toBe('E_FORBIDDEN');
    expect((await setBuild('vic', { enabled: true })).status).toBe(403);
    expect((await setBuild('bob', { enabled: true })).status).toBe(404);
    expect((await setBuild('adaLab', { enabled: true })).status).toBe(404);
    expect((await build('ada')).body.data.enabled).toBe(false);
    const owner = await setBuild('ada', { setup: 'true', env: { NODE_ENV: 'test' } });
    expect(owner.status).toBe(200);
    expect(owner.body.data).toEqual({ enabled: false, baseBranch: null, setup: 'true', env: { NODE_ENV: 'test' }, test: null, appendOnly: [] });
    // Fields left out keep their values.
    const admin = await setBuild('admin', { setup: null });
    expect(admin.body.data).toEqual({ enabled: false, baseBranch: null, setup: null, env: { NODE_ENV: 'test' }, test: null, appendOnly: [] });
  });

  it('answers 400 E_VALIDATION naming the field of a wrong type or value', async () => {
    for (const [body, field] of [
      [{ enabled: 'yes' }, 'enabled'],
      [{ baseBranch: 3 }, 'baseBranch'],
      [{ baseBranch: 'bad..name' }, 'baseBranch'],
      [{ setup: ['npm ci'] }, 'setup'],
      [{ setup: 'npm ci\nrm -rf /' }, 'setup'],
      [{ env: 'A=1' }, 'env'],
      [{ env: { 'BAD NAME': '1' } }, 'env'],
    ] as const) {
      const a = await setBuild('ada', body);
      expect([a.status, a.body.code, a.body.field?.split('.')[0]]).toEqual([400, 'E_VALIDATION', field]);
    }
    expect((await setBuild('ada', '{not json')).status).toBe(400);
    expect((await build('ada')).body.data).toEqual({ enabled: false, baseBranch: null, setup: null, env: { NODE_ENV: 'test' }, test: null, appendOnly: [] });
  });
});

describe('workspaces', () => {
  let first: string;

  it('answer 409 E_BUILD_DISABLED on every route while build is off', async () => {
    for (const a of [await create('ada', 'x'), await list('ada'), await one('ada', 'ws_x'), await diff('ada', 'ws_x'), await merge('ada', 'ws_x'), await discard('ada', 'ws_x')]) {
      expect([a.status, a.body.code]).toEqual([409, 'E_BUILD_DISABLED']);
    }
    // A project the caller cannot see is 404 first.
    expect((await list('bob')).status).toBe(404);
  });

  it('are made by owners and editors (201, bmad/<name> in the project repository), not by viewers', async () => {
    expect((await setBuild('ada', { enabled: true })).body.data.enabled).toBe(true);
    const base = sh(shop, ['rev-parse', 'main']).trim();
    const made = await create('ed', 'feature-1');
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ name: 'feature-1', branch: 'bmad/feature-1', base: 'main', baseCommit: base, status: 'open', createdBy: 'Ed', setup: null });
    expect(made.body.data.id).toMatch(/^ws_/);
    noServerPath(made);
    first = made.body.data.id;
    expect(sh(shop, ['rev-parse', 'refs/heads/bmad/feature-1']).trim()).toBe(base);
    const viewer = await create('vic', 'nope');
    expect([viewer.status, viewer.body.code]).toEqual([403, 'E_FORBIDDEN']);
    expect((await create('bob', 'nope')).status).toBe(404);
    expect((await create('adaLab', 'nope')).status).toBe(404);
  }, 60_000);

  it('refuse a bad name (400 naming it) and a name taken (409)', async () => {
    for (const name of ['has space', '../up', '', 'a/b', 42]) {
      const a = await create('ada', name);
      expect([a.status, a.body.code, a.body.field]).toEqual([400, 'E_VALIDATION', 'name']);
    }
    const taken = await create('ada', 'feature-1');
    expect([taken.status, taken.body.code]).toEqual([409, 'E_CONFLICT']);
  });

  it('are listed and read by viewers, with files, commits and the diff; 404 for strangers and unknown ids', async () => {
    await work(first, { 'src/app.txt': 'one\nTWO\nthree\n', 'src/new.txt': 'new\n' }, 'Change two');
    const listed = await list('vic');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((w: { id: string }) => w.id)).toEqual([first]);
    expect(listed.body.data[0]).toMatchObject({ id: first, status: 'open', ahead: 1, behind: 0, setup: null });
    const detail = await one('vic', first);
    expect(detail.status).toBe(200);
    expect(detail.body.data).toMatchObject({ id: first, status: 'open', ahead: 1, behind: 0, setup: null });
    expect(detail.body.data.files).toEqual([
      { path: 'src/app.txt', status: 'modified', additions: 1, deletions: 1 },
      { path: 'src/new.txt', status: 'added', additions: 1, deletions: 0 },
    ]);
    expect(detail.body.data.commits).toEqual([expect.objectContaining({ subject: 'Change two', author: 'Test' })]);
    expect(detail.body.data.head).toBe(sh(shop, ['rev-parse', 'refs/heads/bmad/feature-1']).trim());
    noServerPath(detail);
    const d = await diff('vic', first);
    expect(d.body.data.cut).toBe(false);
    expect(d.body.data.diff).toContain('+TWO');
    expect(d.body.data.diff).toContain('src/new.txt');
    const onePath = await diff('vic', first, '?path=src/new.txt');
    expect(onePath.body.data.diff).toContain('+new');
    expect(onePath.body.data.diff).not.toContain('TWO');
    expect((await diff('vic', first, '?path=../x')).body.field).toBe('path');
    for (const a of [await one('bob', first), await diff('bob', first), await one('adaLab', first)]) expect(a.status).toBe(404);
    const unknown = await one('ada', 'ws_00000000-0000-0000-0000-000000000000');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'E_WORKSPACE_NOT_FOUND']);
  }, 60_000);

  it("is 404 through another project's routes", async () => {
    await setBuild('ada', { enabled: true }, 'lab');
    for (const a of [await one('ada', first, 'lab'), await diff('ada', first, '', 'lab'), await merge('ada', first, 'lab'), await discard('ada', first, 'lab')]) {
      expect([a.status, a.body.code]).toEqual([404, 'E_WORKSPACE_NOT_FOUND']);
    }
    expect((await list('ada', 'lab')).body.data).toEqual([]);
  });

  it('merge: viewers cannot; a fast-forward moves main and the project folder', async () => {
    const viewer = await merge('vic', first);
    expect([viewer.status, viewer.body.code]).toEqual([403, 'E_FORBIDDEN']);
    expect((await discard('vic', first)).status).toBe(403);
    const m = await merge('ed', first);
    expect(m.status).toBe(200);
    expect(m.body.data).toMatchObject({ fastForward: true, checkoutUpdated: true, workspace: { id: first, status: 'merged', mergedCommit: m.body.data.commit, mergedInto: 'main', mergedBy: 'Ed' } });
    expect(Date.parse(m.body.data.workspace.mergedAt)).toBeGreaterThan(Date.now() - 120_000);
    // Merged: where it went, never "1 ahead".
    expect((await list('vic')).body.data.find((w: { id: string }) => w.id === first)).toMatchObject({ status: 'merged', mergedInto: 'main', ahead: 0, behind: 0 });
    expect((await one('vic', first)).body.data).toMatchObject({ status: 'merged', mergedInto: 'main', mergedBy: 'Ed', ahead: 0 });
    expect(sh(shop, ['rev-parse', 'main']).trim()).toBe(m.body.data.commit);
    expect(fs.readFileSync(path.join(shop, 'src/app.txt'), 'utf8')).toBe('one\nTWO\nthree\n');
    const again = await merge('ed', first);
    expect(again.status).toBe(409);
  }, 60_000);

  it('merge: a merge commit by the person who merged; a conflict is 409 with its paths and changes nothing; a dirty base is 409', async () => {
    const a = (await create('ada', 'left')).body.data.id as string;
    const b = (await create('ada', 'right')).body.data.id as string;
    const c = (await create('ada', 'other')).body.data.id as string;
    await work(a, { 'src/app.txt': 'LEFT\nTWO\nthree\n' });
    await work(b, { 'src/app.txt': 'RIGHT\nTWO\nthree\n' });
    await work(c, { 'src/other.txt': 'other\n' });
    expect((await merge('ada', a)).body.data.fastForward).toBe(true);
    const before = sh(shop, ['rev-parse', 'main']).trim();
    const conflict = await merge('ed', b);
    expect([conflict.status, conflict.body.code, conflict.body.paths]).toEqual([409, 'E_MERGE_CONFLICT', ['src/app.txt']]);
    expect(sh(shop, ['rev-parse', 'main']).trim()).toBe(before);
    expect(sh(shop, ['status', '--porcelain'])).toBe('');
    expect((await one('ada', b)).body.data.status).toBe('open');
    fs.appendFileSync(path.join(shop, 'src/app.txt'), 'dirty\n');
    const dirty = await merge('ed', c);
    expect([dirty.status, dirty.body.code]).toEqual([409, 'E_BASE_DIRTY']);
    expect(sh(shop, ['rev-parse', 'main']).trim()).toBe(before);
    sh(shop, ['checkout', '--', 'src/app.txt']);
    const merged = await merge('ed', c);
    expect(merged.body.data).toMatchObject({ fastForward: false, checkoutUpdated: true });
    expect(sh(shop, ['log', '-1', '--format=%cn <%ce>', 'main']).trim()).toBe('Ed <ed@example.com>');
    expect(fs.readFileSync(path.join(shop, 'src/other.txt'), 'utf8')).toBe('other\n');
  }, 90_000);

  it('merge: a stale git lock in the project repository is 409 E_GIT_LOCKED naming it, changing nothing', async () => {
    const id = (await create('ada', 'locked')).body.data.id as string;
    await work(id, { 'src/locked.txt': 'locked\n' });
    const base = sh(shop, ['rev-parse', 'main']).trim();
    const branch = sh(shop, ['rev-parse', 'refs/heads/bmad/locked']).trim();
    fs.writeFileSync(path.join(shop, '.git', 'index.lock'), '');
    try {
      const locked = await merge('ed', id);
      expect([locked.status, locked.body.code, (locked.body as { lock?: string }).lock]).toEqual([409, 'E_GIT_LOCKED', '.git/index.lock']);
      expect(locked.body.error).toContain('.git/index.lock');
      expect(locked.body.error).not.toMatch(/uncommitted|changes the merge/);
      noServerPath(locked);
      expect(sh(shop, ['rev-parse', 'main']).trim()).toBe(base);
      expect(sh(shop, ['rev-parse', 'refs/heads/bmad/locked']).trim()).toBe(branch);
      expect((await one('vic', id)).body.data.status).toBe('open');
      expect(fs.existsSync(path.join(shop, 'src/locked.txt'))).toBe(false);
    } finally {
      fs.rmSync(path.join(shop, '.git', 'index.lock'), { force: true });
    }
    expect((await discard('ada', id)).status).toBe(200);
  }, 60_000);

  it('discard removes the checkout and the branch; the name is free again', async () => {
    const rows = (await list('ada')).body.data as { id: string; name: string }[];
    const right = rows.find((w) => w.name === 'right')!;
    const checkout = h.runtime.workspaces.checkoutPath(right);
    expect(fs.existsSync(checkout)).toBe(true);
    const d = await discard('ed', right.id);
    expect(d.status).toBe(200);
    expect(d.body.data.status).toBe('discarded');
    expect(fs.existsSync(checkout)).toBe(false);
    expect(sh(shop, ['branch', '--list', 'bmad/right']).trim()).toBe('');
    expect((await list('ada')).body.data.map((w: { name: string }) => w.name)).not.toContain('right');
    expect((await create('ada', 'right')).status).toBe(201);
  }, 60_000);
});

describe('turns in a workspace', () => {
  let wid: string;
  const send = (who: Who, body: Record<string, unknown>) => chat(req('POST', '/api/chat', who, { projectId: 'shop', agentId: 'bmad-agent-pm', stream: false, ...body })).then(answer);

  it('edit files and run commands in the checkout; the turn ends with a commit by its person on bmad/<name>; the project folder is untouched', async () => {
    wid = (await create('ed', 'turns')).body.data.id as string;
    const before = fs.readFileSync(path.join(shop, 'src/app.txt'), 'utf8');
    h.model.reset();
    h.model.setScript([
      reply.toolCalls([
        { name: 'edit_file', arguments: { file_path: '{project-root}/src/app.txt', old_string: 'three', new_string: 'THREE' } },
        { name: 'save_output', arguments: { file_path: '{project-root}/src/added.txt', content: 'added by the agent\n' } },
        { name: 'save_output', arguments: { file_path: '{project-root}/_bmad/evil.md', content: 'x' } },
        { name: 'save_output', arguments: { file_path: '{project-root}/.env', content: 'X=1' } },
      ]),
      reply.toolCalls([{ name: 'run_command', arguments: { command: 'cat src/app.txt src/added.txt && git status --short | wc -l && pwd' } }]),
      reply.text('done'),
    ]);
    const a = await send('ed', { message: 'work', workspaceId: wid });
    expect(a.status).toBe(200);
    const calls = a.body.data.message.functionCalls as { name: string; result: { ok: boolean; error?: { code: string }; exit_code?: number; stdout?: string } }[];
    expect(calls.map((c) => c.result.ok || c.result.error?.code)).toEqual([true, true, 'E_READ_ONLY', 'E_SANDBOX_VIOLATION', true]);
    const command = calls[4]!.result;
    expect(command.exit_code).toBe(0);
    expect(command.stdout).toContain('THREE');
    expect(command.stdout).toContain('added by the agent');
    noServerPath(a);
    // The project folder and its checkout did not change; the branch holds the turn's commit.
    expect(fs.readFileSync(path.join(shop, 'src/app.txt'), 'utf8')).toBe(before);
    expect(fs.existsSync(path.join(shop, 'src/added.txt'))).toBe(false);
    expect(sh(shop, ['show', 'refs/heads/bmad/turns:src/app.txt'])).toContain('THREE');
    expect(sh(shop, ['show', 'refs/heads/bmad/turns:src/added.txt'])).toBe('added by the agent\n');
    expect(sh(shop, ['log', '-1', '--format=%an <%ae>', 'refs/heads/bmad/turns']).trim()).toBe('Ed <ed@example.com>');
    // Titled after the request, with the agent; the conversation in the body.
    expect(sh(shop, ['log', '-1', '--format=%s', 'refs/heads/bmad/turns']).trim()).toBe('work — bmad-agent-pm');
    expect(sh(shop, ['log', '-1', '--format=%b', 'refs/heads/bmad/turns'])).toContain(`Conversation: ${a.body.data.conversationId}`);
    const detail = (await one('vic', wid)).body.data;
    expect(detail.ahead).toBe(1);
    expect(detail.files.map((f: { path: string }) => f.path).sort()).toEqual(['src/added.txt', 'src/app.txt']);
    // The conversation remembers its workspace: a later turn without workspaceId goes on there.
    h.model.setScript([reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{project-root}/src/later.txt', content: 'later\n' } }]), reply.text('ok')]);
    const later = await send('ed', { message: 'more', conversationId: a.body.data.conversationId });
    expect(later.status).toBe(200);
    expect(sh(shop, ['show', 'refs/heads/bmad/turns:src/later.txt'])).toBe('later\n');
    expect(fs.existsSync(path.join(shop, 'src/later.txt'))).toBe(false);
  }, 120_000);

  it("never carry a change of the installed method to the project's branch (update-index --skip-worktree, a direct git commit, a skill file), carry the rest, and tell the turn", async () => {
    const id = (await create('ed', 'method')).body.data.id as string;
    h.model.reset();
    h.model.setScript([
      reply.toolCalls([
        {
          name: 'run_command',
          arguments: { command: 'h=$(echo changed | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$h,_bmad/core/config.yaml && git update-index --skip-worktree _bmad/core/config.yaml && git diff --cached --name-only' },
        },
      ]),
      reply.toolCalls([{ name: 'run_command', arguments: { command: 'git rm -q --cached _bmad/core/module-help.csv && git commit -q -m "Drop the help" && echo committed' } }]),
      reply.toolCalls([{ name: 'run_command', arguments: { command: 'echo evil >> .claude/skills/bmad-agent-dev/SKILL.md && echo work > src/work.txt' } }]),
      reply.text('done'),
    ]);
    const a = await send('ed', { message: 'Change the method\nplease', workspaceId: id });
    expect(a.status).toBe(200);
    const results = (a.body.data.message.functionCalls as { result: { exit_code?: number; stdout?: string } }[]).map((c) => c.result);
    // Each attack ran: the index holds the change (the working tree, read-only, does not), and the commit was made.
    expect(results.map((r) => r.exit_code)).toEqual([0, 0, 0]);
    expect(results[0]!.stdout!.trim()).toBe('_bmad/core/config.yaml');
    expect(results[1]!.stdout).toContain('committed');
    const branch = 'refs/heads/bmad/method';
    const commits = sh(shop, ['rev-list', `main..${branch}`]).trim().split('\n');
    expect(commits.length).toBe(2);
    // Every commit's tree has main's method and skills; the render folder is not the method's to keep.
    for (const c of commits) expect(sh(shop, ['diff', '--name-only', 'main', c, '--', '_bmad', '.claude', ':(exclude)_bmad/render']).trim()).toBe('');
    expect(sh(shop, ['show', `${branch}:src/work.txt`])).toBe('work\n');
    expect(sh(shop, ['log', '--format=%s', `main..${branch}`]).trim().split('\n')).toEqual(['Change the method — bmad-agent-pm', 'Drop the help']);
    // The turn is told, in its conversation; the model reads it on the next turn.
    const conversationId = a.body.data.conversationId as string;
    const notes = (await h.runtime.store.messages(conversationId)).filter((m) => m.role === 'system' && m.content.includes('installed BMAD method'));
    expect(notes).toHaveLength(1);
    expect((notes[0] as { content: string }).content).toMatch(/_bmad\/core\/config.yaml.*left out of the project's branch bmad\/method/s);
    noServerPath(await answer(new Response(JSON.stringify(notes))));
    h.model.setScript([reply.text('noted')]);
    expect((await send('ed', { message: 'and now?', conversationId })).status).toBe(200);
    const sent = JSON.stringify(h.model.chatRequests().at(-1)?.body ?? {});
    expect(sent).toContain('[server note]');
    expect(sent).toContain('left out of the project');
    // Nothing new to say: told once.
    expect((await h.runtime.store.messages(conversationId)).filter((m) => m.role === 'system' && m.content.includes('installed BMAD method'))).toHaveLength(1);
    // A merge carries none of it into the base or the project folder.
    const m = await merge('ed', id);
    expect(m.status).toBe(200);
    expect(fs.readFileSync(path.join(shop, '_bmad/core/config.yaml'), 'utf8')).toBe(sh(shop, ['show', `${commits[1]}:_bmad/core/config.yaml`]));
    expect(sh(shop, ['diff', '--name-only', `${m.body.data.commit}~1`, m.body.data.commit, '--', '_bmad', '.claude']).trim()).toBe('');
    expect(fs.existsSync(path.join(shop, '_bmad/core/module-help.csv'))).toBe(true);
    expect(fs.readFileSync(path.join(shop, 'src/work.txt'), 'utf8')).toBe('work\n');
  }, 180_000);

  it('are 404 for an unknown workspace or one of another project, 404/403 for those who may not write', async () => {
    const unknown = await send('ed', { message: 'x', workspaceId: 'ws_00000000-0000-0000-0000-000000000000' });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'E_WORKSPACE_NOT_FOUND']);
    const other = await chat(req('POST', '/api/chat', 'ada', { projectId: 'lab', agentId: 'bmad-agent-pm', stream: false, message: 'x', workspaceId: wid })).then(answer);
    expect([other.status, other.body.code]).toEqual([404, 'E_WORKSPACE_NOT_FOUND']);
    expect((await send('vic', { message: 'x', workspaceId: wid })).status).toBe(403);
    expect((await send('bob', { message: 'x', workspaceId: wid })).status).toBe(404);
  });

  it('offer run_command only in a workspace', async () => {
    h.model.reset();
    h.model.setScript([reply.toolCalls([{ name: 'run_command', arguments: { command: 'true' } }]), reply.text('done')]);
    const a = await send('ed', { message: 'outside' });
    expect(a.status).toBe(200);
    expect(a.body.data.message.functionCalls[0].result.ok).toBe(false);
    const offered = (h.model.chatRequests().at(-1)?.body as unknown as { tools?: { function: { name: string } }[] }).tools?.map((t) => t.function.name) ?? [];
    expect(offered).not.toContain('run_command');
  }, 60_000);
});

describe('setup', () => {
  it('runs the setup line once in a new workspace with network, after the 201; turns wait for it (409 meanwhile)', async () => {
    await setBuild('ada', { setup: 'sleep 1; echo "set up in $PWD" > setup-ran.txt; getent hosts localhost >/dev/null && echo resolved; cat /etc/resolv.conf >/dev/null && echo network-config' });
    const made = await create('ed', 'with-setup');
    expect(made.status).toBe(201);
    expect(made.body.data.setup).toMatchObject({ status: 'running' });
    const id = made.body.data.id as string;
    const refused = await chat(req('POST', '/api/chat', 'ed', { projectId: 'shop', agentId: 'bmad-agent-pm', stream: false, message: 'x', workspaceId: id })).then(answer);
    expect([refused.status, refused.body.code]).toEqual([409, 'E_CONFLICT']);
    await setupOf(id);
    const detail = (await one('vic', id)).body.data;
    expect(detail.setup).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(detail.setup.output).toContain('network-config');
    // The list says how the setup went, without its output.
    const item = ((await list('vic')).body.data as { id: string; setup: Record<string, unknown> }[]).find((w) => w.id === id)!;
    expect(item.setup).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(item.setup).not.toHaveProperty('output');
    noServerPath(await one('vic', id));
    const checkout = h.runtime.workspaces.checkoutPath({ id });
    expect(fs.readFileSync(path.join(checkout, 'setup-ran.txt'), 'utf8')).toBe('set up in /workspace\n');
    await setBuild('ada', { setup: 'exit 3' });
    const failing = (await create('ed', 'failing-setup')).body.data.id as string;
    await setupOf(failing);
    expect((await one('vic', failing)).body.data.setup).toMatchObject({ status: 'failed', exitCode: 3 });
    await setBuild('ada', { setup: null });
  }, 120_000);
});

describe('runs in a workspace', () => {
  it('a run with workspace: { name } makes the workspace, works in it and shows it in its view', async () => {
    h.model.reset();
    h.model.setScript('headless-complete');
    const created = await answer(await createRun(req('POST', '/api/runs', 'ed', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.', workspace: { name: 'run-ws' } })));
    expect(created.status).toBe(202);
    const runId = created.body.data.runId as string;
    let run: any = { status: 'queued' };
    for (let i = 0; i < 600 && ['queued', 'running'].includes(run.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      run = (await answer(await getRun(req('GET', `/api/runs/${runId}`, 'ed'), params({ id: runId })))).body.data;
    }
    expect(run.status).toBe('complete');
    expect(run.workspace).toMatchObject({ branch: 'bmad/run-ws', ahead: 1 });
    expect(run.workspace.id).toMatch(/^ws_/);
    expect(run.workspace.files.length).toBeGreaterThan(0);
    const written = run.workspace.files[0].path as string;
    // In the branch, not in the project folder.
    expect(sh(shop, ['show', `refs/heads/bmad/run-ws:${written}`]).length).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(shop, written))).toBe(false);
    expect(sh(shop, ['log', '-1', '--format=%an', 'refs/heads/bmad/run-ws']).trim()).toBe('Ed');
    // An unknown workspace is a 404 before anything is queued.
    const unknown = await answer(await createRun(req('POST', '/api/runs', 'ed', { projectId: 'shop', skill: 'bmad-prd', inputs: 'x', workspaceId: 'ws_nope' })));
    expect([unknown.status, unknown.body.code]).toEqual([404, 'E_WORKSPACE_NOT_FOUND']);
  }, 120_000);

  it('a refused run with workspace: { name } leaves no workspace and no branch behind', async () => {
    const refused = await answer(await createRun(req('POST', '/api/runs', 'ed', { projectId: 'shop', skill: 'bmad-no-such-skill', inputs: 'x', workspace: { name: 'refused-ws' } })));
    expect(refused.status).toBe(404);
    const open = ((await list('ed')).body.data as { name: string; status: string }[]).filter((w) => w.name === 'refused-ws' && w.status === 'open');
    expect(open).toEqual([]);
    expect(sh(shop, ['branch', '--list', 'bmad/refused-ws']).trim()).toBe('');
    // The name is free again.
    expect((await create('ed', 'refused-ws')).status).toBe(201);
  }, 60_000);
});

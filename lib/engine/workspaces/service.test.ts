import fs from 'node:fs';
import path from 'node:path';
import { commit, makeRepo, sh, tempDir, writeFiles } from '../../../test/git-repo';
import { AppError } from '../../core/errors';
import { repositoryInfo } from '../../sandbox/git';
import { MemoryWorkspaceStore } from './memory-store';
import { WorkspaceService, type ProjectRef } from './service';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

interface Setup {
  service: WorkspaceService;
  project: ProjectRef;
  repo: string;
  root: string;
}

async function setup(files?: Record<string, string>, enabled = true): Promise<Setup> {
  const base = tempDir('ws-service');
  dirs.push(base);
  const repo = makeRepo(path.join(base, 'project'), files);
  const root = path.join(base, 'data', 'workspaces');
  const service = new WorkspaceService({ store: new MemoryWorkspaceStore(), root });
  const project = { id: 'p1', root: repo };
  if (enabled) await service.putBuild('p1', { enabled: true });
  return { service, project, repo, root };
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
  return 'resolved';
}

const alice = { name: 'Alice Merger', email: 'alice@example.com' };

/** What the model's commands would do in the checkout: plain git there. */
function work(s: Setup, ws: { id: string }, files: Record<string, string>, message = 'work'): string {
  return commit(s.service.checkoutPath(ws), files, message);
}

describe('repository info', () => {
  it('shows branch, head and clean, never a path; null outside a repository', async () => {
    const s = await setup();
    const head = sh(s.repo, ['rev-parse', 'HEAD']).trim();
    expect(await repositoryInfo(s.repo)).toEqual({ branch: 'main', head, clean: true });
    fs.mkdirSync(path.join(s.repo, 'sub'));
    expect(await repositoryInfo(path.join(s.repo, 'sub'))).toEqual({ branch: 'main', head, clean: true });
    fs.appendFileSync(path.join(s.repo, 'README.md'), 'more\n');
    expect((await repositoryInfo(s.repo))!.clean).toBe(false);
    const outside = tempDir('not-a-repo');
    dirs.push(outside);
    expect(await repositoryInfo(outside)).toBeNull();
  });
});

describe('a project repository owned by another user', () => {
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  (asRoot ? it : it.skip)('is read, branched, synced and merged all the same', async () => {
    const s = await setup({ 'a.txt': 'a\n' });
    // As a repository on a volume owned by the deploy user is to a server running as another.
    fs.chownSync(s.repo, 4321, 4321);
    for (const f of fs.readdirSync(s.repo, { recursive: true }) as string[]) fs.lchownSync(path.join(s.repo, f), 4321, 4321);
    const info = await repositoryInfo(s.repo);
    expect(info).toMatchObject({ branch: 'main', clean: true });
    const ws = await s.service.create(s.project, { name: 'foreign', createdBy: 'u1' });
    work(s, ws, { 'b.txt': 'b\n' }, 'add b');
    expect((await s.service.sync(s.project, ws)).synced).toBe(true);
    const detail = await s.service.get(s.project, ws.id);
    expect(detail).toMatchObject({ ahead: 1, behind: 0 });
    expect(detail.files.map((f) => f.path)).toEqual(['b.txt']);
    const merged = await s.service.merge(s.project, ws.id, alice);
    expect(merged.fastForward).toBe(true);
    expect(fs.readFileSync(path.join(s.repo, 'b.txt'), 'utf8')).toBe('b\n');
  });
});

describe('discarding a large workspace', () => {
  it('keeps the event loop answering while its files are removed', async () => {
    const s = await setup();
    const ws = await s.service.create(s.project, { name: 'big', createdBy: 'u1' });
    const modules = path.join(s.service.checkoutPath(ws), 'node_modules');
    for (let d = 0; d < 30; d++) {
      fs.mkdirSync(path.join(modules, `pkg${d}`), { recursive: true });
      for (let f = 0; f < 500; f++) fs.writeFileSync(path.join(modules, `pkg${d}`, `f${f}.js`), '');
    }
    let worst = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last - 10);
      last = now;
    }, 10);
    try {
      expect((await s.service.discard(s.project, ws.id)).status).toBe('discarded');
    } finally {
      clearInterval(timer);
    }
    expect(fs.existsSync(s.service.checkoutPath(ws))).toBe(false);
    // fs.rmSync of these 15,000 files stalls it for a second or more on this kind of machine.
    expect(worst).toBeLessThan(700);
  }, 120_000);
});

describe('workspaces', () => {
  it('answers 409 E_BUILD_DISABLED while build is off, and E_NOT_A_REPOSITORY outside git', async () => {
    const s = await setup(undefined, false);
    expect(await s.service.getBuild('p1')).toEqual({ enabled: false, baseBranch: null, setup: null, env: {}, test: null, appendOnly: [] });
    expect(await code(s.service.create(s.project, { name: 'a', createdBy: 'u1' }))).toBe('E_BUILD_DISABLED');
    expect(await code(s.service.list('p1'))).toBe('E_BUILD_DISABLED');
    const plain = tempDir('plain');
    dirs.push(plain);
    await s.service.putBuild('p2', { enabled: true });
    expect(await code(s.service.create({ id: 'p2', root: plain }, { name: 'a', createdBy: 'u1' }))).toBe('E_NOT_A_REPOSITORY');
  });

  it('validates build settings field by field and keeps left-out fields', async () => {
    const s = await setup();
    await s.service.putBuild('p1', { setup: 'npm ci', env: { CI_FLAG: '1' } });
    expect(await s.service.getBuild('p1')).toEqual({ enabled: true, baseBranch: null, setup: 'npm ci', env: { CI_FLAG: '1' }, test: null, appendOnly: [] });
    for (const [patch, field] of [
      [{ enabled: 'yes' }, 'enabled'],
      [{ baseBranch: 'a..b' }, 'baseBranch'],
      [{ setup: 'a\nb' }, 'setup'],
      [{ env: { 'BAD-NAME': 'x' } }, 'env'],
      [{ env: { A: 1 } }, 'env'],
    ] as const) {
      const e = await s.service.putBuild('p1', patch as never).catch((x: AppError) => x);
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).code).toBe('E_VALIDATION');
      expect((e as AppError).details).toEqual({ field });
    }
  });

  it('rejects bad names (400) and taken ones (409), also when two creations race', async () => {
    const s = await setup();
    for (const bad of ['', '.hidden', '-x', 'a..b', 'a/b', 'a b', 'x.lock', 'a.', 'é', 'x'.repeat(65)]) {
      expect(await code(s.service.create(s.project, { name: bad, createdBy: 'u1' }))).toBe('E_VALIDATION');
    }
    const results = await Promise.allSettled([s.service.create(s.project, { name: 'twice', createdBy: 'u1' }), s.service.create(s.project, { name: 'twice', createdBy: 'u2' })]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((rejected.reason as AppError).code).toBe('E_CONFLICT');
    expect(await code(s.service.create(s.project, { name: 'twice', createdBy: 'u1' }))).toBe('E_CONFLICT');
    // A branch of that name made by someone else is not taken over.
    sh(s.repo, ['branch', 'bmad/handmade']);
    expect(await code(s.service.create(s.project, { name: 'handmade', createdBy: 'u1' }))).toBe('E_CONFLICT');
    expect((await s.service.list('p1')).map((w) => w.name)).toEqual(['twice']);
  });

  it('lives through create, work, sync, get, diff, fast-forward merge and discard', async () => {
    const s = await setup();
    const baseCommit = sh(s.repo, ['rev-parse', 'HEAD']).trim();
    const ws = await s.service.create(s.project, { name: 'story-1.2', createdBy: 'u1' });
    expect(ws).toMatchObject({ name: 'story-1.2', branch: 'bmad/story-1.2', base: 'main', baseCommit, status: 'open', createdBy: 'u1', setup: null });
    expect(JSON.stringify(ws)).not.toContain(s.root);
    // The branch is in the project repository from the start; the clone is outside the project folder.
    expect(sh(s.repo, ['rev-parse', 'refs/heads/bmad/story-1.2']).trim()).toBe(baseCommit);
    const dir = s.service.checkoutPath(ws);
    expect(dir.startsWith(s.root)).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'src/app.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
    expect(sh(dir, ['symbolic-ref', '--short', 'HEAD']).trim()).toBe('bmad/story-1.2');
    expect(sh(dir, ['remote']).trim()).toBe('');
    // Nothing in the clone names a server path (its reflogs, config, refs).
    const leaks = (folder: string): string[] =>
      fs.readdirSync(folder, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(folder, e.name);
        if (e.isDirectory()) return leaks(p);
        return fs.readFileSync(p).includes(Buffer.from(path.dirname(s.repo))) ? [path.relative(dir, p)] : [];
      });
    expect(leaks(path.join(dir, '.git'))).toEqual([]);
    expect(sh(dir, ['rev-parse', 'main']).trim()).toBe(baseCommit);

    // Committed by a command, and a file tool's edit left uncommitted until the turn's end.
    const c1 = work(s, ws, { 'src/app.txt': 'one\nTWO\nthree\nfour\n', 'src/new.txt': 'new\n' }, 'Edit app');
    writeFiles(dir, { 'notes.md': 'by a file tool\n' });
    const synced = await s.service.sync(s.project, ws, { commit: { name: 'Bob', email: 'bob@example.com', message: 'Turn changes' } });
    expect(synced.synced).toBe(true);
    expect(synced.committed).toBe(true);
    const head = sh(dir, ['rev-parse', 'HEAD']).trim();
    expect(synced.head).toBe(head);
    expect(sh(s.repo, ['rev-parse', 'refs/heads/bmad/story-1.2']).trim()).toBe(head);
    expect(sh(dir, ['log', '-1', '--format=%an <%ae> %s']).trim()).toBe('Bob <bob@example.com> Turn changes');
    // Only that ref moved in the project repository.
    expect(sh(s.repo, ['for-each-ref', '--format=%(refname)']).trim().split('\n').sort()).toEqual(['refs/heads/bmad/story-1.2', 'refs/heads/main']);

    const detail = await s.service.get(s.project, ws.id);
    expect(detail).toMatchObject({ head, ahead: 2, behind: 0, status: 'open' });
    expect(detail.files).toEqual([
      { path: 'notes.md', status: 'added', additions: 1, deletions: 0 },
      { path: 'src/app.txt', status: 'modified', additions: 2, deletions: 1 },
      { path: 'src/new.txt', status: 'added', additions: 1, deletions: 0 },
    ]);
    expect(detail.commits.map((c) => [c.sha, c.subject, c.author])).toEqual([
      [head, 'Turn changes', 'Bob'],
      [c1, 'Edit app', 'Test'],
    ]);
    expect(Date.parse(detail.commits[0]!.date)).not.toBeNaN();

    const all = await s.service.diff(s.project, ws.id);
    expect(all.cut).toBe(false);
    expect(all.diff).toContain('diff --git a/src/app.txt b/src/app.txt');
    expect(all.diff).toContain('+TWO');
    expect(all.diff).toContain('+by a file tool');
    const one = await s.service.diff(s.project, ws.id, { path: 'src/new.txt' });
    expect(one.diff).toContain('+new');
    expect(one.diff).not.toContain('app.txt');
    expect(await code(s.service.diff(s.project, ws.id, { path: '../outside.txt' }))).toBe('E_VALIDATION');
    expect((await s.service.diff(s.project, ws.id, { path: 'src/*.txt' })).diff).toBe('');

    const merged = await s.service.merge(s.project, ws.id, alice);
    expect(merged).toMatchObject({ commit: head, fastForward: true, checkoutUpdated: true });
    expect(merged.workspace.status).toBe('merged');
    expect(sh(s.repo, ['rev-parse', 'main']).trim()).toBe(head);
    expect(fs.readFileSync(path.join(s.repo, 'notes.md'), 'utf8')).toBe('by a file tool\n');
    expect(sh(s.repo, ['status', '--porcelain']).trim()).toBe('');
    // A merged workspace still shows what it brought.
    const after = await s.service.get(s.project, ws.id);
    expect(after.files.map((f) => f.path)).toEqual(['notes.md', 'src/app.txt', 'src/new.txt']);
    expect(await code(s.service.merge(s.project, ws.id, alice))).toBe('E_CONFLICT');

    const gone = await s.service.discard(s.project, ws.id);
    expect(gone.status).toBe('discarded');
    expect(fs.existsSync(dir)).toBe(false);
    expect(sh(s.repo, ['branch', '--list', 'bmad/*']).trim()).toBe('');
    expect(await s.service.list('p1')).toEqual([]);
    // The name is free again once discarded.
    const again = await s.service.create(s.project, { name: 'story-1.2', createdBy: 'u1' });
    expect(again.id).not.toBe(ws.id);
  });

  it('makes a merge commit by the person who merged when the base moved on, and counts behind', async () => {
    const s = await setup();
    const ws = await s.service.create(s.project, { name: 'feature', createdBy: 'u1' });
    work(s, ws, { 'src/feature.txt': 'feature\n' });
    await s.service.sync(s.project, ws);
    const moved = commit(s.repo, { 'README.md': '# demo\nbase moved\n' }, 'Base work');
    const detail = await s.service.get(s.project, ws.id);
    expect(detail).toMatchObject({ ahead: 1, behind: 1 });
    expect(detail.files.map((f) => f.path)).toEqual(['src/feature.txt']);

    const merged = await s.service.merge(s.project, ws.id, alice);
    expect(merged.fastForward).toBe(false);
    expect(merged.checkoutUpdated).toBe(true);
    const main = sh(s.repo, ['rev-parse', 'main']).trim();
    expect(main).toBe(merged.commit);
    expect(sh(s.repo, ['log', '-1', '--format=%P|%cn <%ce>|%an|%s', 'main']).trim()).toBe(`${moved} ${detail.head}|Alice Merger <alice@example.com>|Alice Merger|Merge branch 'bmad/feature' into main`);
    expect(fs.readFileSync(path.join(s.repo, 'src/feature.txt'), 'utf8')).toBe('feature\n');
    expect(sh(s.repo, ['status', '--porcelain']).trim()).toBe('');
  });

  it('leaves base, checkout and workspace exactly as they were on a conflict', async () => {
    const s = await setup();
    const ws = await s.service.create(s.project, { name: 'clash', createdBy: 'u1' });
    work(s, ws, { 'src/app.txt': 'workspace\n', 'src/other.txt': 'x\n' });
    await s.service.sync(s.project, ws);
    commit(s.repo, { 'src/app.txt': 'base\n' });
    const snapshot = () => [sh(s.repo, ['for-each-ref']), sh(s.repo, ['status', '--porcelain']), fs.readFileSync(path.join(s.repo, 'src/app.txt'), 'utf8'), sh(s.repo, ['ls-files', '-s']), sh(s.service.checkoutPath(ws), ['rev-parse', 'HEAD'])];
    const before = snapshot();
    const e = (await s.service.merge(s.project, ws.id, alice).catch((x: AppError) => x)) as AppError;
    expect(e.code).toBe('E_MERGE_CONFLICT');
    expect(e.details).toEqual({ paths: ['src/app.txt'] });
    expect(snapshot()).toEqual(before);
    expect((await s.service.get(s.project, ws.id)).status).toBe('open');
  });

  it('refuses a dirty base checkout with E_BASE_DIRTY before touching anything; works when the base is not checked out', async () => {
    const s = await setup();
    const ws = await s.service.create(s.project, { name: 'dirty', createdBy: 'u1' });
    work(s, ws, { 'src/x.txt': 'x\n' });
    await s.service.sync(s.project, ws);
    const main = sh(s.repo, ['rev-parse', 'main']).trim();
    fs.appendFileSync(path.join(s.repo, 'README.md'), 'uncommitted\n');
    expect(await code(s.service.merge(s.project, ws.id, alice))).toBe('E_BASE_DIRTY');
    expect(sh(s.repo, ['rev-parse', 'main']).trim()).toBe(main);
    expect(fs.readFileSync(path.join(s.repo, 'README.md'), 'utf8')).toBe('# demo\nuncommitted\n');
    // With another branch checked out, the project folder is not the merge's business.
    sh(s.repo, ['stash', '-q']);
    sh(s.repo, ['checkout', '-q', '-b', 'elsewhere']);
    fs.appendFileSync(path.join(s.repo, 'README.md'), 'dirty on another branch\n');
    const merged = await s.service.merge(s.project, ws.id, alice);
    expect(merged.checkoutUpdated).toBe(false);
    expect(sh(s.repo, ['rev-parse', 'main']).trim()).toBe(merged.commit);
    expect(fs.existsSync(path.join(s.repo, 'src/x.txt'))).toBe(false);
  });

  it('caps a diff at 1 MB, saying so, on a huge file and on a one-line minified file, in linear time', async () => {
    const s = await setup();
    const ws = await s.service.create(s.project, { name: 'big', createdBy: 'u1' });
    const lines = Array.from({ length: 400_000 }, (_, i) => `line ${i} ${'x'.repeat(20)}`).join('\n');
    const minified = 'var a=1;'.repeat(1_500_000);
    work(s, ws, { 'huge.txt': lines, 'app.min.js': minified });
    await s.service.sync(s.project, ws);
    for (const p of [undefined, 'huge.txt', 'app.min.js']) {
      const started = performance.now();
      const d = await s.service.diff(s.project, ws.id, p ? { path: p } : {});
      const ms = performance.now() - started;
      expect(d.cut).toBe(true);
      expect(d.bytes).toBeLessThanOrEqual(1024 * 1024);
      expect(d.bytes).toBeGreaterThan(1024 * 1024 - 8);
      expect(ms).toBeLessThan(10_000);
    }
    const detail = await s.service.get(s.project, ws.id);
    expect(detail.files).toEqual([
      { path: 'app.min.js', status: 'added', additions: 1, deletions: 0 },
      { path: 'huge.txt', status: 'added', additions: 400_000, deletions: 0 },
    ]);
  }, 60_000);

  it('keeps two workspaces apart while both are used at once', async () => {
    const s = await setup();
    const [a, b] = await Promise.all([s.service.create(s.project, { name: 'a', createdBy: 'u1' }), s.service.create(s.project, { name: 'b', createdBy: 'u2' })]);
    await Promise.all(
      [a, b].map(async (ws) => {
        for (let i = 0; i < 3; i++) {
          work(s, ws, { [`${ws.name}/${i}.txt`]: `${i}\n` }, `${ws.name} ${i}`);
          await s.service.sync(s.project, ws);
        }
      }),
    );
    const [da, db] = await Promise.all([s.service.get(s.project, a.id), s.service.get(s.project, b.id)]);
    expect(da.files.map((f) => f.path)).toEqual(['a/0.txt', 'a/1.txt', 'a/2.txt']);
    expect(db.files.map((f) => f.path)).toEqual(['b/0.txt', 'b/1.txt', 'b/2.txt']);
    expect(fs.existsSync(path.join(s.service.checkoutPath(a), 'b'))).toBe(false);
    await s.service.merge(s.project, a.id, alice);
    const mb = await s.service.merge(s.project, b.id, alice);
    expect(mb.fastForward).toBe(false);
    expect(fs.readdirSync(path.join(s.repo)).sort()).toEqual(['.git', 'README.md', 'a', 'b', 'src']);
  });

  it('moves only its own branch in the project repository, rewritten history included', async () => {
    const s = await setup();
    const [a, b] = await Promise.all([s.service.create(s.project, { name: 'a', createdBy: 'u1' }), s.service.create(s.project, { name: 'b', createdBy: 'u1' })]);
    work(s, b, { 'b.txt': 'b\n' });
    await s.service.sync(s.project, b);
    const refsBefore = sh(s.repo, ['for-each-ref', '--format=%(refname) %(objectname)']);
    const dir = s.service.checkoutPath(a);
    const first = work(s, a, { 'a.txt': 'a\n' }, 'first');
    // The model's commands try the other refs in their clone: the base, another workspace's branch, a tag.
    sh(dir, ['branch', '-f', 'main', first]);
    sh(dir, ['branch', '-f', 'bmad/b', first]);
    sh(dir, ['tag', 'v9', first]);
    await s.service.sync(s.project, a);
    const refsAfter = sh(s.repo, ['for-each-ref', '--format=%(refname) %(objectname)']);
    expect(refsAfter.replace(/^refs\/heads\/bmad\/a .*$/m, '')).toBe(refsBefore.replace(/^refs\/heads\/bmad\/a .*$/m, ''));
    expect(sh(s.repo, ['rev-parse', 'bmad/a']).trim()).toBe(first);
    // History rewritten in the workspace (amend): the branch is the workspace's own, it follows.
    sh(dir, ['commit', '-q', '--amend', '-m', 'first, amended']);
    const amended = sh(dir, ['rev-parse', 'HEAD']).trim();
    expect((await s.service.sync(s.project, a)).head).toBe(amended);
    expect(sh(s.repo, ['rev-parse', 'bmad/a']).trim()).toBe(amended);
    expect(sh(s.repo, ['tag']).trim()).toBe('');
  });

  it('serves a sync from the clone alone: a .git file or alternates pointing at another host repository bring nothing of it', async () => {
    const s = await setup();
    const decoyBase = tempDir('decoy');
    dirs.push(decoyBase);
    const decoy = makeRepo(path.join(decoyBase, 'other-project'), { 'secret.txt': 'another project\'s secret\n' });
    const ws = await s.service.create(s.project, { name: 'redirect', createdBy: 'u1' });
    sh(decoy, ['branch', 'bmad/redirect']);
    const secret = sh(decoy, ['rev-parse', 'HEAD']).trim();
    const dir = s.service.checkoutPath(ws);
    const before = sh(s.repo, ['rev-parse', 'bmad/redirect']).trim();
    const absent = () => {
      expect(() => sh(s.repo, ['cat-file', '-e', `${secret}^{commit}`])).toThrow();
      expect(sh(s.repo, ['rev-parse', 'bmad/redirect']).trim()).toBe(before);
    };
    // Alternates naming the other repository's objects, and the branch set to its commit.
    fs.writeFileSync(path.join(dir, '.git', 'objects', 'info', 'alternates'), `${path.join(decoy, '.git', 'objects')}\n`);
    fs.writeFileSync(path.join(dir, '.git', 'refs', 'heads', 'bmad', 'redirect'), `${secret}\n`);
    expect((await s.service.sync(s.project, ws)).synced).toBe(false);
    absent();
    // The clone's .git replaced by a file sending git to the other repository.
    fs.renameSync(path.join(dir, '.git'), path.join(dir, 'old-git'));
    fs.writeFileSync(path.join(dir, '.git'), `gitdir: ${path.join(decoy, '.git')}\n`);
    expect((await s.service.sync(s.project, ws)).synced).toBe(false);
    absent();
    // The same fetch without the sandbox would have brought it (the test can fail).
    sh(s.repo, ['fetch', '-q', dir, 'refs/heads/bmad/redirect:refs/heads/probe']);
    expect(sh(s.repo, ['rev-parse', 'probe']).trim()).toBe(secret);
  });

  it('lands two merges into one base from two instances at once (the loser of the compare-and-swap starts over)', async () => {
    const s = await setup();
    const other = new WorkspaceService({ store: s.service.store, root: s.root });
    const [a, b] = await Promise.all([s.service.create(s.project, { name: 'left', createdBy: 'u1' }), other.create(s.project, { name: 'right', createdBy: 'u1' })]);
    work(s, a, { 'left.txt': 'l\n' });
    work(s, b, { 'right.txt': 'r\n' });
    sh(s.repo, ['checkout', '-q', '--detach']);
    const [ma, mb] = await Promise.all([s.service.merge(s.project, a.id, alice), other.merge(s.project, b.id, alice)]);
    const main = sh(s.repo, ['rev-parse', 'main']).trim();
    expect([ma.commit, mb.commit]).toContain(main);
    expect(sh(s.repo, ['ls-tree', '--name-only', 'main']).trim().split('\n')).toEqual(expect.arrayContaining(['left.txt', 'right.txt']));
  });

  it('lists renames, deletions and binary files with their counts', async () => {
    const s = await setup({ 'README.md': 'r\n', 'old/name.txt': 'a\nb\nc\nd\ne\n', 'gone.txt': 'x\ny\n' });
    const ws = await s.service.create(s.project, { name: 'shapes', createdBy: 'u1' });
    const dir = s.service.checkoutPath(ws);
    fs.mkdirSync(path.join(dir, 'new'));
    sh(dir, ['mv', 'old/name.txt', 'new/name.txt']);
    sh(dir, ['rm', '-q', 'gone.txt']);
    fs.writeFileSync(path.join(dir, 'logo.bin'), Buffer.from([0, 1, 2, 0, 255, 0]));
    work(s, ws, {});
    await s.service.sync(s.project, ws);
    expect((await s.service.get(s.project, ws.id)).files).toEqual([
      { path: 'gone.txt', status: 'deleted', additions: 0, deletions: 2 },
      { path: 'logo.bin', status: 'added', additions: null, deletions: null },
      { path: 'new/name.txt', status: 'renamed', additions: 0, deletions: 0 },
    ]);
  });

  it('answers 404 for another project\'s workspace and records the setup outcome', async () => {
    const s = await setup();
    const ws = await s.service.create(s.project, { name: 'mine', createdBy: 'u1' });
    await s.service.putBuild('p2', { enabled: true });
    const other = { id: 'p2', root: s.repo };
    expect(await code(s.service.get(other, ws.id))).toBe('E_WORKSPACE_NOT_FOUND');
    expect(await code(s.service.diff(other, ws.id))).toBe('E_WORKSPACE_NOT_FOUND');
    expect(await code(s.service.merge(other, ws.id, alice))).toBe('E_WORKSPACE_NOT_FOUND');
    expect(await code(s.service.discard(other, ws.id))).toBe('E_WORKSPACE_NOT_FOUND');
    expect(await code(s.service.get(s.project, 'ws_nope'))).toBe('E_WORKSPACE_NOT_FOUND');
    const at = new Date().toISOString();
    await s.service.recordSetup(ws.id, { status: 'ok', exitCode: 0, output: 'added 3 packages', durationMs: 1200, at });
    expect((await s.service.get(s.project, ws.id)).setup).toEqual({ status: 'ok', exitCode: 0, output: 'added 3 packages', durationMs: 1200, at });
  });

  it('works for a project folder inside its repository', async () => {
    const s = await setup({ 'apps/web/index.txt': 'web\n', 'README.md': 'r\n' });
    const project = { id: 'p1', root: path.join(s.repo, 'apps', 'web') };
    const ws = await s.service.create(project, { name: 'sub', createdBy: 'u1' });
    const inside = s.service.projectRootIn(project, ws);
    expect(inside).toBe(path.join(s.service.checkoutPath(ws), 'apps', 'web'));
    expect(fs.readFileSync(path.join(inside, 'index.txt'), 'utf8')).toBe('web\n');
  });
});

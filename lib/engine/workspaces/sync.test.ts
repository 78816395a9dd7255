import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { commit, makeRepo, sh, tempDir, writeFiles } from '../../../test/git-repo';
import { AppError } from '../../core/errors';
import { MemoryWorkspaceStore } from './memory-store';
import { WorkspaceService, type ProjectRef } from './service';

/**
 * The branch sync as a turn and the readers use it, on real git and real bubblewrap: what it
 * costs when nothing changed, the quota it keeps, what a discard removes, the method it keeps as
 * the base has it, and stale git locks.
 */
jest.setTimeout(120_000);

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const MB = 1024 * 1024;
const alice = { name: 'Alice Merger', email: 'alice@example.com' };

interface Setup {
  service: WorkspaceService;
  project: ProjectRef;
  repo: string;
  /** How many times bubblewrap was started (the clone's commit and weighing, and each fetch's upload-pack). */
  bwrapRuns: () => number;
  /** Another service on the same rows and clones (another instance, or a restart), with its own quota. */
  another: (maxMb: number) => WorkspaceService;
}

function setup(opts: { files?: Record<string, string>; maxMb?: number } = {}): Setup {
  const base = tempDir('ws-sync');
  dirs.push(base);
  const repo = makeRepo(path.join(base, 'project'), opts.files);
  // bubblewrap behind a counter: every sandboxed git of the sync passes here.
  const counter = path.join(base, 'bwrap-runs');
  const bwrap = path.join(base, 'bwrap');
  fs.writeFileSync(bwrap, `#!/bin/sh\necho x >> '${counter}'\nexec /usr/bin/bwrap "$@"\n`, { mode: 0o755 });
  const store = new MemoryWorkspaceStore();
  const make = (maxMb?: number) => new WorkspaceService({ store, root: path.join(base, 'workspaces'), bwrap, ...(maxMb ? { maxBytes: maxMb * MB } : {}) });
  const bwrapRuns = () => (fs.existsSync(counter) ? fs.readFileSync(counter, 'utf8').split('\n').filter(Boolean).length : 0);
  return { service: make(opts.maxMb), project: { id: 'p1', root: repo }, repo, bwrapRuns, another: make };
}

async function enabled(s: Setup): Promise<void> {
  await s.service.putBuild('p1', { enabled: true });
}

async function failure(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('resolved');
}

/** Bytes under a folder, as du(1) counts them. */
function du(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
}

const random = (bytes: number) => crypto.randomBytes(bytes).toString('base64');

describe('a sync with nothing new', () => {
  it('starts no sandbox and fetches nothing; a new commit in the clone is carried by the next reader', async () => {
    const s = setup();
    await enabled(s);
    const ws = await s.service.create(s.project, { name: 'quiet', createdBy: 'u1' });
    const before = s.bwrapRuns();
    for (let i = 0; i < 5; i++) expect(await s.service.sync(s.project, ws)).toMatchObject({ synced: true, head: ws.baseCommit });
    await s.service.get(s.project, ws.id);
    await s.service.summaries(s.project);
    expect(s.bwrapRuns()).toBe(before);
    // A command's commit: nothing moves until something reads the branch (or the turn ends).
    const made = commit(s.service.checkoutPath(ws), { 'a.txt': 'a\n' }, 'by a command');
    expect(sh(s.repo, ['rev-parse', 'refs/heads/bmad/quiet']).trim()).toBe(ws.baseCommit);
    const detail = await s.service.get(s.project, ws.id);
    expect(detail).toMatchObject({ head: made, ahead: 1 });
    const carried = s.bwrapRuns();
    expect(carried).toBeGreaterThan(before);
    expect((await s.service.sync(s.project, ws)).head).toBe(made);
    expect(s.bwrapRuns()).toBe(carried);
    // Nothing of the sync's own is left in the repository.
    expect(sh(s.repo, ['for-each-ref', '--format=%(refname)']).trim().split('\n').sort()).toEqual(['refs/heads/bmad/quiet', 'refs/heads/main']);
  });

  it('lists ahead and behind per workspace, 0 and 0 once merged, with where, when and by whom it was merged', async () => {
    const s = setup();
    await enabled(s);
    const a = await s.service.create(s.project, { name: 'a', createdBy: 'u1' });
    const b = await s.service.create(s.project, { name: 'b', createdBy: 'u1' });
    commit(s.service.checkoutPath(a), { 'a1.txt': '1\n' });
    commit(s.service.checkoutPath(a), { 'a2.txt': '2\n' });
    commit(s.repo, { 'base.txt': 'moved\n' }, 'base moves');
    let list = await s.service.summaries(s.project);
    expect(list.map((w) => [w.name, w.ahead, w.behind])).toEqual([
      ['b', 0, 1],
      ['a', 2, 1],
    ]);
    const m = await s.service.merge(s.project, a.id, alice);
    expect(m.workspace).toMatchObject({ status: 'merged', mergedCommit: m.commit, mergedInto: 'main', mergedBy: 'Alice Merger' });
    expect(Date.parse(m.workspace.mergedAt!)).toBeGreaterThan(Date.now() - 60_000);
    list = await s.service.summaries(s.project);
    expect(list.find((w) => w.name === 'a')).toMatchObject({ status: 'merged', ahead: 0, behind: 0, mergedInto: 'main' });
    expect(await s.service.get(s.project, a.id)).toMatchObject({ ahead: 0, behind: 0, mergedInto: 'main' });
    // The base moved once, then took a's two commits and its merge commit.
    expect(list.find((w) => w.name === 'b')).toMatchObject({ ahead: 0, behind: 4 });
  });
});

describe('the quota', () => {
  it('refuses to carry more than WORKSPACE_MAX_MB into the project repository: the branch stays, its .git does not grow, the turn is told', async () => {
    const s = setup({ maxMb: 32 });
    await enabled(s);
    const ws = await s.service.create(s.project, { name: 'heavy', createdBy: 'u1' });
    const checkout = s.service.checkoutPath(ws);
    const files: Record<string, string> = {};
    // Fifteen random (incompressible) files of 4 MB, 60 MB in all.
    for (let i = 0; i < 15; i++) files[`blob${i}.bin`] = random(3 * MB);
    commit(checkout, files, 'fifteen big files');
    const gitBefore = du(path.join(s.repo, '.git'));
    const r = await s.service.sync(s.project, ws);
    expect(r.synced).toBe(false);
    expect(r.refused).toMatchObject({ code: 'E_TOO_LARGE' });
    // 60 MB of base64 text, about 45 MB once compressed as git keeps it.
    expect(r.refused!.message).toMatch(/hold 4\d MB .* 32 MB .*WORKSPACE_MAX_MB/);
    expect(r.head).toBe(ws.baseCommit);
    expect(sh(s.repo, ['rev-parse', 'refs/heads/bmad/heavy']).trim()).toBe(ws.baseCommit);
    expect(du(path.join(s.repo, '.git')) - gitBefore).toBeLessThan(MB);
    // Remembered for that commit: readers do not weigh it again, and a merge is refused.
    const runs = s.bwrapRuns();
    expect((await s.service.sync(s.project, ws)).refused?.code).toBe('E_TOO_LARGE');
    expect(s.bwrapRuns()).toBe(runs);
    const refusedMerge = await failure(s.service.merge(s.project, ws.id, alice));
    expect([refusedMerge.code, refusedMerge.status]).toEqual(['E_TOO_LARGE', 413]);
    expect(sh(s.repo, ['rev-parse', 'main']).trim()).toBe(ws.baseCommit);
    // A server restarted with a larger quota weighs it again: carried.
    const larger = s.another(128);
    expect(await larger.sync(s.project, ws)).toMatchObject({ synced: true, head: sh(checkout, ['rev-parse', 'HEAD']).trim() });
    expect(du(path.join(s.repo, '.git')) - gitBefore).toBeGreaterThan(32 * MB);
    await larger.discard(s.project, ws.id);
    expect(du(path.join(s.repo, '.git')) - gitBefore).toBeLessThan(MB);
  });

  it('carries a branch again once its history is back under the quota', async () => {
    const s = setup({ maxMb: 32 });
    await enabled(s);
    const ws = await s.service.create(s.project, { name: 'heavy', createdBy: 'u1' });
    const checkout = s.service.checkoutPath(ws);
    commit(checkout, { 'big.bin': random(40 * MB) }, 'big');
    const gitBefore = du(path.join(s.repo, '.git'));
    expect((await s.service.sync(s.project, ws)).refused?.code).toBe('E_TOO_LARGE');
    // Under the quota again (history rewritten without them): carried.
    sh(checkout, ['reset', '-q', '--hard', ws.baseCommit]);
    const light = commit(checkout, { 'small.txt': 'small\n' }, 'small');
    expect(await s.service.sync(s.project, ws)).toMatchObject({ synced: true, head: light });
    expect(du(path.join(s.repo, '.git')) - gitBefore).toBeLessThan(MB);
  });

  it('weighs again what the fetch brought, in the project repository: a clone that says it is light is refused all the same and its objects removed', async () => {
    const s = setup({ maxMb: 16 });
    await enabled(s);
    const ws = await s.service.create(s.project, { name: 'liar', createdBy: 'u1' });
    const checkout = s.service.checkoutPath(ws);
    commit(checkout, { 'big.bin': random(20 * MB) }, 'big');
    // A clone whose own weighing says it is light (the model's repository may make its git lie).
    const gitBefore = du(path.join(s.repo, '.git'));
    const internal = s.service as unknown as { readClone: () => Promise<{ committed: boolean; usage: number }> };
    internal.readClone = async () => ({ committed: false, usage: 1 });
    const r = await s.service.sync(s.project, ws);
    expect(r.refused?.code).toBe('E_TOO_LARGE');
    expect(sh(s.repo, ['rev-parse', 'refs/heads/bmad/liar']).trim()).toBe(ws.baseCommit);
    expect(du(path.join(s.repo, '.git')) - gitBefore).toBeLessThan(MB);
  });
});

describe('discard', () => {
  it("removes the objects a workspace brought into the project repository, loose or packed, and nothing else's", async () => {
    const s = setup({ maxMb: 64 });
    await enabled(s);
    const keep = await s.service.create(s.project, { name: 'keep', createdBy: 'u1' });
    const kept = commit(s.service.checkoutPath(keep), { 'kept.bin': random(2 * MB) }, 'kept');
    await s.service.sync(s.project, keep);
    // The person's own unreachable object stays: only what the workspace brought is removed.
    const own = sh(s.repo, ['hash-object', '-w', '--stdin'], 'a dangling object of the person\n').trim();
    const gitBefore = du(path.join(s.repo, '.git'));
    for (const [name, pack] of [['loose', false], ['packed', true]] as const) {
      const ws = await s.service.create(s.project, { name, createdBy: 'u1' });
      const checkout = s.service.checkoutPath(ws);
      for (let i = 0; i < 3; i++) commit(checkout, { [`f${i}.bin`]: random(3 * MB) }, `big ${i}`);
      // A history rewritten on the way: the first head synced is no longer the branch's.
      await s.service.sync(s.project, ws);
      sh(checkout, ['commit', '-q', '--amend', '-m', 'amended']);
      const head = sh(checkout, ['rev-parse', 'HEAD']).trim();
      expect((await s.service.sync(s.project, ws)).head).toBe(head);
      expect(du(path.join(s.repo, '.git')) - gitBefore).toBeGreaterThan(10 * MB);
      // The person's own gc packed everything meanwhile.
      if (pack) sh(s.repo, ['-c', 'gc.auto=0', 'repack', '-a', '-d', '-q']);
      await s.service.discard(s.project, ws.id);
      expect(Math.abs(du(path.join(s.repo, '.git')) - gitBefore)).toBeLessThan(2 * MB);
      expect(() => sh(s.repo, ['cat-file', '-e', head])).toThrow();
    }
    expect(sh(s.repo, ['cat-file', '-t', kept]).trim()).toBe('commit');
    expect(sh(s.repo, ['show', 'refs/heads/bmad/keep:kept.bin']).length).toBeGreaterThan(MB);
    expect(sh(s.repo, ['cat-file', '-t', own]).trim()).toBe('blob');
    expect(sh(s.repo, ['fsck', '--connectivity-only', '--no-dangling'])).toBe('');
  });
});

describe('syncs and discards at once', () => {
  it('never remove an object another workspace is bringing in: two instances, shared contents, the repository stays whole', async () => {
    const s = setup();
    await enabled(s);
    const other = s.another(2048);
    for (let round = 0; round < 3; round++) {
      const shared = { 'shared.txt': `the same content ${round}\n`, 'also.bin': random(64 * 1024) };
      const a = await s.service.create(s.project, { name: `a${round}`, createdBy: 'u1' });
      const b = await other.create(s.project, { name: `b${round}`, createdBy: 'u1' });
      commit(other.checkoutPath(b), shared, 'b has it first');
      await other.sync(s.project, b);
      commit(s.service.checkoutPath(a), shared, 'a brings the same');
      // a's fetch finds the objects there already; b's discard would remove them if it ran in between.
      const [synced] = await Promise.all([s.service.sync(s.project, a), other.discard(s.project, b.id)]);
      expect(synced.synced).toBe(true);
      expect(sh(s.repo, ['show', `refs/heads/bmad/a${round}:shared.txt`])).toBe(shared['shared.txt']);
      expect(sh(s.repo, ['fsck', '--connectivity-only', '--no-dangling'])).toBe('');
    }
  });
});

describe('the method', () => {
  const METHOD = {
    'README.md': '# shop\n',
    '_bmad/_config/manifest.yaml': 'modules: [bmm]\n',
    '_bmad/core/tasks/task.md': 'the task\n',
    '_bmad/render/.keep': '',
    '.claude/skills/bmad-dev/SKILL.md': 'the dev skill\n',
    '.claude/skills/bmad-dev/steps/one.md': 'step one\n',
    'src/app.txt': 'one\n',
  };

  it("never reaches the project's branch: commits keep their other changes, authors and messages; the render folder is carried; told once", async () => {
    const s = setup({ files: METHOD });
    await enabled(s);
    const ws = await s.service.create(s.project, { name: 'guarded', createdBy: 'u1' });
    const checkout = s.service.checkoutPath(ws);
    // A change to the method's index only, hidden from the working tree.
    const evil = sh(checkout, ['hash-object', '-w', '--stdin'], 'changed task\n').trim();
    sh(checkout, ['update-index', '--cacheinfo', `100644,${evil},_bmad/core/tasks/task.md`]);
    sh(checkout, ['update-index', '--skip-worktree', '_bmad/core/tasks/task.md']);
    writeFiles(checkout, { 'src/app.txt': 'two\n' });
    sh(checkout, ['add', 'src/app.txt']);
    sh(checkout, ['commit', '-q', '--author', 'Model <model@example.com>', '-m', 'first: app and a sneaky task']);
    expect(sh(checkout, ['status', '--porcelain'])).toBe('');
    // A plain commit of the method and a skill, with work beside it; then the render folder.
    commit(checkout, { '_bmad/core/new.md': 'new\n', '.claude/skills/bmad-dev/SKILL.md': 'a new dev\n', 'src/more.txt': 'more\n' }, 'second: more and the method');
    commit(checkout, { '_bmad/render/skill.md': 'rendered\n' }, 'third: render');
    const r = await s.service.sync(s.project, ws);
    expect(r.synced).toBe(true);
    expect(r.dropped).toMatchObject({ commits: 2, paths: ['.claude/skills/bmad-dev/SKILL.md', '_bmad/core/new.md', '_bmad/core/tasks/task.md'] });
    const branch = 'refs/heads/bmad/guarded';
    // Every commit's tree has the base's method; the rest is carried.
    for (const rev of [branch, `${branch}~1`, `${branch}~2`]) {
      expect(sh(s.repo, ['diff', '--name-only', ws.baseCommit, rev, '--', '_bmad', '.claude', ':(exclude)_bmad/render']).trim()).toBe('');
    }
    expect(sh(s.repo, ['show', `${branch}:src/app.txt`])).toBe('two\n');
    expect(sh(s.repo, ['show', `${branch}:src/more.txt`])).toBe('more\n');
    expect(sh(s.repo, ['show', `${branch}:_bmad/render/skill.md`])).toBe('rendered\n');
    expect(sh(s.repo, ['log', '--format=%an|%s', `${ws.baseCommit}..${branch}`]).trim().split('\n')).toEqual(['Test|third: render', 'Test|second: more and the method', 'Model|first: app and a sneaky task']);
    // Authors, committers, dates and messages byte for byte as the clone has them.
    const shape = (dir: string, rev: string) => sh(dir, ['log', '--format=%an|%ae|%ad|%cn|%ce|%cd|%B', `${ws.baseCommit}..${rev}`]);
    expect(shape(s.repo, branch)).toBe(shape(checkout, 'HEAD'));
    expect(() => sh(s.repo, ['cat-file', '-e', evil])).toThrow();
    // Told once: the next sync (nothing new, or new work) carries the same rewrite and says nothing of it again.
    const again = commit(checkout, { 'src/later.txt': 'later\n' }, 'fourth');
    const next = await s.service.sync(s.project, ws);
    expect(next.dropped).toBeUndefined();
    expect(sh(s.repo, ['rev-parse', `${branch}~1`]).trim()).toBe(r.head);
    expect(sh(s.repo, ['log', '-1', '--format=%s', branch]).trim()).toBe('fourth');
    expect(again).not.toBe(next.head);
    // A merge carries none of it.
    await s.service.merge(s.project, ws.id, alice);
    expect(sh(s.repo, ['show', 'main:_bmad/core/tasks/task.md'])).toBe('the task\n');
    expect(fs.readFileSync(path.join(s.repo, '.claude/skills/bmad-dev/SKILL.md'), 'utf8')).toBe('the dev skill\n');
    expect(fs.existsSync(path.join(s.repo, '_bmad/core/new.md'))).toBe(false);
  });

  it('keeps the method of a project folder inside its repository; a repository with no method is not rewritten', async () => {
    const s = setup({ files: Object.fromEntries(Object.entries(METHOD).map(([k, v]) => [`apps/shop/${k}`, v])) });
    const project = { id: 'p1', root: path.join(s.repo, 'apps/shop') };
    await enabled(s);
    const ws = await s.service.create(project, { name: 'nested', createdBy: 'u1' });
    const head = commit(s.service.checkoutPath(ws), { 'apps/shop/_bmad/core/tasks/task.md': 'x\n', 'apps/shop/src/app.txt': 'y\n', '_bmad/core/x.md': 'not the method of this project\n' });
    const r = await s.service.sync(project, ws);
    expect(r.dropped?.paths).toEqual(['apps/shop/_bmad/core/tasks/task.md']);
    expect(sh(s.repo, ['show', 'refs/heads/bmad/nested:apps/shop/_bmad/core/tasks/task.md'])).toBe('the task\n');
    expect(sh(s.repo, ['show', 'refs/heads/bmad/nested:_bmad/core/x.md'])).toBe('not the method of this project\n');
    const plain = setup();
    await enabled(plain);
    const w2 = await plain.service.create(plain.project, { name: 'plain', createdBy: 'u1' });
    const h2 = commit(plain.service.checkoutPath(w2), { '_bmad/core/x.md': 'no method in the base\n' });
    expect(await plain.service.sync(plain.project, w2)).toMatchObject({ head: h2 });
    expect(head).not.toBe(r.head);
  });
});

describe('a stale git lock', () => {
  it('refuses a merge with 409 E_GIT_LOCKED naming it, before anything changes; then the merge works', async () => {
    const s = setup();
    await enabled(s);
    const ws = await s.service.create(s.project, { name: 'locked', createdBy: 'u1' });
    const head = commit(s.service.checkoutPath(ws), { 'src/app.txt': 'changed\n' });
    await s.service.sync(s.project, ws);
    commit(s.repo, { 'other.txt': 'base moves\n' }, 'base moves');
    const base = sh(s.repo, ['rev-parse', 'main']).trim();
    for (const lock of ['.git/index.lock', '.git/HEAD.lock', '.git/refs/heads/main.lock']) {
      fs.writeFileSync(path.join(s.repo, lock), '');
      const e = await failure(s.service.merge(s.project, ws.id, alice));
      expect([e.code, e.status, e.details?.response]).toEqual(['E_GIT_LOCKED', 409, { lock }]);
      expect(e.message).toContain(lock);
      expect(e.message).toMatch(/remove/);
      expect(e.message).not.toContain(s.repo);
      expect(sh(s.repo, ['rev-parse', 'main']).trim()).toBe(base);
      expect(sh(s.repo, ['rev-parse', 'refs/heads/bmad/locked']).trim()).toBe(head);
      expect((await s.service.find(s.project, ws.id)).status).toBe('open');
      expect(sh(s.repo, ['status', '--porcelain', '--untracked-files=no'])).toBe('');
      fs.rmSync(path.join(s.repo, lock));
    }
    const m = await s.service.merge(s.project, ws.id, alice);
    expect(m.checkoutUpdated).toBe(true);
  });

  it('refuses create (where git fails) and discard on a ref lock, and a merge whose lock appears while it runs', async () => {
    const s = setup();
    await enabled(s);
    fs.mkdirSync(path.join(s.repo, '.git/refs/heads/bmad'), { recursive: true });
    fs.writeFileSync(path.join(s.repo, '.git/refs/heads/bmad/next.lock'), '');
    const made = await failure(s.service.create(s.project, { name: 'next', createdBy: 'u1' }));
    expect([made.code, made.details?.response]).toEqual(['E_GIT_LOCKED', { lock: '.git/refs/heads/bmad/next.lock' }]);
    expect(await s.service.list('p1')).toEqual([]);
    fs.rmSync(path.join(s.repo, '.git/refs/heads/bmad/next.lock'));
    const ws = await s.service.create(s.project, { name: 'next', createdBy: 'u1' });
    fs.writeFileSync(path.join(s.repo, '.git/refs/heads/bmad/next.lock'), '');
    const discarded = await failure(s.service.discard(s.project, ws.id));
    expect(discarded.code).toBe('E_GIT_LOCKED');
    expect(fs.existsSync(s.service.checkoutPath(ws))).toBe(true);
    expect((await s.service.find(s.project, ws.id)).status).toBe('open');
    fs.rmSync(path.join(s.repo, '.git/refs/heads/bmad/next.lock'));
    // The lock appears between the checks and the checkout's update: told as a lock, base put back.
    commit(s.service.checkoutPath(ws), { 'n.txt': 'n\n' });
    const base = sh(s.repo, ['rev-parse', 'main']).trim();
    const e = await failure(
      s.service.merge(s.project, ws.id, alice, {
        headFor: async (h) => {
          fs.writeFileSync(path.join(s.repo, '.git/index.lock'), '');
          return h;
        },
      }),
    );
    expect(e.code).toBe('E_GIT_LOCKED');
    expect(sh(s.repo, ['rev-parse', 'main']).trim()).toBe(base);
    fs.rmSync(path.join(s.repo, '.git/index.lock'));
    expect((await s.service.merge(s.project, ws.id, alice)).fastForward).toBe(true);
  });
});

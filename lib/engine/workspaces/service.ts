import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { AppError, isAppError } from '../../core/errors';
import { DIFF_SAFE, git, gitIdentityEnv, gitOk, GitError, trustingUploadPack } from '../../sandbox/git/runner';

export { gitIdentityEnv };
import { atTop, currentBranch, findRepositoryTop, isClean, resolveCommit } from '../../sandbox/git/repo';
import { log } from '../../core/log';
import { validateBuild } from './build-settings';
import { checkName } from './names';
import { runInCheckout, SERVED_AT, uploadPackCommand } from './sandboxed-git';
import { NameTakenError, DEFAULT_BUILD, type BuildSettings, type CommitInfo, type FileChange, type SetupOutcome, type Workspace, type WorkspaceDetail, type WorkspaceStore } from './types';

/** A project as the service needs it: its id and its folder (absolute; never shown to anyone). */
export interface ProjectRef {
  id: string;
  root: string;
}

/** Who a commit is by (the person who merged, or who started the turn). */
export interface Person {
  name: string;
  email: string;
}

export interface WorkspaceServiceOptions {
  store: WorkspaceStore;
  /** WORKSPACES_ROOT: each workspace's clone is a folder here, named by its id. */
  root: string;
  /** bubblewrap, for git on a workspace's own repository (SANDBOX_BWRAP). */
  bwrap?: string;
}

export interface DiffResult {
  diff: string;
  /** The diff was longer than the cap and ends where it was cut. */
  cut: boolean;
  bytes: number;
}

export interface MergeResult {
  workspace: Workspace;
  /** The base branch's commit after the merge. */
  commit: string;
  fastForward: boolean;
  /** The project folder had the base checked out and now shows the merge. */
  checkoutUpdated: boolean;
}

export interface SyncResult {
  /** The branch's commit in the project repository after the sync. */
  head: string | null;
  /** Uncommitted changes of the checkout were committed. */
  committed: boolean;
  /** The branch was moved (false when the workspace's branch could not be read). */
  synced: boolean;
}

export const MAX_DIFF_BYTES = 1024 * 1024;
const MAX_FILES = 2_000;
const MAX_COMMITS = 500;
const ZERO = '0000000000000000000000000000000000000000';

/**
 * Removes a folder tree by rm(1) in a process of its own. A checkout with node_modules holds
 * 100,000 files: fs.rmSync blocks the event loop for seconds, and fs.promises.rm still stalls
 * it for most of that (thousands of completions handled at once). rm follows no link.
 */
function removeTree(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('/bin/rm', ['-rf', '--', dir], { env: {} as NodeJS.ProcessEnv, timeout: 600_000 }, (e) => {
      if (e && fs.existsSync(dir)) reject(new Error(`rm exited with ${e.code ?? e.signal ?? 'an error'}`));
      else resolve();
    });
  });
}

const notFound = () => new AppError('E_WORKSPACE_NOT_FOUND', 'Workspace not found.');

/**
 * Workspaces: each one a clone of the project's repository of its own, under WORKSPACES_ROOT, on
 * the branch `bmad/<name>` that exists in the project repository from its creation on. The model's
 * commands only ever see the clone; the server moves `refs/heads/bmad/<name>` in the project
 * repository (that ref only) by fetching from the clone (`sync`). Diffs, commits, ahead/behind
 * and merges are read from the project repository, never from the clone's own .git.
 */
export class WorkspaceService {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly opts: WorkspaceServiceOptions) {}

  get store(): WorkspaceStore {
    return this.opts.store;
  }

  /** Git operations on one project repository run one at a time in this process (refs compare-and-swap across processes). */
  private locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(fn);
    const tail = next.catch(() => undefined);
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return next;
  }

  async getBuild(projectId: string): Promise<BuildSettings> {
    return (await this.opts.store.getBuild(projectId)) ?? { ...DEFAULT_BUILD };
  }

  async putBuild(projectId: string, patch: Partial<BuildSettings>): Promise<BuildSettings> {
    return this.opts.store.putBuild(projectId, validateBuild(patch));
  }

  private async requireEnabled(projectId: string): Promise<BuildSettings> {
    const build = await this.getBuild(projectId);
    if (!build.enabled) throw new AppError('E_BUILD_DISABLED', 'Build is not enabled for this project.');
    return build;
  }

  private repoTop(project: ProjectRef): string {
    const top = findRepositoryTop(project.root);
    if (!top) throw new AppError('E_NOT_A_REPOSITORY', 'The project folder is not in a git repository.');
    return top;
  }

  /** The workspace's clone on the host (absolute: for the command tool's sandbox, never for a model or a response). */
  checkoutPath(ws: Pick<Workspace, 'id'>): string {
    return path.join(this.opts.root, ws.id);
  }

  /** `{project-root}` inside the clone: the project folder's place within its repository. */
  projectRootIn(project: ProjectRef, ws: Pick<Workspace, 'id'>): string {
    const top = this.repoTop(project);
    return path.join(this.checkoutPath(ws), path.relative(top, path.resolve(project.root)));
  }

  private async load(project: ProjectRef, id: string): Promise<Workspace> {
    const ws = await this.opts.store.get(id);
    if (!ws || ws.projectId !== project.id) throw notFound();
    return ws;
  }

  async create(project: ProjectRef, input: { name: unknown; createdBy: string }): Promise<Workspace> {
    const name = checkName(input.name);
    const build = await this.requireEnabled(project.id);
    const top = this.repoTop(project);
    const base = build.baseBranch ?? (await currentBranch(top));
    if (!base) throw new AppError('E_CONFLICT', 'The project folder has no branch checked out; set a base branch in the build settings.');
    const baseCommit = await resolveCommit(top, `refs/heads/${base}`);
    if (!baseCommit) throw new AppError('E_CONFLICT', `The base branch "${base}" has no commit.`);
    const branch = `bmad/${name}`;
    let ws: Workspace;
    try {
      ws = await this.opts.store.insert({ id: `ws_${randomUUID()}`, projectId: project.id, name, branch, base, baseCommit, createdBy: input.createdBy });
    } catch (e) {
      if (e instanceof NameTakenError) throw new AppError('E_CONFLICT', `A workspace named "${name}" exists.`, { field: 'name' });
      throw e;
    }
    const dir = this.checkoutPath(ws);
    let branchMade = false;
    try {
      await this.locked(top, async () => {
        // Create-only (old value: none): a branch of that name made by anyone else is not taken over.
        const made = await git(['update-ref', '-m', 'bmad: workspace created', `refs/heads/${branch}`, baseCommit, ZERO], { cwd: top });
        if (made.code !== 0) throw new AppError('E_CONFLICT', `The branch "${branch}" exists in the repository.`, { field: 'name' });
        branchMade = true;
      });
      await fs.promises.mkdir(this.opts.root, { recursive: true });
      // --no-local: objects are copied through the pack protocol, never hard-linked (a shared
      // object file changed in the workspace would change the project's); no template, so no hooks.
      await gitOk(['clone', '--quiet', '--no-local', '--template=', '--single-branch', '--no-tags', '--branch', branch, `--upload-pack=${trustingUploadPack(top)}`, '--', top, dir], { cwd: this.opts.root, trust: [top], timeoutMs: 600_000 });
      // The clone keeps no way back to the project folder (nor its path); the base stays as a local branch to diff against.
      await gitOk(['remote', 'remove', 'origin'], { cwd: dir });
      // The clone's reflogs say where it was cloned from: a server path the model could read.
      await fs.promises.rm(path.join(dir, '.git', 'logs'), { recursive: true, force: true });
      if (base !== branch) await git(['branch', '--no-track', '--', base, baseCommit], { cwd: dir });
      return ws;
    } catch (e) {
      await removeTree(dir).catch(() => undefined);
      if (branchMade) await git(['update-ref', '-d', `refs/heads/${branch}`, baseCommit], { cwd: top }).catch(() => undefined);
      await this.opts.store.remove(ws.id);
      if (isAppError(e)) throw e;
      log.error('workspace.create_failed', { project: project.id, message: String((e as Error)?.message ?? e).slice(0, 300) });
      throw new AppError('E_INTERNAL', 'The workspace could not be created.');
    }
  }

  async list(projectId: string): Promise<Workspace[]> {
    await this.requireEnabled(projectId);
    return this.opts.store.list(projectId);
  }

  /** The row only (no git): for routes that check a workspace exists, and the command tool. */
  async find(project: ProjectRef, id: string): Promise<Workspace> {
    await this.requireEnabled(project.id);
    return this.load(project, id);
  }

  /** What the diff of a workspace compares: its base (or where it began) and its branch. */
  private async range(top: string, ws: Workspace): Promise<{ base: string; head: string | null }> {
    const head = await resolveCommit(top, `refs/heads/${ws.branch}`);
    if (ws.status === 'merged') return { base: ws.baseCommit, head: head ?? ws.mergedCommit ?? null };
    return { base: (await resolveCommit(top, `refs/heads/${ws.base}`)) ?? ws.baseCommit, head };
  }

  async get(project: ProjectRef, id: string): Promise<WorkspaceDetail> {
    const ws = await this.find(project, id);
    const top = this.repoTop(project);
    const { base, head } = await this.range(top, ws);
    if (!head) return { ...ws, head: null, ahead: 0, behind: 0, files: [], commits: [] };
    const [counts, files, commits] = await Promise.all([
      gitOk(['rev-list', '--left-right', '--count', `${base}...${head}`], { cwd: top }),
      this.files(top, base, head),
      this.commits(top, base, head),
    ]);
    const [behind, ahead] = counts.trim().split(/\s+/).map(Number);
    return { ...ws, head, ahead: ahead ?? 0, behind: behind ?? 0, files, commits };
  }

  private async files(top: string, base: string, head: string): Promise<FileChange[]> {
    const range = `${base}...${head}`;
    const [names, nums] = await Promise.all([
      gitOk(['diff', ...DIFF_SAFE, '-M', '--name-status', '-z', range, '--'], { cwd: top }),
      gitOk(['diff', ...DIFF_SAFE, '-M', '--numstat', '-z', range, '--'], { cwd: top }),
    ]);
    const statuses: { path: string; status: FileChange['status'] }[] = [];
    const n = names.split('\0');
    for (let i = 0; i < n.length && statuses.length < MAX_FILES; ) {
      const code = n[i++];
      if (!code) break;
      const letter = code[0];
      const twoPaths = letter === 'R' || letter === 'C';
      if (twoPaths) i++;
      const p = n[i++] ?? '';
      statuses.push({ path: p, status: STATUS_OF[letter!] ?? 'unknown' });
    }
    const counts: { add: number | null; del: number | null }[] = [];
    const m = nums.split('\0');
    for (let i = 0; i < m.length && counts.length < statuses.length; ) {
      const rec = m[i++];
      if (!rec) break;
      const [a, d, p] = rec.split('\t');
      // A rename's record has its paths in the next two fields.
      if (p === '') i += 2;
      counts.push({ add: a === '-' ? null : Number(a), del: d === '-' ? null : Number(d) });
    }
    return statuses.map((s, i) => ({ path: s.path, status: s.status, additions: counts[i]?.add ?? null, deletions: counts[i]?.del ?? null }));
  }

  private async commits(top: string, base: string, head: string): Promise<CommitInfo[]> {
    const out = await gitOk(['log', ...DIFF_SAFE, '-z', `--max-count=${MAX_COMMITS}`, '--format=%H%x00%s%x00%an%x00%aI', `${base}..${head}`, '--'], { cwd: top });
    const f = out.split('\0');
    const list: CommitInfo[] = [];
    for (let i = 0; i + 3 < f.length; i += 4) list.push({ sha: f[i]!.trim(), subject: f[i + 1]!, author: f[i + 2]!, date: f[i + 3]! });
    return list;
  }

  /**
   * The unified diff of the workspace against its base, of one file with `path`. Git's output is
   * read up to the cap and git is killed there: the time and memory are those of the cap.
   */
  async diff(project: ProjectRef, id: string, opts: { path?: string; maxBytes?: number } = {}): Promise<DiffResult> {
    const ws = await this.find(project, id);
    const top = this.repoTop(project);
    const { base, head } = await this.range(top, ws);
    if (!head) return { diff: '', cut: false, bytes: 0 };
    const max = Math.min(opts.maxBytes ?? MAX_DIFF_BYTES, MAX_DIFF_BYTES);
    const spec = opts.path !== undefined ? [`:(literal)${opts.path.replace(/^\/+/, '')}`] : [];
    if (opts.path !== undefined && (opts.path.includes('\0') || opts.path.trim() === '' || opts.path.split(/[\\/]/).includes('..'))) {
      throw new AppError('E_VALIDATION', 'path is not a file path of the workspace', { field: 'path' });
    }
    const r = await git(['diff', ...DIFF_SAFE, '-M', `${base}...${head}`, '--', ...spec], { cwd: top, maxBytes: max, timeoutMs: 120_000 });
    if (r.code !== 0 && !r.cut) throw new GitError('diff', r);
    return { diff: r.stdout, cut: r.cut, bytes: Buffer.byteLength(r.stdout) };
  }

  /** Stores what the setup line did (the command tool runs it). */
  async recordSetup(id: string, outcome: SetupOutcome): Promise<Workspace | null> {
    return this.opts.store.update(id, { setup: outcome });
  }

  /**
   * Brings the workspace's commits into the project repository: `refs/heads/bmad/<name>` there
   * becomes the clone's `bmad/<name>` (forced: the branch is the workspace's own; no other ref is
   * touched). With `commit`, the clone's uncommitted changes are committed first, by git inside
   * bubblewrap (the clone's .git is the model's). Call after every command and at each turn's end.
   */
  async sync(project: ProjectRef, given: Workspace, opts: { commit?: Person & { message: string } } = {}): Promise<SyncResult> {
    // The row as it is now: a workspace merged or discarded meanwhile is not moved again.
    const ws = await this.opts.store.get(given.id);
    if (!ws || ws.projectId !== project.id || ws.status !== 'open') return { head: null, committed: false, synced: false };
    const top = this.repoTop(project);
    const dir = this.checkoutPath(ws);
    let committed = false;
    if (opts.commit && fs.existsSync(dir)) {
      const script = [
        'b=$(git symbolic-ref -q HEAD) || exit 0',
        // The clone's own drivers would not find their programs in here anyway; emptied, a
        // "required" filter the model planted does not stop its own changes from being committed.
        'IFS="\n"; i=$GIT_CONFIG_COUNT',
        "for k in $(git config --list --null --name-only | tr '\\0' '\\n' | grep -E '^(filter\\..*\\.(clean|smudge|process)|diff\\..*\\.(command|textconv)|merge\\..*\\.driver)$'); do",
        '  export GIT_CONFIG_KEY_$i="$k" GIT_CONFIG_VALUE_$i=""; i=$((i+1))',
        '  case "$k" in filter.*) export GIT_CONFIG_KEY_$i="${k%.*}.required" GIT_CONFIG_VALUE_$i=false; i=$((i+1));; esac',
        'done',
        'export GIT_CONFIG_COUNT=$i; unset IFS',
        `[ "$b" = "refs/heads/${ws.branch}" ] || exit 0`,
        'git add -A || exit 1',
        'git diff --cached --quiet && exit 0',
        'git commit -q --no-verify -m "$BMAD_MESSAGE" && echo committed',
      ].join('\n');
      const out = await runInCheckout({ bwrap: this.opts.bwrap ?? 'bwrap' }, dir, script, { ...gitIdentityEnv(opts.commit), BMAD_MESSAGE: opts.commit.message.replace(/\0/g, '') || 'Workspace changes' });
      committed = out.ok && out.stdout.includes('committed');
      if (!out.ok) log.warn('workspace.commit_failed', { workspace: ws.id, code: out.exitCode ?? -1, message: out.stderr.slice(0, 300) });
    }
    return this.locked(top, async () => {
      // Fetched from the clone: the fetch runs in the project repository (our config); the
      // clone's side, git's upload-pack, runs in bubblewrap seeing the clone only.
      const uploadPack = uploadPackCommand(this.opts.bwrap ?? 'bwrap', dir);
      const r = await git(
        ['-c', 'fetch.fsckObjects=true', 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--no-recurse-submodules', `--upload-pack=${uploadPack}`, '--', SERVED_AT, `+refs/heads/${ws.branch}:refs/heads/${ws.branch}`],
        { cwd: top, timeoutMs: 600_000 },
      );
      if (r.code !== 0) log.warn('workspace.sync_failed', { workspace: ws.id, message: r.stderr.trim().split('\n').slice(-1)[0]?.slice(0, 300) ?? '' });
      return { head: await resolveCommit(top, `refs/heads/${ws.branch}`), committed, synced: r.code === 0 };
    });
  }

  /**
   * Merges the workspace's branch into its base in the project repository: a fast-forward, else a
   * merge commit by `person` built off to the side (merge-tree, commit-tree) and set with the old
   * value as compare-and-swap. A conflict changes nothing. When the project folder has the base
   * checked out, it must be clean and is moved along. `headFor` gives the commit to merge in place
   * of the branch's head (one on top of it), asked again on every attempt, against the base as it is then.
   */
  async merge(project: ProjectRef, id: string, person: Person, opts: { headFor?: (head: string) => Promise<string> } = {}): Promise<MergeResult> {
    const ws = await this.find(project, id);
    if (ws.status !== 'open') throw new AppError('E_CONFLICT', `The workspace is ${ws.status}.`);
    const top = this.repoTop(project);
    await this.sync(project, ws);
    return this.locked(top, async () => {
      // Another instance may move the base between our read and our compare-and-swap: start over.
      for (let attempt = 0; attempt < 3; attempt++) {
        const done = await this.mergeOnce(top, ws, person, opts.headFor);
        if (done) return done;
      }
      throw new AppError('E_CONFLICT', 'The base branch kept moving during the merge; try again.');
    });
  }

  /** One merge attempt; null when the base moved before it could be set. */
  private async mergeOnce(top: string, ws: Workspace, person: Person, headFor?: (head: string) => Promise<string>): Promise<MergeResult | null> {
    const baseRef = `refs/heads/${ws.base}`;
    const old = await resolveCommit(top, baseRef);
    if (!old) throw new AppError('E_CONFLICT', `The base branch "${ws.base}" no longer exists.`);
    const tip = await resolveCommit(top, `refs/heads/${ws.branch}`);
    if (!tip) throw new AppError('E_CONFLICT', `The branch "${ws.branch}" no longer exists.`);
    const head = headFor ? await headFor(tip) : tip;
    const checkedOut = (await currentBranch(top)) === ws.base;
    if (checkedOut && !(await isClean(top))) throw new AppError('E_BASE_DIRTY', 'The project folder has uncommitted changes on the base branch.');
    const isAncestor = async (a: string, b: string) => (await git(['merge-base', '--is-ancestor', a, b], { cwd: top })).code === 0;
    let next: string;
    let fastForward = false;
    if (await isAncestor(head, old)) next = old;
    else if (await isAncestor(old, head)) {
      next = head;
      fastForward = true;
    } else {
      const m = await git(['merge-tree', '--write-tree', '--no-messages', '--name-only', '-z', old, head], { cwd: top });
      const parts = m.stdout.split('\0');
      if (m.code === 1) {
        const paths: string[] = [];
        for (const p of parts.slice(1)) {
          if (!p) break;
          if (!paths.includes(p)) paths.push(p);
        }
        throw new AppError('E_MERGE_CONFLICT', `Merging ${ws.branch} into ${ws.base} conflicts in ${paths.length} file(s).`, { paths });
      }
      if (m.code !== 0) throw new GitError('merge-tree', m);
      const tree = parts[0]!.trim();
      const message = `Merge branch '${ws.branch}' into ${ws.base}`;
      next = (await gitOk(['commit-tree', tree, '-p', old, '-p', head, '-m', message], { cwd: top, env: gitIdentityEnv(person) })).trim();
    }
    let checkoutUpdated = false;
    if (next !== old) {
      const set = await git(['update-ref', '-m', `bmad: merge ${ws.branch}`, baseRef, next, old], { cwd: top });
      if (set.code !== 0) return null;
      if (checkedOut) {
        // Index and files go from the old commit to the new one; a file changed meanwhile (or an
        // untracked one in the way) stops it, and the branch goes back.
        const rt = await git([...atTop(top), 'read-tree', '-m', '-u', old, next], { cwd: top, env: { GIT_OPTIONAL_LOCKS: '1' } });
        if (rt.code !== 0) {
          await git(['update-ref', '-m', 'bmad: merge undone', baseRef, old, next], { cwd: top });
          throw new AppError('E_BASE_DIRTY', 'The project folder has changes the merge would overwrite.');
        }
        checkoutUpdated = true;
      }
    }
    const updated = await this.opts.store.update(ws.id, { status: 'merged', mergedCommit: next }, 'open');
    if (!updated) throw new AppError('E_CONFLICT', 'The workspace changed during the merge.');
    return { workspace: updated, commit: next, fastForward, checkoutUpdated };
  }

  /** Removes the workspace's clone and its branch; the row stays, discarded. */
  async discard(project: ProjectRef, id: string): Promise<Workspace> {
    const ws = await this.find(project, id);
    if (ws.status === 'discarded') return ws;
    const top = this.repoTop(project);
    return this.locked(top, async () => {
      await removeTree(this.checkoutPath(ws));
      await git(['update-ref', '-m', 'bmad: workspace discarded', '-d', `refs/heads/${ws.branch}`], { cwd: top });
      const updated = await this.opts.store.update(ws.id, { status: 'discarded' }, ws.status);
      if (!updated) throw new AppError('E_CONFLICT', 'The workspace changed meanwhile.');
      return updated;
    });
  }
}

const STATUS_OF: Record<string, FileChange['status']> = {
  A: 'added',
  M: 'modified',
  D: 'deleted',
  R: 'renamed',
  C: 'copied',
  T: 'typechange',
  U: 'unmerged',
};

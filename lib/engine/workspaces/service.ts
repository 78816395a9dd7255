import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { AppError, isAppError } from '../../core/errors';
import { DEFAULT_COMMAND_SETTINGS } from '../../core/config';
import { withFileLock } from '../../core/paths/file-lock';
import { DIFF_SAFE, git, gitIdentityEnv, gitOk, GitError, safeConfig, trustingUploadPack, type GitResult } from '../../sandbox/git/runner';
import { heldLock, lockedMessage, lockFileIn, lockShown, type LockNeeds } from '../../sandbox/git/locks';

export { gitIdentityEnv };
import { atTop, currentBranch, findRepositoryTop, isClean, resolveCommit } from '../../sandbox/git/repo';
import { log } from '../../core/log';
import { validateBuild } from './build-settings';
import { emitProjectEvent } from '../events';
import { branchProblem, checkName } from './names';
import { readBranchAt, readCloneHead } from './clone-head';
import { keepMethod, methodPathspecs, MethodGuardError, type Dropped } from './method-guard';
import { diskUsage, pruneUnique } from './objects';
import { cloneScript, cloneScriptOutcome, runInCheckout, SERVED_AT, uploadPackCommand } from './sandboxed-git';
import { forgetCheckout, forgetStatus } from '../../sandbox/commands/snapshot';
import { mergeTrees, repoPathsOf, type TreeMerge } from './union-merge';
import { NameTakenError, DEFAULT_BUILD, type BuildSettings, type CommitInfo, type FileChange, type SetupOutcome, type Workspace, type WorkspaceDetail, type WorkspaceStore, type WorkspaceSummary } from './types';

export type { Dropped };

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
  /** WORKSPACE_MAX_MB in bytes: the most a workspace's branch may carry into the project repository. */
  maxBytes?: number;
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

export interface MergeOptions {
  /** The commit to merge in place of the branch's head (one on top of it), asked again on every attempt. */
  headFor?: (head: string) => Promise<string>;
  /**
   * Called with the merge's result before the base is moved to it (push mode: pushed to the
   * remote first); `retry` makes the merge again on the base as it is then.
   */
  publish?: (next: string, old: string) => Promise<'ok' | 'retry'>;
  /**
   * Files (relative to the project) that parallel work only appends to: where both sides changed
   * one, the merge keeps the union of their lines instead of a conflict (see union-merge.ts).
   */
  appendOnly?: string[];
}

/** Why a sync left the project's branch where it was; the message is safe to show (no server path). */
export interface SyncRefusal {
  code: 'E_TOO_LARGE' | 'E_GIT_LOCKED' | 'E_CONFLICT';
  message: string;
  /** E_GIT_LOCKED: the lock file, relative to the repository. */
  lock?: string;
}

export interface SyncResult {
  /** The branch's commit in the project repository after the sync. */
  head: string | null;
  /** Uncommitted changes of the checkout were committed. */
  committed: boolean;
  /** The branch is the clone's (false when the clone's branch could not be read or was refused). */
  synced: boolean;
  /** Commits that changed the method, newly left out of the branch (their other changes carried). */
  dropped?: Dropped;
  /** Why the clone's branch was not carried. */
  refused?: SyncRefusal;
}

export const MAX_DIFF_BYTES = 1024 * 1024;
const MAX_FILES = 2_000;
const MAX_COMMITS = 500;
/** Open workspaces a list counts ahead/behind for; later ones say null. */
const MAX_COUNTED = 100;
const COUNTS_AT_ONCE = 4;
/** Commits whose dropped method changes a workspace remembers having reported. */
const MAX_DROPPED_KEPT = 200;
const ZERO = '0000000000000000000000000000000000000000';
const MB = 1024 * 1024;

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

/** 409 E_GIT_LOCKED for a lock file git names or that was found, shown relative to the repository. */
function lockedError(top: string, lock: string): AppError {
  const shown = lockShown(top, lock);
  return new AppError('E_GIT_LOCKED', lockedMessage(shown), { response: { lock: shown } });
}

/** The stored form of a refusal: its code (with the quota it was over), then its message. */
function refusalText(r: SyncRefusal, limit: number): string {
  return `${r.code}${r.code === 'E_TOO_LARGE' ? `@${limit}` : ''}: ${r.message}`;
}

/** A stored refusal; null when it was over another quota than `limit` (the quota changed: weigh again). */
function refusalOf(text: string, limit: number): SyncRefusal | null {
  const m = /^(E_TOO_LARGE|E_CONFLICT)(?:@(\d+))?: ([\s\S]*)$/.exec(text);
  if (!m) return { code: 'E_CONFLICT', message: text };
  if (m[1] === 'E_TOO_LARGE' && Number(m[2]) !== limit) return null;
  return { code: m[1] as SyncRefusal['code'], message: m[3]! };
}

const mb = (bytes: number) => `${Math.ceil(bytes / MB)} MB`;

const notFound = () => new AppError('E_WORKSPACE_NOT_FOUND', 'Workspace not found.');

/**

/**
 * Workspaces: each one a clone of the project's repository of its own, under WORKSPACES_ROOT, on
 * the branch `bmad/<name>` that exists in the project repository from its creation on. The model's
 * commands only ever see the clone; the server moves `refs/heads/bmad/<name>` in the project
 * repository (that ref only) by fetching from the clone (`sync`), once per turn and before anything
 * reads the branch. Diffs, commits, ahead/behind and merges are read from the project repository,
 * never from the clone's own .git.
 */
/** How long a git lock may stand before it is taken for one a crashed git left. */
const LIVE_LOCK_MS = 2_000;

/**
 * Whether the project folder's checkout is clean, looked at again for up to a second: a sprint
 * status change moves the base branch and then the checkout (under the status file's lock, not
 * the repository's), and a merge that looks in between would see the folder one file behind.
 */
async function cleanSoon(top: string): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    if (await isClean(top)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

export class WorkspaceService {
  constructor(private readonly opts: WorkspaceServiceOptions) {}

  get store(): WorkspaceStore {
    return this.opts.store;
  }

  private get maxBytes(): number {
    return this.opts.maxBytes ?? DEFAULT_COMMAND_SETTINGS.workspaceMaxMb * MB;
  }

  /**
   * Git that changes a project repository's refs or objects runs under its lock: one at a time in
   * this process and across instances sharing the lock folder. A fetch writes objects before its
   * ref, so a prune must never run beside one (refs compare-and-swap covers the rest).
   */
  private repoLocked<T>(top: string, fn: () => Promise<T>): Promise<T> {
    let real = top;
    try {
      real = fs.realpathSync(top);
    } catch {
      // Gone: the git inside will say so.
    }
    return withFileLock(path.join(real, '.git', 'bmad-workspaces'), fn);
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

  /**
   * `startAt`: where the workspace starts instead of the base's head (a commit the caller made sure
   * of, e.g. the remote's base just fetched); asked with the base branch once it is known.
   */
  async create(project: ProjectRef, input: { name: unknown; createdBy: string; startAt?: (base: string) => Promise<string | undefined> }): Promise<Workspace> {
    const name = checkName(input.name);
    const build = await this.requireEnabled(project.id);
    const top = this.repoTop(project);
    const base = build.baseBranch ?? (await currentBranch(top));
    if (!base) throw new AppError('E_CONFLICT', 'The project folder has no branch checked out; set a base branch in the build settings.');
    const start = input.startAt ? await input.startAt(base) : undefined;
    const baseCommit = await resolveCommit(top, start ?? `refs/heads/${base}`);
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
      await this.repoLocked(top, async () => {
        // Create-only (old value: none): a branch of that name made by anyone else is not taken over.
        const made = await git(['update-ref', '-m', 'bmad: workspace created', `refs/heads/${branch}`, baseCommit, ZERO], { cwd: top });
        if (made.code !== 0) {
          const lock = lockFileIn(made.stderr);
          if (lock) throw lockedError(top, lock);
          throw new AppError('E_CONFLICT', `The branch "${branch}" exists in the repository.`, { field: 'name' });
        }
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
      emitProjectEvent(project.id, { type: 'workspace', workspaceId: ws.id });
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

  /**
   * The project's workspaces with ahead/behind their base: each open one synced first (nothing
   * to do, and nearly free, when its clone has no new commit), then one count per open workspace,
   * a few at a time, for the first MAX_COUNTED of them. A merged one is 0 and 0: its work is in
   * its base. Discarded ones and those past the bound say null.
   */
  async summaries(project: ProjectRef): Promise<WorkspaceSummary[]> {
    const rows = await this.list(project.id);
    const top = findRepositoryTop(project.root);
    const open = rows.filter((w) => w.status === 'open').slice(0, MAX_COUNTED);
    const counts = new Map<string, { ahead: number; behind: number }>();
    if (top && open.length) {
      // Only a clone whose branch moved since its last sync is synced (a file read each).
      for (const ws of open) if (!ws.syncedFrom || readCloneHead(this.checkoutPath(ws), ws.branch) !== ws.syncedFrom) await this.syncForRead(project, ws);
      // One listing of the repository's configuration for every count.
      const config = await safeConfig(top);
      let next = 0;
      const worker = async () => {
        while (next < open.length) {
          const ws = open[next++]!;
          const c = await countsOf(top, config, ws);
          if (c) counts.set(ws.id, c);
        }
      };
      await Promise.all(Array.from({ length: Math.min(COUNTS_AT_ONCE, open.length) }, worker));
    }
    return rows.map((ws) => {
      if (ws.status === 'merged') return { ...ws, ahead: 0, behind: 0 };
      const c = counts.get(ws.id);
      return { ...ws, ahead: c?.ahead ?? null, behind: c?.behind ?? null };
    });
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

  /**
   * The row, its branch brought up to its clone first when open: a reader may run on another
   * instance than the turn. A sync that fails or is refused leaves the branch as it was, and the
   * reader reads that (the refusal is the turn's to tell, and a merge's to refuse).
   */
  private async syncForRead(project: ProjectRef, ws: Workspace): Promise<void> {
    if (ws.status !== 'open') return;
    try {
      await this.sync(project, ws);
    } catch (e) {
      log.warn('workspace.read_sync_failed', { workspace: ws.id, message: String((e as Error)?.message ?? e).slice(0, 300) });
    }
  }

  async get(project: ProjectRef, id: string): Promise<WorkspaceDetail> {
    const found = await this.find(project, id);
    const top = this.repoTop(project);
    await this.syncForRead(project, found);
    const ws = (await this.opts.store.get(id)) ?? found;
    const { base, head } = await this.range(top, ws);
    if (!head) return { ...ws, head: null, ahead: 0, behind: 0, files: [], commits: [] };
    const [counts, files, commits] = await Promise.all([
      ws.status === 'merged' ? '0 0' : gitOk(['rev-list', '--left-right', '--count', `${base}...${head}`], { cwd: top }),
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
    const found = await this.find(project, id);
    const top = this.repoTop(project);
    const max = Math.min(opts.maxBytes ?? MAX_DIFF_BYTES, MAX_DIFF_BYTES);
    const spec = opts.path !== undefined ? [`:(literal)${opts.path.replace(/^\/+/, '')}`] : [];
    if (opts.path !== undefined && (opts.path.includes('\0') || opts.path.trim() === '' || opts.path.split(/[\\/]/).includes('..'))) {
      throw new AppError('E_VALIDATION', 'path is not a file path of the workspace', { field: 'path' });
    }
    await this.syncForRead(project, found);
    const ws = (await this.opts.store.get(id)) ?? found;
    const { base, head } = await this.range(top, ws);
    if (!head) return { diff: '', cut: false, bytes: 0 };
    const r = await git(['diff', ...DIFF_SAFE, '-M', `${base}...${head}`, '--', ...spec], { cwd: top, maxBytes: max, timeoutMs: 120_000 });
    if (r.code !== 0 && !r.cut) throw new GitError('diff', r);
    return { diff: r.stdout, cut: r.cut, bytes: Buffer.byteLength(r.stdout) };
  }

  /** Stores what the setup line did (the command tool runs it). */
  async recordSetup(id: string, outcome: SetupOutcome): Promise<Workspace | null> {
    const row = await this.opts.store.update(id, { setup: outcome });
    // Its output while it runs is read by polling the workspace; its end is news.
    if (row && outcome.status !== 'running') emitProjectEvent(row.projectId, { type: 'workspace', workspaceId: row.id });
    return row;
  }

  /**
   * Brings the workspace's commits into the project repository: `refs/heads/bmad/<name>` there
   * becomes the clone's `bmad/<name>` (forced: the branch is the workspace's own; no other ref is
   * touched), less any change its commits make to the method (see method-guard.ts), and never more
   * than the quota. With `commit`, the clone's uncommitted changes are committed first, by git
   * inside bubblewrap (the clone's .git is the model's). Called at each turn's end and before
   * anything reads the branch; a clone whose branch names the commit the last sync took costs a
   * file read and nothing else.
   */
  async sync(project: ProjectRef, given: Workspace, opts: { commit?: Person & { message: string } } = {}): Promise<SyncResult> {
    // The row as it is now: a workspace merged or discarded meanwhile is not moved again.
    const ws = await this.opts.store.get(given.id);
    if (!ws || ws.projectId !== project.id || ws.status !== 'open') return { head: null, committed: false, synced: false };
    const top = this.repoTop(project);
    const dir = this.checkoutPath(ws);
    const clone = opts.commit && fs.existsSync(dir) ? await this.readClone(ws, dir, opts.commit) : { committed: false, usage: null };
    const same = await this.unchanged(top, ws, readCloneHead(dir, ws.branch));
    if (same) return { ...same, committed: clone.committed };
    const out = await this.repoLocked(top, () => this.carry(project, top, ws.id, dir, clone.usage));
    return { ...out, committed: clone.committed };
  }

  /**
   * Syncs an open workspace for an operation that needs its branch as the clone has it (a merge):
   * a refused sync is that operation's refusal (413 over the quota, 409 locked or unreadable).
   */
  async syncOrRefuse(project: ProjectRef, ws: Workspace): Promise<SyncResult> {
    const s = await this.sync(project, ws);
    if (!s.refused) return s;
    if (s.refused.code === 'E_GIT_LOCKED') throw new AppError('E_GIT_LOCKED', s.refused.message, { response: { lock: s.refused.lock } });
    throw new AppError(s.refused.code, `The workspace's branch could not be brought up to date: ${s.refused.message}`);
  }

  /** Commits the checkout's loose changes (with `commit`) and weighs the branch, inside bubblewrap. */
  private async readClone(ws: Workspace, dir: string, commit?: Person & { message: string }): Promise<{ committed: boolean; usage: number | null }> {
    const env: Record<string, string> = commit ? { ...gitIdentityEnv(commit), BMAD_MESSAGE: commit.message.replace(/\0/g, '') || 'Workspace changes' } : {};
    const out = await runInCheckout({ bwrap: this.opts.bwrap ?? 'bwrap' }, dir, cloneScript(ws.branch, ws.baseCommit, { commit: !!commit }), env);
    // A commit leaves files clean that the last command left changed: the next command reads its status afresh.
    if (commit) await forgetStatus(await fs.promises.realpath(dir).catch(() => dir));
    if (!out.ok) log.warn(commit ? 'workspace.commit_failed' : 'workspace.weigh_failed', { workspace: ws.id, code: out.exitCode ?? -1, message: out.stderr.slice(0, 300) });
    return cloneScriptOutcome(out.stdout);
  }

  /**
   * The sync's answer when the clone's branch names what the last sync took (or refused), or
   * the project's branch itself; null when there may be something to carry. Both read from the
   * refs' files when they plainly are there: nothing is spawned for a workspace with nothing new.
   */
  private async unchanged(top: string, ws: Workspace, cloneHead: string | null): Promise<Omit<SyncResult, 'committed'> | null> {
    if (!cloneHead) return null;
    const branchHead = async () => readBranchAt(top, ws.branch) ?? (await resolveCommit(top, `refs/heads/${ws.branch}`));
    if (ws.syncedFrom === cloneHead) {
      if (!ws.syncRefused) return { head: await branchHead(), synced: true };
      const refused = refusalOf(ws.syncRefused, this.maxBytes);
      return refused ? { head: await branchHead(), synced: false, refused } : null;
    }
    if (ws.syncedFrom) return null;
    // A workspace no sync has recorded yet: its branch is where the clone was made.
    const head = await branchHead();
    if (head !== cloneHead) return null;
    await this.opts.store.update(ws.id, { syncedFrom: cloneHead });
    return { head, synced: true };
  }

  /**
   * Under the repository's lock: weighs the clone's branch, fetches it into a ref of its own
   * (`refs/bmad/sync/<id>`, never the branch), weighs what came, leaves the method's changes out,
   * and only then moves the branch (and drops that ref, in one transaction). Anything refused is
   * removed from the repository again. The repository's configuration is listed once for all of it.
   */
  private async carry(project: ProjectRef, top: string, id: string, dir: string, weighed: number | null): Promise<Omit<SyncResult, 'committed'>> {
    const ws = await this.opts.store.get(id);
    if (!ws || ws.status !== 'open') return { head: null, synced: false };
    const branchRef = `refs/heads/${ws.branch}`;
    // Another instance may have carried it while this one waited for the lock.
    const cloneHead = readCloneHead(dir, ws.branch);
    const same = await this.unchanged(top, ws, cloneHead);
    if (same) return same;
    const config = await safeConfig(top);
    const current = async () => (await refsNow(top, [branchRef], config)).get(branchRef) ?? null;
    if (!fs.existsSync(dir)) return { head: await current(), synced: false };
    const usage = weighed ?? (await this.readClone(ws, dir)).usage;
    if (usage !== null && usage > this.maxBytes) return this.refuse(ws, cloneHead, tooLarge(usage, this.maxBytes), await current());
    const hidden = `refs/bmad/sync/${ws.id}`;
    const fetched = await this.fetchInto(top, ws, dir, hidden, config);
    if (fetched.refused) return { head: await current(), synced: false, refused: fetched.refused };
    const refs = await refsNow(top, [hidden, branchRef, `refs/heads/${ws.base}`], config);
    const head = refs.get(hidden);
    const old = refs.get(branchRef) ?? null;
    if (!fetched.ok || !head) {
      if (head) await git(['update-ref', '-d', hidden], { cwd: top, config });
      return { head: old, synced: false };
    }
    let keep = false;
    let hiddenGone = false;
    try {
      const outcome = await this.admit(project, top, ws, head, refs.get(`refs/heads/${ws.base}`) ?? null, config);
      if ('refused' in outcome) return await this.refuse(ws, outcome.recordAs === false ? null : head, outcome.refused, old);
      // The branch moves and the fetch's ref goes in one transaction.
      const set = await git(['update-ref', '-m', 'bmad: workspace synced', '--stdin'], { cwd: top, config, input: `update ${branchRef} ${outcome.head} ${old ?? ZERO}\ndelete ${hidden}\n` });
      if (set.code !== 0) {
        const lock = lockFileIn(set.stderr);
        if (lock) return { head: old, synced: false, refused: lockedRefusal(top, lock) };
        log.warn('workspace.sync_failed', { workspace: ws.id, message: lastLine(set) });
        return { head: old, synced: false };
      }
      hiddenGone = true;
      keep = outcome.head === head;
      const dropped = outcome.dropped ? await this.newlyDropped(ws, outcome.dropped) : null;
      await this.opts.store.update(ws.id, { syncedFrom: head, syncRefused: null, ...(dropped ? { syncDropped: dropped.kept } : {}) });
      return { head: outcome.head, synced: true, ...(dropped?.fresh ? { dropped: dropped.fresh } : {}) };
    } finally {
      if (!hiddenGone) await git(['update-ref', '-d', hidden], { cwd: top, config }).catch(() => undefined);
      // What only the fetched head brought (a refused branch, or the commits rewritten without
      // their method changes) leaves the repository again.
      if (!keep) await pruneUnique(top, [head]).catch((e: unknown) => log.warn('workspace.prune_failed', { workspace: ws.id, message: String((e as Error)?.message ?? e).slice(0, 300) }));
    }
  }

  /** Fetches the clone's branch into `ref` of the project repository: upload-pack runs in bubblewrap, seeing the clone only. */
  private async fetchInto(top: string, ws: Workspace, dir: string, ref: string, config: Record<string, string>): Promise<{ ok: boolean; refused?: SyncRefusal }> {
    const uploadPack = uploadPackCommand(this.opts.bwrap ?? 'bwrap', dir);
    // Objects stay loose (no pack of the workspace's own), so a discard can remove them one by one.
    const r = await git(
      ['-c', 'fetch.fsckObjects=true', '-c', 'fetch.unpackLimit=2147483647', 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--no-recurse-submodules', `--upload-pack=${uploadPack}`, '--', SERVED_AT, `+refs/heads/${ws.branch}:${ref}`],
      { cwd: top, timeoutMs: 600_000, config },
    );
    if (r.code === 0) return { ok: true };
    const lock = lockFileIn(r.stderr);
    if (lock) return { ok: false, refused: lockedRefusal(top, lock) };
    log.warn('workspace.sync_failed', { workspace: ws.id, message: lastLine(r) });
    return { ok: false };
  }

  /**
   * What of the fetched head may become the branch: refused when what it brings beyond the base
   * weighs more than the quota (weighed again here, in the project repository: the clone's own
   * figure is the model's), else the head with the method as the base has it.
   */
  private async admit(
    project: ProjectRef,
    top: string,
    ws: Workspace,
    head: string,
    baseTip: string | null,
    config: Record<string, string>,
  ): Promise<{ head: string; dropped: Dropped | null } | { refused: SyncRefusal; recordAs?: false }> {
    const bytes = await diskUsage(top, head, [ws.baseCommit, ...(baseTip ? [baseTip] : [])], config);
    if (bytes > this.maxBytes) return { refused: tooLarge(bytes, this.maxBytes) };
    const prefix = path.relative(top, path.resolve(project.root)).split(path.sep).join('/');
    try {
      const specs = await methodPathspecs(top, prefix, ws.baseCommit, config);
      return await keepMethod(top, ws.baseCommit, head, specs, config);
    } catch (e) {
      const refused: SyncRefusal = { code: 'E_CONFLICT', message: `the workspace's commits were not carried to ${ws.branch}: ${e instanceof MethodGuardError ? e.message : 'they could not be checked for changes to the installed method'}.` };
      if (e instanceof MethodGuardError) return { refused };
      log.warn('workspace.method_guard_failed', { workspace: ws.id, message: String((e as Error)?.message ?? e).slice(0, 300) });
      // Perhaps passing (a git that failed): not remembered, the next sync tries again.
      return { refused, recordAs: false };
    }
  }

  /** Records a refusal for the clone's commit (so readers do not weigh it again) and answers it. */
  private async refuse(ws: Workspace, cloneHead: string | null, refused: SyncRefusal, head: string | null): Promise<Omit<SyncResult, 'committed'>> {
    if (cloneHead) await this.opts.store.update(ws.id, { syncedFrom: cloneHead, syncRefused: refusalText(refused, this.maxBytes) });
    log.warn('workspace.sync_refused', { workspace: ws.id, code: refused.code });
    return { head, synced: false, refused };
  }

  /** The dropped commits not told before, and the list to keep (bounded). */
  private async newlyDropped(ws: Workspace, dropped: Dropped): Promise<{ fresh: Dropped | null; kept: string[] }> {
    const told = new Set(ws.syncDropped ?? []);
    const fresh = dropped.shas.filter((s) => !told.has(s));
    const kept = [...(ws.syncDropped ?? []), ...fresh].slice(-MAX_DROPPED_KEPT);
    return { fresh: fresh.length ? { ...dropped, commits: fresh.length, shas: fresh } : null, kept };
  }

  /**
   * Checks that no stale git lock stands in the way of merging the workspace (409 E_GIT_LOCKED
   * naming it) and brings its branch up to its clone: a merge, or the sprint status changes taken
   * before one, works on the branch as the clone has it or not at all.
   */
  async readyToMerge(project: ProjectRef, id: string): Promise<Workspace> {
    const ws = await this.find(project, id);
    if (ws.status !== 'open') throw new AppError('E_CONFLICT', `The workspace is ${ws.status}.`);
    const top = this.repoTop(project);
    const checkedOut = (await currentBranch(top)) === ws.base;
    await this.assertUnlocked(top, { index: checkedOut, head: true, refs: [`refs/heads/${ws.base}`, `refs/heads/${ws.branch}`] });
    await this.syncOrRefuse(project, ws);
    return ws;
  }

  /**
   * A git running beside this one (a sprint status change moving the checkout) holds its locks for
   * moments; a lock still there after LIVE_LOCK_MS is one a crashed git left.
   */
  private async assertUnlocked(top: string, needs: LockNeeds): Promise<void> {
    const until = Date.now() + LIVE_LOCK_MS;
    for (;;) {
      const held = await heldLock(top, needs);
      if (!held) return;
      if (Date.now() >= until) throw new AppError('E_GIT_LOCKED', lockedMessage(held), { response: { lock: held } });
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Merges the workspace's branch into its base in the project repository: a fast-forward, else a
   * merge commit by `person` built off to the side (merge-tree, commit-tree) and set with the old
   * value as compare-and-swap. A conflict changes nothing; so does a stale git lock (409
   * E_GIT_LOCKED, found before anything moves). When the project folder has the base checked out,
   * it must be clean and is moved along. `headFor` gives the commit to merge in place of the
   * branch's head (one on top of it), asked again on every attempt, against the base as it is then.
   */
  async merge(project: ProjectRef, id: string, person: Person, opts: MergeOptions = {}): Promise<MergeResult> {
    const ws = await this.readyToMerge(project, id);
    const top = this.repoTop(project);
    const unionPaths = opts.appendOnly?.length ? repoPathsOf(projectInRepo(top, project), opts.appendOnly) : [];
    return this.repoLocked(top, async () => {
      // Another instance may move the base between our read and our compare-and-swap: start over.
      for (let attempt = 0; attempt < 3; attempt++) {
        const done = await this.mergeOnce(top, ws, person, opts, unionPaths);
        if (done) return done;
      }
      throw new AppError('E_CONFLICT', 'The base branch kept moving during the merge; try again.');
    });
  }

  /** One merge attempt; null when the base moved before it could be set. */
  private async mergeOnce(top: string, ws: Workspace, person: Person, { headFor, publish }: MergeOptions, unionPaths: string[]): Promise<MergeResult | null> {
    const baseRef = `refs/heads/${ws.base}`;
    const old = await resolveCommit(top, baseRef);
    if (!old) throw new AppError('E_CONFLICT', `The base branch "${ws.base}" no longer exists.`);
    const tip = await resolveCommit(top, `refs/heads/${ws.branch}`);
    if (!tip) throw new AppError('E_CONFLICT', `The branch "${ws.branch}" no longer exists.`);
    const head = headFor ? await headFor(tip) : tip;
    const checkedOut = (await currentBranch(top)) === ws.base;
    await this.assertUnlocked(top, { index: checkedOut, head: true, refs: [baseRef] });
    if (checkedOut && !(await cleanSoon(top))) throw new AppError('E_BASE_DIRTY', 'The project folder has uncommitted changes on the base branch.');
    const isAncestor = async (a: string, b: string) => (await git(['merge-base', '--is-ancestor', a, b], { cwd: top })).code === 0;
    let next: string;
    let fastForward = false;
    if (await isAncestor(head, old)) next = old;
    else if (await isAncestor(old, head)) {
      next = head;
      fastForward = true;
    } else {
      const { tree, conflicts: paths } = await mergeTrees(top, old, head, { unionPaths });
      if (paths.length) throw new AppError('E_MERGE_CONFLICT', `Merging ${ws.branch} into ${ws.base} conflicts in ${paths.length} file(s).`, { paths });
      const message = `Merge branch '${ws.branch}' into ${ws.base}`;
      next = (await gitOk(['commit-tree', tree, '-p', old, '-p', head, '-m', message], { cwd: top, env: gitIdentityEnv(person) })).trim();
    }
    let checkoutUpdated = false;
    if (next !== old) {
      if (publish && (await publish(next, old)) === 'retry') return null;
      const set = await git(['update-ref', '-m', `bmad: merge ${ws.branch}`, baseRef, next, old], { cwd: top });
      if (set.code !== 0) {
        // Locked by a git beside this one: tried again once it is done; a stale lock refuses.
        if (lockFileIn(set.stderr)) await this.assertUnlocked(top, { refs: [baseRef] });
        return null;
      }
      if (checkedOut) {
        // Index and files go from the old commit to the new one; a file changed meanwhile (or an
        // untracked one in the way) stops it, and the branch goes back. The index held by a git
        // beside this one is waited for.
        let rt = await git([...atTop(top), 'read-tree', '-m', '-u', old, next], { cwd: top, env: { GIT_OPTIONAL_LOCKS: '1' } });
        for (let i = 0; i < 3 && rt.code !== 0 && lockFileIn(rt.stderr); i++) {
          const stale = await this.assertUnlocked(top, { index: true }).then(() => false, () => true);
          if (stale) break;
          rt = await git([...atTop(top), 'read-tree', '-m', '-u', old, next], { cwd: top, env: { GIT_OPTIONAL_LOCKS: '1' } });
        }
        if (rt.code !== 0) {
          await git(['update-ref', '-m', 'bmad: merge undone', baseRef, old, next], { cwd: top });
          const lock = lockFileIn(rt.stderr);
          if (lock) throw lockedError(top, lock);
          throw new AppError('E_BASE_DIRTY', 'The project folder has changes the merge would overwrite.');
        }
        checkoutUpdated = true;
      }
    }
    const updated = await this.opts.store.update(ws.id, { status: 'merged', mergedCommit: next, mergedInto: ws.base, mergedAt: new Date().toISOString(), mergedBy: person.name }, 'open');
    if (!updated) throw new AppError('E_CONFLICT', 'The workspace changed during the merge.');
    emitProjectEvent(ws.projectId, { type: 'workspace', workspaceId: ws.id });
    return { workspace: updated, commit: next, fastForward, checkoutUpdated };
  }

  /**
   * The merge of `head` into `base` (commits of the project repository) as the workspace merge
   * would make it — append-only files (`appendOnly`, relative to the project) joined as a union —
   * without moving any ref: the tree and what still conflicts. For a test of the merged result
   * in a scratch checkout before anything lands.
   */
  async trialMerge(project: ProjectRef, base: string, head: string, opts: { appendOnly?: string[] } = {}): Promise<TreeMerge> {
    const top = this.repoTop(project);
    return mergeTrees(top, base, head, { unionPaths: opts.appendOnly?.length ? repoPathsOf(projectInRepo(top, project), opts.appendOnly) : [] });
  }

  /**
   * Removes the workspace's branch, then what only it brought into the project repository (its
   * objects, loose or packed), then its clone; the row stays, discarded. A stale lock on the
   * branch refuses it before anything is removed.
   */
  async discard(project: ProjectRef, id: string): Promise<Workspace> {
    const ws = await this.find(project, id);
    if (ws.status === 'discarded') return ws;
    const top = this.repoTop(project);
    const branchRef = `refs/heads/${ws.branch}`;
    const updated = await this.repoLocked(top, async () => {
      await this.assertUnlocked(top, { refs: [branchRef], deleting: true });
      // Every commit the branch ever named (its reflog goes with it) and a sync's leftover.
      const hidden = `refs/bmad/sync/${ws.id}`;
      const heads = [...(await reflogHeads(top, branchRef)), ...[await resolveCommit(top, branchRef), await resolveCommit(top, hidden)].filter((h): h is string => !!h)];
      const del = await git(['update-ref', '-m', 'bmad: workspace discarded', '-d', branchRef], { cwd: top });
      if (del.code !== 0) {
        const lock = lockFileIn(del.stderr);
        if (lock) throw lockedError(top, lock);
        if (await resolveCommit(top, branchRef)) throw new GitError('update-ref', del);
      }
      await git(['update-ref', '-d', hidden], { cwd: top }).catch(() => undefined);
      const row = await this.opts.store.update(ws.id, { status: 'discarded' }, ws.status);
      if (!row) throw new AppError('E_CONFLICT', 'The workspace changed meanwhile.');
      const pruned = await pruneUnique(top, heads).catch((e: unknown) => {
        log.warn('workspace.prune_failed', { workspace: ws.id, message: String((e as Error)?.message ?? e).slice(0, 300) });
        return null;
      });
      if (pruned) log.info('workspace.pruned', { workspace: ws.id, removed: pruned.removed, repacked: pruned.repacked });
      return row;
    });
    const dir = this.checkoutPath(ws);
    const real = await fs.promises.realpath(dir).catch(() => null);
    await removeTree(dir);
    if (real) await forgetCheckout(real);
    emitProjectEvent(project.id, { type: 'workspace', workspaceId: ws.id });
    return updated;
  }
}

/** The project folder's place in its repository, posix ('' when they are one). */
function projectInRepo(top: string, project: ProjectRef): string {
  let real = path.resolve(project.root);
  let realTop = top;
  try {
    real = fs.realpathSync(real);
    realTop = fs.realpathSync(top);
  } catch {
    // Gone: the merge's git will say so.
  }
  return path.relative(realTop, real).split(path.sep).join('/');
}

/** The commits `refs` name now, by one git for all of them; a ref that is not there is absent. */
async function refsNow(top: string, refs: string[], config: Record<string, string>): Promise<Map<string, string>> {
  const out = await gitOk(['for-each-ref', '--format=%(refname) %(objectname)', ...refs], { cwd: top, config });
  const wanted = new Set(refs);
  const map = new Map<string, string>();
  for (const line of out.split('\n')) {
    const at = line.lastIndexOf(' ');
    const name = line.slice(0, at);
    // for-each-ref also lists what is below a name; only the names asked for count.
    if (wanted.has(name)) map.set(name, line.slice(at + 1).trim());
  }
  return map;
}

/** Every commit a ref's reflog names (bounded). */
async function reflogHeads(top: string, ref: string): Promise<string[]> {
  const r = await git(['log', '-g', '--format=%H', '--max-count=10000', ref, '--'], { cwd: top, maxBytes: 1024 * 1024 });
  return r.code === 0 ? r.stdout.split('\n').map((l) => l.trim()).filter((l) => /^[0-9a-f]{40}$/.test(l)) : [];
}

/** Ahead/behind of an open workspace's branch against its base (null when either is gone). */
async function countsOf(top: string, config: Record<string, string>, ws: Workspace): Promise<{ ahead: number; behind: number } | null> {
  const r = await git(['rev-list', '--left-right', '--count', `refs/heads/${ws.base}...refs/heads/${ws.branch}`, '--'], { cwd: top, config });
  if (r.code !== 0) return null;
  const [behind, ahead] = r.stdout.trim().split(/\s+/).map(Number);
  return Number.isFinite(ahead) && Number.isFinite(behind) ? { ahead: ahead!, behind: behind! } : null;
}

function tooLarge(bytes: number, max: number): SyncRefusal {
  return {
    code: 'E_TOO_LARGE',
    message: `the workspace's commits hold ${mb(bytes)} beyond its base, more than the ${mb(max)} a workspace may carry into the project repository (WORKSPACE_MAX_MB); the project's branch stays where it was. Take the large files out of the branch's history (reset and commit again without them) to go on.`,
  };
}

function lockedRefusal(top: string, lock: string): SyncRefusal {
  const shown = lockShown(top, lock);
  return { code: 'E_GIT_LOCKED', message: lockedMessage(shown), lock: shown };
}

function lastLine(r: GitResult): string {
  return r.stderr.trim().split('\n').slice(-1)[0]?.slice(0, 300) ?? '';
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

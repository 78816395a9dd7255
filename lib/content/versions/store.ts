import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { init, readBlob, readCommit, readTree, resolveRef, writeBlob, writeCommit, writeTree, type TreeEntry } from 'isomorphic-git';
import { KeyedLock, isInside, readResolved, resolveInRoot, withFileLock, writeFileAtomic, type ResolvedPath } from '../../core/paths';
import { errorBrand } from '../../core/errors';
import { isFailure, sha256 } from '../../core/results';
import { gitFs } from './git-fs';
import { commitMessage, oneLine, parseCommitMessage, type VersionInfo, type VersionMeta } from './metadata';

export type VersionErrorCode =
  | 'E_INVALID_PATH'
  | 'E_INVALID_AUTHOR'
  | 'E_UNKNOWN_VERSION'
  | 'E_AMBIGUOUS_VERSION'
  | 'E_CORRUPT'
  | 'E_BUSY'
  | 'E_CONFIG'
  | 'E_WRITE';

const VERSION_ERROR = errorBrand('version-error');

/** Recognised with isVersionError: a store is shared by every copy of this module (see the registry below). */
export class VersionError extends Error {
  constructor(
    readonly code: VersionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'VersionError';
    VERSION_ERROR.mark(this);
  }
}

/** True for a VersionError thrown by any copy of this module. */
export function isVersionError(e: unknown): e is VersionError {
  return VERSION_ERROR.has(e) && typeof (e as { code?: unknown }).code === 'string';
}

/**
 * An agent writing in a conversation (with `by`, the person whose turn it was), or a person (or
 * API caller) acting directly, e.g. restoring a version.
 */
export type VersionAuthor = { agentId: string; conversationId: string; by?: string } | { person: string };

export interface RecordInput {
  /** Relative to the work root, posix (`docs/prd.md`). */
  path: string;
  content: Buffer;
  author: VersionAuthor;
  /** One line shown as the commit subject. */
  message?: string;
  /** The tool that wrote the file. */
  tool?: string;
  /**
   * The file's content just before this write (null: it did not exist; omitted: unknown). When it
   * differs from the newest recorded version (a document the user put there, an edit made outside
   * the tools, a write whose record failed) it is kept first, as an untracked version, so the
   * version before this one always exists.
   */
  previous?: Buffer | null;
}

/** A current file: its newest version. */
export type FileInfo = Pick<VersionInfo, 'path' | 'version' | 'at' | 'agentId' | 'conversationId' | 'kind' | 'size' | 'sha256' | 'by'>;

export interface VersionStore {
  /** The shadow repository (a bare git repository). */
  readonly gitdir: string;
  /** The real folder whose files are versioned. */
  readonly workRoot: string;
  /** Records one version of one file; returns its version id. */
  record(input: RecordInput): Promise<string>;
  /** Versions of one file, newest first ([] for a file never recorded). */
  list(path: string): Promise<VersionInfo[]>;
  /** One version's bytes. A version id may be shortened to a prefix unique among the file's versions. */
  read(path: string, version: string): Promise<Buffer>;
  /** Unified diff from one version to another, or to the file as it is now on disk when `to` is omitted. */
  diff(path: string, from: string, to?: string): Promise<string>;
  /** Writes a version back as the current file (atomically, under the file's write lock) and records it as a new version. */
  restore(path: string, version: string, author: VersionAuthor): Promise<string>;
  /** Every file of the newest snapshot with its last writer, sorted by path. */
  files(): Promise<FileInfo[]>;
  /** A real absolute path (a `ResolvedPath.abs`) as a store path, or null when it is outside the work root. */
  relativePath(abs: string): string | null;
}

export interface VersionStoreOptions {
  /** Where the shadow repository lives, e.g. DATA_DIR/versions/<projectId>; created when missing. Never inside workRoot. */
  gitdir: string;
  /** The folder whose files are versioned, e.g. the project's output folder. */
  workRoot: string;
}

const BRANCH = 'refs/heads/main';
const FILE_MODE = '100644';
const TREE_MODE = '040000';
/** Largest current file diff and restore read from disk. */
const MAX_CURRENT_BYTES = 64 * 1024 * 1024;
/** A ref lock older than this was left by a dead process. */
const STALE_LOCK_MS = 30_000;
const LOCK_WAIT_MS = 10_000;
const MIN_PREFIX = 4;
/** Trees are immutable, so a tree read or written once is kept by id; this bounds how many. */
const MAX_CACHED_TREES = 2000;

const fs = gitFs;

function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

/** The real path of a path that may not exist yet: its deepest existing ancestor resolved, the rest appended. */
async function realish(p: string): Promise<string> {
  const tail: string[] = [];
  let current = path.resolve(p);
  for (;;) {
    try {
      return path.join(await fsp.realpath(current), ...tail);
    } catch (e) {
      if (errno(e) !== 'ENOENT' && errno(e) !== 'ENOTDIR') throw e;
      const parent = path.dirname(current);
      if (parent === current) return path.join(current, ...tail);
      tail.unshift(path.basename(current));
      current = parent;
    }
  }
}

/** A store path checked and normalised: posix, relative, no `..`, nothing git would refuse to check out. */
export function storePath(input: string): string {
  if (typeof input !== 'string' || input.length === 0 || input.length > 1024) throw new VersionError('E_INVALID_PATH', 'A path must be a non-empty string of at most 1024 characters');
  if (input.startsWith('/') || /^[A-Za-z]:/.test(input)) throw new VersionError('E_INVALID_PATH', `${input} is absolute; give a path relative to the folder`);
  const names = input.split('/').filter((n) => n !== '' && n !== '.');
  if (names.length === 0) throw new VersionError('E_INVALID_PATH', `${input} names no file`);
  for (const name of names) {
    // eslint-disable-next-line no-control-regex
    if (name === '..' || name.includes('\\') || /[\u0000-\u001f\u007f]/.test(name) || name.trim().toLowerCase() === '.git') {
      throw new VersionError('E_INVALID_PATH', `${oneLine(input)} is not a valid path inside the folder`);
    }
  }
  return names.join('/');
}

/** The author as commit fields: a person has no agent and no conversation. */
function checkAuthor(author: VersionAuthor): { agentId: string | null; conversationId: string | null; by?: string } {
  const ok = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= 200 && oneLine(v) === v;
  if (author && 'person' in author) {
    if (!ok(author.person)) throw new VersionError('E_INVALID_AUTHOR', 'A person author needs a name (one line, at most 200 characters)');
    return { agentId: null, conversationId: null, by: author.person };
  }
  if (!author || !ok(author.agentId) || !ok(author.conversationId)) {
    throw new VersionError('E_INVALID_AUTHOR', 'An author needs an agentId and a conversationId, or a person (one line each, at most 200 characters)');
  }
  const by = typeof author.by === 'string' ? oneLine(author.by) : '';
  return { agentId: author.agentId, conversationId: author.conversationId, ...(by ? { by } : {}) };
}

/** The most time one diff may take on a request's path. */
const DIFF_TIMEOUT_MS = 1000;

function isBinary(data: Buffer): boolean {
  return data.subarray(0, 8000).includes(0);
}

class GitVersionStore implements VersionStore {
  private readonly lock = new KeyedLock();
  private head: string | null = null;
  private headTree: string | null = null;
  private readonly byPath = new Map<string, VersionInfo[]>();
  private readonly trees = new Map<string, TreeEntry[]>();

  constructor(
    readonly gitdir: string,
    readonly workRoot: string,
  ) {}

  /** Every operation runs alone: isomorphic-git is not safe for concurrent writes to one repository, and the index below is shared. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(this.gitdir, async () => {
      await this.sync();
      return fn();
    });
  }

  async initialise(): Promise<void> {
    await fsp.mkdir(this.gitdir, { recursive: true });
    await init({ fs, dir: this.gitdir, gitdir: this.gitdir, bare: true, defaultBranch: 'main' });
    // init stops at an existing config: a process killed between its config and its HEAD leaves no HEAD.
    await fsp.writeFile(path.join(this.gitdir, 'HEAD'), 'ref: refs/heads/main\n', { flag: 'wx' }).catch((e) => {
      if (errno(e) !== 'EEXIST') throw e;
    });
    await this.lock.run(this.gitdir, () => this.sync());
  }

  private async branchHead(): Promise<string | null> {
    try {
      return await resolveRef({ fs, gitdir: this.gitdir, ref: BRANCH });
    } catch (e) {
      if ((e as { code?: string }).code === 'NotFoundError') return null;
      throw e;
    }
  }

  /** Brings the in-memory index up to the branch head, which another process may have moved. */
  private async sync(): Promise<void> {
    const head = await this.branchHead();
    if (head === this.head) return;
    const fresh: VersionInfo[] = [];
    let oid: string | undefined = head ?? undefined;
    let reachedKnown = false;
    let headTree: string | null = null;
    while (oid) {
      if (oid === this.head) {
        reachedKnown = true;
        break;
      }
      const { commit } = await readCommit({ fs, gitdir: this.gitdir, oid });
      if (oid === head) headTree = commit.tree;
      const meta = parseCommitMessage(commit.message);
      if (meta) fresh.push({ version: oid, ...meta });
      oid = commit.parent[0];
    }
    if (!reachedKnown) this.byPath.clear();
    for (const info of fresh.reverse()) this.remember(info);
    this.head = head;
    this.headTree = headTree;
  }

  private remember(info: VersionInfo): void {
    const list = this.byPath.get(info.path);
    if (list) list.push(info);
    else this.byPath.set(info.path, [info]);
  }

  /** The tree with one file set, rewriting only the trees on its path. */
  private async setFile(treeOid: string | null, names: string[], blobOid: string): Promise<string> {
    const entries = treeOid ? [...(await this.treeEntries(treeOid))] : [];
    const [name, ...rest] = names;
    const at = entries.findIndex((e) => e.path === name);
    let entry: TreeEntry;
    if (rest.length === 0) {
      entry = { mode: FILE_MODE, path: name, oid: blobOid, type: 'blob' };
    } else {
      const sub = at >= 0 && entries[at].type === 'tree' ? entries[at].oid : null;
      entry = { mode: TREE_MODE, path: name, oid: await this.setFile(sub, rest, blobOid), type: 'tree' };
    }
    if (at >= 0) entries[at] = entry;
    else entries.push(entry);
    const oid = await writeTree({ fs, gitdir: this.gitdir, tree: entries });
    this.cacheTree(oid, entries);
    return oid;
  }

  private async treeEntries(oid: string): Promise<readonly TreeEntry[]> {
    const cached = this.trees.get(oid);
    if (cached) return cached;
    const { tree } = await readTree({ fs, gitdir: this.gitdir, oid });
    this.cacheTree(oid, tree);
    return tree;
  }

  private cacheTree(oid: string, entries: TreeEntry[]): void {
    if (this.trees.size >= MAX_CACHED_TREES) this.trees.clear();
    this.trees.set(oid, entries);
  }

  private async commitOne(parent: string | null, base: string | null, meta: VersionMeta, content: Buffer): Promise<{ oid: string; tree: string; info: VersionInfo }> {
    const blob = await writeBlob({ fs, gitdir: this.gitdir, blob: content });
    const tree = await this.setFile(base, meta.path.split('/'), blob);
    const ms = Date.parse(meta.at);
    const who = {
      name: meta.agentId
        ? `${oneLine(meta.agentId).replace(/[<>]/g, '')} (${oneLine(meta.conversationId ?? '').replace(/[<>]/g, '')})`
        : meta.by
          ? oneLine(meta.by).replace(/[<>]/g, '')
          : 'untracked',
      email: 'versions@bmad-orchestrator.invalid',
      timestamp: Math.floor(ms / 1000),
      timezoneOffset: 0,
    };
    const oid = await writeCommit({
      fs,
      gitdir: this.gitdir,
      commit: { message: commitMessage(meta), tree, parent: parent ? [parent] : [], author: who, committer: who },
    });
    return { oid, tree, info: { version: oid, ...meta } };
  }

  /**
   * Moves the branch from `expected` to `next` the way git does (an exclusive `.lock` file renamed
   * over the ref), and only if nobody moved it meanwhile: another process writing the same
   * repository makes this return false instead of dropping its commits.
   */
  private async advance(expected: string | null, next: string): Promise<boolean> {
    const refFile = path.join(this.gitdir, ...BRANCH.split('/'));
    const lockFile = `${refFile}.lock`;
    await fsp.mkdir(path.dirname(refFile), { recursive: true });
    const started = Date.now();
    let handle: FileHandle | undefined;
    while (!handle) {
      try {
        handle = await fsp.open(lockFile, 'wx');
      } catch (e) {
        if (errno(e) !== 'EEXIST') throw e;
        const st = await fsp.stat(lockFile).catch(() => null);
        if (st && Date.now() - st.mtimeMs > STALE_LOCK_MS) {
          await fsp.unlink(lockFile).catch(() => undefined);
          continue;
        }
        if (Date.now() - started > LOCK_WAIT_MS) throw new VersionError('E_BUSY', 'The version store is locked by another process');
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    let renamed = false;
    try {
      if ((await this.branchHead()) !== expected) return false;
      await handle.writeFile(`${next}\n`);
      await handle.close();
      handle = undefined;
      await fsp.rename(lockFile, refFile);
      renamed = true;
      return true;
    } finally {
      if (handle) await handle.close().catch(() => undefined);
      if (!renamed) await fsp.unlink(lockFile).catch(() => undefined);
    }
  }

  /** Commits the versions of one record (an untracked one first when needed); runs inside `exclusive`. */
  private async commit(rel: string, content: Buffer, fields: Omit<VersionMeta, 'path' | 'at' | 'size' | 'sha256'>, previous: Buffer | null | undefined): Promise<string> {
    for (;;) {
      const start = this.head;
      const latest = this.byPath.get(rel)?.at(-1);
      const made: VersionInfo[] = [];
      let parent = start;
      let base = this.headTree;
      if (previous != null) {
        const previousSha = sha256(previous);
        if (latest?.sha256 !== previousSha) {
          const meta: VersionMeta = { path: rel, at: new Date().toISOString(), agentId: null, conversationId: null, kind: 'untracked', size: previous.length, sha256: previousSha };
          const c = await this.commitOne(parent, base, meta, previous);
          made.push(c.info);
          parent = c.oid;
          base = c.tree;
        }
      }
      const meta: VersionMeta = { path: rel, at: new Date().toISOString(), size: content.length, sha256: sha256(content), ...fields };
      const c = await this.commitOne(parent, base, meta, content);
      made.push(c.info);
      if (await this.advance(start, c.oid)) {
        for (const info of made) this.remember(info);
        this.head = c.oid;
        this.headTree = c.tree;
        return c.oid;
      }
      // Another process moved the branch: our commits are unreachable garbage; redo them on its head.
      await this.sync();
    }
  }

  async record(input: RecordInput): Promise<string> {
    const rel = storePath(input.path);
    const author = checkAuthor(input.author);
    if (!Buffer.isBuffer(input.content)) throw new VersionError('E_WRITE', 'content must be a Buffer');
    const fields = {
      ...author,
      kind: 'write' as const,
      ...(input.tool ? { tool: oneLine(input.tool, 64) } : {}),
      ...(input.message ? { message: oneLine(input.message) } : {}),
    };
    return this.exclusive(() => this.commit(rel, input.content, fields, input.previous));
  }

  async list(p: string): Promise<VersionInfo[]> {
    const rel = storePath(p);
    return this.exclusive(async () => [...(this.byPath.get(rel) ?? [])].reverse().map((v) => ({ ...v })));
  }

  private findVersion(rel: string, version: string): VersionInfo {
    const id = typeof version === 'string' ? version.trim().toLowerCase() : '';
    if (!/^[0-9a-f]+$/.test(id) || id.length < MIN_PREFIX) throw new VersionError('E_UNKNOWN_VERSION', `${oneLine(String(version))} is not a version id`);
    const matches = (this.byPath.get(rel) ?? []).filter((v) => v.version.startsWith(id));
    if (matches.length === 0) throw new VersionError('E_UNKNOWN_VERSION', `${id} is not a version of ${rel}`);
    if (matches.length > 1) throw new VersionError('E_AMBIGUOUS_VERSION', `${id} matches ${matches.length} versions of ${rel}; give more of the id`);
    return matches[0];
  }

  private async readVersion(rel: string, version: string): Promise<{ info: VersionInfo; content: Buffer }> {
    const info = this.findVersion(rel, version);
    const { blob } = await readBlob({ fs, gitdir: this.gitdir, oid: info.version, filepath: rel });
    const content = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
    if (sha256(content) !== info.sha256) throw new VersionError('E_CORRUPT', `Version ${info.version} of ${rel} does not match its recorded sha256`);
    return { info, content };
  }

  async read(p: string, version: string): Promise<Buffer> {
    const rel = storePath(p);
    return this.exclusive(async () => (await this.readVersion(rel, version)).content);
  }

  /** The file as it is on disk now (null when absent), read with the sandbox's checks. */
  private async current(target: ResolvedPath | null): Promise<Buffer | null> {
    if (!target) return null;
    const data = await readResolved({ ...target, exists: true }, MAX_CURRENT_BYTES);
    if (!isFailure(data)) return data;
    if (data.error.code === 'ENOENT') return null;
    throw new VersionError('E_WRITE', data.error.message);
  }

  private async resolveCurrent(rel: string, access: 'read' | 'write'): Promise<ResolvedPath | null> {
    const target = await resolveInRoot(this.workRoot, rel, access, '{versions}');
    if (target.ok) return target;
    if (target.error.code === 'ENOENT') return null;
    throw new VersionError(access === 'write' ? 'E_WRITE' : 'E_INVALID_PATH', target.error.message);
  }

  async diff(p: string, from: string, to?: string): Promise<string> {
    const rel = storePath(p);
    return this.exclusive(async () => {
      const a = await this.readVersion(rel, from);
      const b = to === undefined ? null : await this.readVersion(rel, to);
      const bytes = b ? b.content : ((await this.current(await this.resolveCurrent(rel, 'read'))) ?? Buffer.alloc(0));
      const fromLabel = a.info.version.slice(0, 12);
      const toLabel = b ? b.info.version.slice(0, 12) : 'current';
      // Identical content has no differences: an empty diff, never bare header lines.
      if (a.content.equals(bytes)) return '';
      if (isBinary(a.content) || isBinary(bytes)) {
        return `Binary files a/${rel} (${fromLabel}) and b/${rel} (${toLabel}) differ\n`;
      }
      // Myers' diff is quadratic when most lines change: past the time limit it gives up (undefined)
      // rather than hold the server for one request.
      return (
        createTwoFilesPatch(`a/${rel}`, `b/${rel}`, a.content.toString('utf8'), bytes.toString('utf8'), fromLabel, toLabel, { context: 3, timeout: DIFF_TIMEOUT_MS }) ??
        `Too many lines of ${rel} changed between ${fromLabel} and ${toLabel} to show the differences; open the two versions to compare them.\n`
      );
    });
  }

  async restore(p: string, version: string, author: VersionAuthor): Promise<string> {
    const rel = storePath(p);
    const who = checkAuthor(author);
    const { info, content } = await this.exclusive(() => this.readVersion(rel, version));
    const first = await this.resolveCurrent(rel, 'write');
    if (!first) throw new VersionError('E_WRITE', `${rel} cannot be written`);
    // The tools' lock first, then the store's (inside record), as the tools take them: never the other way round.
    return withFileLock(first.abs, async () => {
      const target = await this.resolveCurrent(rel, 'write');
      if (!target || target.abs !== first.abs) throw new VersionError('E_WRITE', `${rel} moved while it was being restored; try again`);
      const previous = await this.current(target);
      const written = await writeFileAtomic(target, content);
      if (isFailure(written)) throw new VersionError('E_WRITE', written.error.message);
      const fields = { ...who, kind: 'restore' as const, restoredFrom: info.version };
      return this.exclusive(() => this.commit(rel, content, fields, previous));
    });
  }

  async files(): Promise<FileInfo[]> {
    return this.exclusive(async () => {
      if (!this.head) return [];
      const out: FileInfo[] = [];
      const walk = async (oid: string, prefix: string) => {
        for (const entry of await this.treeEntries(oid)) {
          const p = prefix ? `${prefix}/${entry.path}` : entry.path;
          if (entry.type === 'tree') await walk(entry.oid, p);
          else {
            const last = this.byPath.get(p)?.at(-1);
            if (last) {
              const { version, at, agentId, conversationId, kind, size, sha256: sha, by } = last;
              out.push({ path: p, version, at, agentId, conversationId, kind, size, sha256: sha, ...(by ? { by } : {}) });
            }
          }
        }
      };
      if (this.headTree) await walk(this.headTree, '');
      return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
    });
  }

  /** Resolves once nothing of this store is running or queued (work queued meanwhile included). */
  async idle(): Promise<void> {
    do await this.lock.run(this.gitdir, async () => undefined);
    while (this.lock.size > 0);
  }

  relativePath(abs: string): string | null {
    if (!path.isAbsolute(abs) || !isInside(this.workRoot, abs)) return null;
    const rel = path.relative(this.workRoot, abs);
    if (!rel) return null;
    try {
      return storePath(rel.split(path.sep).join('/'));
    } catch {
      return null;
    }
  }
}

// One store per shadow repository in a process, so its lock and index are the only ones: kept on
// globalThis for the same reason as the file locks.
const REGISTRY = Symbol.for('bmad-orchestrator.versions.stores');
const stores: Map<string, Promise<GitVersionStore>> = ((globalThis as Record<symbol, unknown>)[REGISTRY] ??= new Map()) as Map<string, Promise<GitVersionStore>>;

/**
 * Opens (creating when missing) the shadow repository of one folder. The repository is bare:
 * git never writes into the folder itself, and it must live outside it, where no tool reaches.
 */
export async function openVersionStore(options: VersionStoreOptions): Promise<VersionStore> {
  const [gitdir, workRoot] = await Promise.all([realish(options.gitdir), realish(options.workRoot)]);
  if (isInside(workRoot, gitdir) || isInside(gitdir, workRoot)) {
    throw new VersionError('E_CONFIG', 'The shadow repository must be outside the folder it versions (and not contain it)');
  }
  let opening = stores.get(gitdir);
  if (!opening) {
    const store = new GitVersionStore(gitdir, workRoot);
    opening = store.initialise().then(() => store);
    stores.set(gitdir, opening);
    opening.catch(() => stores.delete(gitdir));
  }
  const store = await opening;
  if (store.workRoot !== workRoot) throw new VersionError('E_CONFIG', 'This shadow repository already versions another folder');
  return store;
}

/**
 * Waits until the stores of the shadow repositories under `folder` are idle, then forgets them:
 * what closes a data folder (a server's runtime, a test's) leaves no write running in it and no
 * store of it behind. A later open reads the repository afresh.
 */
export async function closeVersionStores(folder: string): Promise<void> {
  const root = await realish(folder);
  for (const [gitdir, opening] of [...stores]) {
    if (gitdir !== root && !isInside(root, gitdir)) continue;
    const store = await opening.catch(() => null);
    await store?.idle();
    if (stores.get(gitdir) === opening) stores.delete(gitdir);
  }
}

/**
 * A `recordWrite` hook for a tool context: records each write under one author. Writes outside
 * the store's folder (say a writable project folder when the store versions only the output
 * folder) are not versioned.
 */
export function recorderFor(store: VersionStore, author: VersionAuthor) {
  checkAuthor(author);
  return async (write: { abs: string; content: Buffer; previous?: Buffer | null; tool?: string }): Promise<void> => {
    const rel = store.relativePath(write.abs);
    if (rel === null) return;
    await store.record({ path: rel, content: write.content, author, previous: write.previous, tool: write.tool });
  };
}

import fs from 'node:fs';
import path from 'node:path';
import { spawnFromHelper } from './spawner';
import { filesStamp, plainGitDir, StampedAnswers } from './stamps';

/**
 * Every git the server runs goes through here. A repository's own configuration (its .git/config,
 * what that includes, its config.worktree) and its attributes (.gitattributes in the tree,
 * .git/info/attributes) may come from whoever could write in it — in a workspace, the model's
 * commands. Nothing they say may run a program on the host:
 *
 * - no system or global configuration, a clean environment (no GIT_* of the server's, HOME and
 *   XDG_CONFIG_HOME nowhere, so no user attributes file either);
 * - fixed command-line settings for every single-valued key that names a program or turns one on
 *   (hooks, fsmonitor, pager, editor, ssh, askpass, signing, external diff, alternate refs, auto gc)
 *   — the command line wins over the repository's files;
 * - for the keys whose names git cannot know beforehand (a driver named in .gitattributes:
 *   `filter.<x>.*`, `diff.<x>.*`, `merge.<x>.driver`, `credential.<url>.helper`), the repository's
 *   configuration is listed first (`git config --list`, which only reads) and each such key is
 *   overridden on the command line: filters and diff programs emptied (git then runs none), merge
 *   drivers replaced by git's own text merge;
 * - transports limited to local paths (no ssh, http, ext), so no credential helper or proxy is
 *   ever asked;
 * - the repository the server chose (found on disk, see findRepositoryTop) is a `safe.directory`
 *   on the command line: with no global configuration git would otherwise refuse a repository
 *   owned by another user ("dubious ownership"), and the listing above would silently read none of
 *   its configuration.
 *
 * Callers add `--no-ext-diff --no-textconv` to diff and log themselves (see DIFF_SAFE).
 */

/** What keeps system and global configuration (and attributes) away from a git. */
export const NO_HOST_CONFIG: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  GIT_EDITOR: ':',
};

/** The environment of every git: nothing of the server's. */
export const GIT_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/nonexistent',
  XDG_CONFIG_HOME: '/nonexistent',
  LANG: 'C',
  LC_ALL: 'C',
  ...NO_HOST_CONFIG,
  PAGER: 'cat',
  GIT_PROTOCOL_FROM_USER: '0',
  GIT_NO_REPLACE_OBJECTS: '1',
  GIT_OPTIONAL_LOCKS: '0',
};

/** Fixed overrides, applied to every command. */
export const FIXED_CONFIG: readonly (readonly [string, string])[] = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.untrackedCache', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  ['core.askPass', ''],
  ['core.sshCommand', ''],
  ['core.gitProxy', ''],
  ['core.alternateRefsCommand', ''],
  ['core.attributesFile', '/dev/null'],
  ['credential.helper', ''],
  ['diff.external', ''],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  ['merge.verifySignatures', 'false'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
  ['fetch.writeCommitGraph', 'false'],
  ['submodule.recurse', 'false'],
  ['fetch.recurseSubmodules', 'false'],
  ['protocol.allow', 'never'],
  ['protocol.file.allow', 'always'],
  ['advice.detachedHead', 'false'],
];

/** Flags for diff and log: never an external diff program or a textconv filter. */
export const DIFF_SAFE = ['--no-ext-diff', '--no-textconv', '--no-color'] as const;

/** What a three-way merge of a file with a repository-defined driver uses instead: git's own text merge. */
export const SAFE_MERGE_DRIVER = 'git merge-file --marker-size=%L %A %O %B';

/** Keys of the repository's configuration that name programs per driver, and what replaces them. */
function overrideFor(key: string): [string, string][] {
  const k = key.toLowerCase();
  let m: RegExpMatchArray | null;
  if ((m = /^filter\.(.+)\.(clean|smudge|process|required)$/s.exec(k))) {
    const base = key.slice(0, key.length - m[2]!.length);
    return [
      [`${base}clean`, ''],
      [`${base}smudge`, ''],
      [`${base}process`, ''],
      [`${base}required`, 'false'],
    ];
  }
  if ((m = /^diff\.(.+)\.(command|textconv)$/s.exec(k))) return [[key, '']];
  if (/^merge\.(.+)\.driver$/s.test(k)) return [[key, SAFE_MERGE_DRIVER]];
  if (/^credential\.(.+)\.helper$/s.test(k)) return [[key, '']];
  if (/^remote\.(.+)\.(uploadpack|receivepack)$/s.test(k)) return [[key, k.endsWith('uploadpack') ? 'git-upload-pack' : 'git-receive-pack']];
  if (/^remote\.(.+)\.(vcs|proxy)$/s.test(k)) return [[key, '']];
  return [];
}

/**
 * The working tree's top folder of the repository `folder` is in, found by looking for `.git`
 * upwards (a folder, or a file for linked worktrees), or null. Found on disk rather than asked of
 * git, so a repository's `core.worktree` cannot point the server's checkouts anywhere else.
 */
export function findRepositoryTop(folder: string): string | null {
  let dir = path.resolve(folder);
  for (;;) {
    try {
      const st = fs.statSync(path.join(dir, '.git'));
      if (st.isDirectory() || st.isFile()) return dir;
    } catch {
      // Not here.
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** `safe.directory` values for repositories: as given and as git sees them (symbolic links resolved), working tree and .git. */
function safeDirectories(tops: string[]): [string, string][] {
  const out = new Set<string>();
  for (const top of tops) {
    for (const p of [path.resolve(top), realOrNull(top)]) {
      if (!p) continue;
      out.add(p);
      out.add(path.join(p, '.git'));
    }
  }
  return [...out].map((p) => ['safe.directory', p]);
}

function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The `--upload-pack` of a clone or fetch from the local repository `top`: git clears
 * command-line configuration for the upload-pack it starts on a local repository, so the
 * repository is trusted on upload-pack's own command line (else another user's repository is
 * "dubious" there too). git runs the line with sh, appending the repository's path.
 */
export function trustingUploadPack(top: string): string {
  // No delta search: the copy is local, so loose objects (a project's recent commits, the whole of
  // one never packed) go as they are, in half the time; deltas already packed are still reused.
  const settings = [...safeDirectories([top]), ['pack.window', '0']];
  return ['git', ...settings.flatMap(([k, v]) => ['-c', shellQuote(`${k}=${v}`)]), 'upload-pack'].join(' ');
}

export interface GitOptions {
  /** Where git runs (it finds the repository from there; that repository is trusted whoever owns it). */
  cwd: string;
  /** Other repositories this git reads (a clone's source), trusted whoever owns them. */
  trust?: string[];
  /** Added to GIT_ENV (identities, GIT_INDEX_FILE...). */
  env?: Record<string, string>;
  /** stdin (a Buffer is written byte for byte). */
  input?: string | Buffer;
  /** stdout read as latin1 (one char per byte) rather than UTF-8: raw objects kept byte for byte. */
  bytes?: boolean;
  timeoutMs?: number;
  /** stdout kept at most; git is killed once it has written more (the result says `cut`). */
  maxBytes?: number;
  /** The overrides safeConfig gave for this repository, read once for many gits in a row. */
  config?: Record<string, string>;
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout reached maxBytes: reading stopped there and git was killed. */
  cut: boolean;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
const MAX_STDERR = 64 * 1024;

async function spawnGit(args: string[], opts: GitOptions): Promise<GitResult> {
  const r = await spawnFromHelper({
    args,
    cwd: opts.cwd,
    env: { ...GIT_ENV, ...(opts.env ?? {}) },
    ...(opts.input !== undefined ? { input: opts.input } : {}),
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxBytes: opts.maxBytes ?? DEFAULT_MAX_BYTES,
    maxStderr: MAX_STDERR,
  });
  return {
    code: r.code,
    stdout: r.stdout.toString(opts.bytes ? 'latin1' : 'utf8'),
    stderr: r.stderr.toString('utf8').slice(0, MAX_STDERR),
    cut: r.cut,
  };
}

/**
 * Overrides as GIT_CONFIG_COUNT/KEY/VALUE (command-line scope, like `-c`): a driver's name may hold
 * "=", which `-c key=value` would split in the wrong place.
 */
export function configEnv(pairs: Iterable<readonly [string, string]>): Record<string, string> {
  const env: Record<string, string> = {};
  let i = 0;
  for (const [k, v] of pairs) {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
    i++;
  }
  env.GIT_CONFIG_COUNT = String(i);
  return env;
}

/**
 * The overrides for the repository at `cwd`: the fixed ones, then one per driver key its
 * configuration holds (read with includes; reading runs nothing). Outside a repository, the fixed ones.
 * A listing is kept while the repository's config files stay as they were, never when they include others.
 */
export async function safeConfig(cwd: string, trust: string[] = []): Promise<Record<string, string>> {
  const top = findRepositoryTop(cwd);
  const key = `${path.resolve(cwd)}\0${trust.join('\0')}`;
  // Taken before the listing: a file changed while git reads it gets another stamp next time.
  const stamp = top === path.resolve(cwd) ? configStamp(top) : null;
  const kept = listedConfigs.get(key, stamp);
  if (kept) return kept;
  const fixed = [...FIXED_CONFIG, ...safeDirectories([...(top ? [top] : []), ...trust])];
  const listed = await spawnGit(['config', '--list', '--null', '--name-only'], { cwd, env: configEnv(fixed), timeoutMs: 10_000 });
  // Fails closed: a configuration that cannot be listed (unreadable, an include that never
  // ends) is one whose drivers cannot be known, so nothing runs on it.
  if (listed.code !== 0 || listed.cut) throw new GitError('config', listed);
  const overrides = new Map<string, string>();
  let includes = false;
  for (const name of listed.stdout.split('\0')) {
    if (!name) continue;
    if (/^include(if\..*)?\.path$/is.test(name)) includes = true;
    for (const [k, v] of overrideFor(name)) overrides.set(k, v);
  }
  const config = configEnv([...fixed, ...overrides]);
  // An included file can change without the repository's own files changing: never kept.
  if (!includes) listedConfigs.set(key, stamp, config);
  return config;
}

/** Listings of repositories' configuration, kept while the files git read them from stay as they were. */
const listedConfigs = new StampedAnswers<Record<string, string>>(256);

/** What a repository's configuration is read from (its config and config.worktree), or null when that cannot be told safely. */
function configStamp(top: string): string | null {
  const dir = plainGitDir(top);
  return dir ? filesStamp([path.join(dir, 'config'), path.join(dir, 'config.worktree')]) : null;
}

/** Runs `git <args>` safely at `cwd` (see above). Throws only when the repository's configuration cannot be read; otherwise read `code`. */
export async function git(args: string[], opts: GitOptions): Promise<GitResult> {
  const config = opts.config ?? (await safeConfig(opts.cwd, opts.trust));
  // The caller's env may add identities or an index file, never replace the overrides.
  return spawnGit(['--no-pager', ...args], { ...opts, env: { ...(opts.env ?? {}), ...config } });
}

/** `git` that must succeed: its output, or an Error carrying git's first line of complaint (no paths added). */
export async function gitOk(args: string[], opts: GitOptions): Promise<string> {
  const r = await git(args, opts);
  if (r.code !== 0) throw new GitError(args[0] ?? 'git', r);
  return r.stdout;
}

export class GitError extends Error {
  constructor(
    readonly command: string,
    readonly result: GitResult,
  ) {
    super(`git ${command} failed (${result.code}): ${redactPaths((result.stderr.trim().split('\n').slice(-1)[0] ?? '').trim())}`);
    this.name = 'GitError';
  }
}

/**
 * git's complaints name server paths ("… safe.directory /srv/…", "fatal: '/data/…' does not
 * exist"); a GitError's message may reach a response, so absolute paths in it become "<path>".
 * The full stderr stays in `result` for logs.
 */
export function redactPaths(text: string): string {
  return text.replace(/(^|[\s'"`=(:,])\/[^\s'"`),]*/g, '$1<path>');
}

/** Who a commit is by. */
export interface GitPerson {
  name: string;
  email: string;
}

/**
 * git's identity variables for a person: "<", ">" and line ends are what git refuses in an ident
 * (one such name would fail every commit), so they are dropped; empty falls back to the app's own.
 */
export function gitIdentityEnv(p: GitPerson): Record<string, string> {
  const clean = (s: string, fallback: string) => s.replace(/[<>\r\n\0]/g, '').trim() || fallback;
  const name = clean(p.name, 'BMAD');
  const email = clean(p.email, 'bmad@localhost');
  return { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email };
}

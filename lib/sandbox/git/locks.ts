import fs from 'node:fs';
import path from 'node:path';
import { git } from './runner';

/**
 * Git's own lock files (`index.lock`, `HEAD.lock`, `refs/heads/<b>.lock`, `packed-refs.lock`): a
 * git that crashed leaves one behind, and every later git that needs that file fails until a
 * person removes it. They are told which file it is (relative to the repository, never a server
 * path) and what to do, never that the folder has changes.
 */

/** The lock file a git complaint names ("Unable to create '<path>.lock': File exists"), as git wrote it; null when it names none. */
export function lockFileIn(stderr: string): string | null {
  const m = /Unable to create '([^'\n]+\.lock)': File exists/.exec(stderr);
  return m ? m[1]! : null;
}

/** A lock file's path as a person finds it: relative to the repository's top, else from its `.git` on; never absolute. */
export function lockShown(top: string, lock: string): string {
  const abs = path.resolve(top, lock);
  for (const root of [path.resolve(top), realOrNull(top)]) {
    if (!root) continue;
    const rel = path.relative(root, abs);
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  }
  const at = abs.lastIndexOf(`${path.sep}.git${path.sep}`);
  return at >= 0 ? abs.slice(at + 1).split(path.sep).join('/') : path.basename(abs);
}

function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

/** What a person is told about a stale lock. */
export function lockedMessage(shown: string): string {
  return `The project repository is locked by ${shown}: another git may be running there. If none is (a git that crashed leaves this file behind), remove ${shown} and try again; nothing was changed.`;
}

interface GitDirs {
  gitDir: string;
  commonDir: string;
}

const dirsOf = new Map<string, GitDirs>();

/** The repository's git folder (its index, HEAD) and common folder (refs, objects), absolute. */
export async function gitDirs(top: string): Promise<GitDirs> {
  const known = dirsOf.get(top);
  if (known) return known;
  const r = await git(['rev-parse', '--git-dir', '--git-common-dir'], { cwd: top });
  const [gitDir, commonDir] = r.stdout.split('\n').map((l) => l.trim());
  if (r.code !== 0 || !gitDir || !commonDir) throw new Error('git rev-parse --git-dir failed');
  const dirs = { gitDir: path.resolve(top, gitDir), commonDir: path.resolve(top, commonDir) };
  if (dirsOf.size > 500) dirsOf.clear();
  dirsOf.set(top, dirs);
  return dirs;
}

/** What an operation would lock: the index, HEAD, and refs by full name (`refs/heads/main`). */
export interface LockNeeds {
  index?: boolean;
  head?: boolean;
  refs?: string[];
  /** The refs are deleted: git then rewrites packed-refs too. */
  deleting?: boolean;
}

/**
 * The first lock file present among those the operation would take, shown relative to the
 * repository; null when none is. Read before anything changes, so a stale lock refuses the whole
 * operation rather than leaving it half done.
 */
export async function heldLock(top: string, needs: LockNeeds): Promise<string | null> {
  const { gitDir, commonDir } = await gitDirs(top);
  const files: string[] = [];
  if (needs.index) files.push(path.join(gitDir, 'index.lock'));
  if (needs.head) files.push(path.join(gitDir, 'HEAD.lock'));
  if (needs.refs?.length) {
    if (needs.deleting) files.push(path.join(commonDir, 'packed-refs.lock'));
    for (const ref of needs.refs) files.push(path.join(commonDir, `${ref}.lock`));
  }
  for (const f of files) {
    if (fs.existsSync(f)) return lockShown(top, f);
  }
  return null;
}

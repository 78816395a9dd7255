import fs from 'node:fs';
import path from 'node:path';
import { BoundedMap } from '../../core/bounded-map';
import { findRepositoryTop, git, gitOk } from './runner';
import { fileStamp, filesStamp, plainGitDir, StampedAnswers } from './stamps';

export { findRepositoryTop };

/** What a project folder's repository shows: never a path. */
export interface RepositoryInfo {
  /** The branch checked out; null when HEAD is detached. */
  branch: string | null;
  /** HEAD's commit; null on a branch with no commit yet. */
  head: string | null;
  /** No change to a tracked file, staged or not (untracked files do not count). */
  clean: boolean;
}

/** Global options that pin the working tree to `top`. */
export function atTop(top: string): string[] {
  return [`--work-tree=${top}`];
}

/**
 * Answers about refs kept while the files git read them from stay as they were: the autopilot and
 * the board ask every few seconds of repositories that mostly sit still.
 */
const branches = new StampedAnswers<string | null>(256);
const commits = new StampedAnswers<string>(1024);

export async function currentBranch(top: string): Promise<string | null> {
  const dir = plainGitDir(top);
  const stamp = dir ? fileStamp(path.join(dir, 'HEAD')) : null;
  const kept = branches.get(top, stamp);
  if (kept !== undefined) return kept;
  const r = await git(['symbolic-ref', '-q', '--short', 'HEAD'], { cwd: top });
  const branch = r.code === 0 ? r.stdout.trim() || null : null;
  if (r.code === 0 || r.code === 1) branches.set(top, stamp, branch);
  return branch;
}

/** A revision's commit, or null when it names none. */
export async function resolveCommit(top: string, rev: string): Promise<string | null> {
  const dir = plainGitDir(top);
  const loose = dir ? looseRef(dir, rev) : null;
  // A branch's own file names its commit: git is asked once whether that object is a commit.
  if (loose && commitsSeen.has(`${top}\0${loose}`)) return loose;
  const stamp = loose || !dir ? null : refStamp(dir, rev);
  const key = `${top}\0${rev}`;
  const kept = commits.get(key, stamp);
  if (kept !== undefined) return kept;
  const r = await git(['rev-parse', '-q', '--verify', '--end-of-options', `${rev}^{commit}`], { cwd: top });
  const commit = r.code === 0 ? r.stdout.trim() || null : null;
  if (commit && commit === loose) commitsSeen.set(`${top}\0${loose}`, true);
  // Only a packed ref naming its commit itself: a symbolic ref or a tag object is read through other files.
  else if (commit && stamp && dir && (await packedNames(dir, rev, commit))) commits.set(key, stamp, commit);
  return commit;
}

/** Commits known to be commits, by repository and id: what an object is never changes. */
const commitsSeen = new BoundedMap<string, true>(4096);

/** The commit id a full ref's own file holds, when it is a plain file holding one (not a symbolic ref, not a link). */
function looseRef(dir: string, ref: string): string | null {
  if (!refIsPlain(ref)) return null;
  let fd: number | undefined;
  try {
    fd = fs.openSync(path.join(dir, ...ref.split('/')), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    if (!fs.fstatSync(fd).isFile()) return null;
    const buf = Buffer.alloc(80);
    const n = fs.readSync(fd, buf, 0, 80, 0);
    const m = /^([0-9a-f]{40}|[0-9a-f]{64})\n?$/.exec(buf.toString('latin1', 0, n));
    return m ? m[1]! : null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const refIsPlain = (ref: string) => /^refs\/(heads|remotes|tags)\/[A-Za-z0-9._/-]+$/.test(ref) && !ref.split('/').some((p) => p === '' || p === '.' || p === '..' || p.endsWith('.lock'));

/** A full ref with no file of its own: the packed refs, where git resolves it from. */
function refStamp(dir: string, ref: string): string | null {
  return refIsPlain(ref) ? filesStamp([path.join(dir, ...ref.split('/')), path.join(dir, 'packed-refs')]) : null;
}

async function packedNames(dir: string, ref: string, commit: string): Promise<boolean> {
  const packed = await fs.promises.readFile(path.join(dir, 'packed-refs'), 'utf8').catch(() => '');
  return `\n${packed}`.includes(`\n${commit} ${ref}\n`);
}

/** Whether the tracked files of the checkout at `top` match its index and HEAD. */
export async function isClean(top: string): Promise<boolean> {
  const out = await gitOk([...atTop(top), 'status', '--porcelain=v1', '-z', '--untracked-files=no', '--ignore-submodules=all'], { cwd: top });
  return out.length === 0;
}

export async function repositoryInfo(folder: string): Promise<RepositoryInfo | null> {
  const top = findRepositoryTop(folder);
  if (!top) return null;
  try {
    const probe = await git(['rev-parse', '--git-dir'], { cwd: top });
    if (probe.code !== 0) return null;
    const [branch, head, clean] = await Promise.all([currentBranch(top), resolveCommit(top, 'HEAD'), isClean(top).catch(() => false)]);
    return { branch, head, clean };
  } catch {
    // A configuration git cannot read: nothing is run on it, and nothing shown.
    return null;
  }
}

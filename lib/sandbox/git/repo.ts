import { findRepositoryTop, git, gitOk } from './runner';

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

export async function currentBranch(top: string): Promise<string | null> {
  const r = await git(['symbolic-ref', '-q', '--short', 'HEAD'], { cwd: top });
  return r.code === 0 ? r.stdout.trim() || null : null;
}

/** A revision's commit, or null when it names none. */
export async function resolveCommit(top: string, rev: string): Promise<string | null> {
  const r = await git(['rev-parse', '-q', '--verify', '--end-of-options', `${rev}^{commit}`], { cwd: top });
  return r.code === 0 ? r.stdout.trim() || null : null;
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

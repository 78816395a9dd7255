import { git } from './runner';
import { atTop, currentBranch, resolveCommit } from './repo';

const ZERO = '0000000000000000000000000000000000000000';

/** Whether commit `a` is `b` or an ancestor of it. */
export async function isAncestor(top: string, a: string, b: string): Promise<boolean> {
  return (await git(['merge-base', '--is-ancestor', a, b], { cwd: top })).code === 0;
}

/**
 * What became of a branch asked to move to a commit: already there, made, moved (with the
 * checkout), or left alone because it holds commits the target lacks (`ahead`, `diverged`) or the
 * checkout could not follow (`blocked`).
 */
export type FastForward = 'current' | 'created' | 'fast-forwarded' | 'ahead' | 'diverged' | 'blocked';

/**
 * Moves the local `branch` to `to` when that loses nothing (its commit is an ancestor of `to`),
 * with the checkout when the project folder has it checked out; the branch goes back when the
 * checkout cannot follow (`blocked`). A branch the repository lacks is made.
 */
export async function fastForward(top: string, branch: string, to: string): Promise<FastForward> {
  const ref = `refs/heads/${branch}`;
  const local = await resolveCommit(top, ref);
  if (!local) {
    const made = await git(['update-ref', '-m', 'bmad: branch from the remote', ref, to, ZERO], { cwd: top });
    return made.code === 0 ? 'created' : 'blocked';
  }
  if (local === to) return 'current';
  if (!(await isAncestor(top, local, to))) return (await isAncestor(top, to, local)) ? 'ahead' : 'diverged';
  const checkedOut = (await currentBranch(top)) === branch;
  const set = await git(['update-ref', '-m', 'bmad: fast-forward to the remote', ref, to, local], { cwd: top });
  if (set.code !== 0) return 'blocked';
  if (!checkedOut) return 'fast-forwarded';
  let moved = { code: 1, stderr: '' } as { code: number; stderr: string };
  for (let i = 0; i < 20; i++) {
    await git([...atTop(top), 'update-index', '-q', '--refresh'], { cwd: top, env: { GIT_OPTIONAL_LOCKS: '1' } });
    moved = await git([...atTop(top), 'read-tree', '-m', '-u', local, to], { cwd: top, env: { GIT_OPTIONAL_LOCKS: '1' } });
    if (moved.code === 0 || !moved.stderr.includes('index.lock')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (moved.code !== 0) {
    await git(['update-ref', '-m', 'bmad: fast-forward undone', ref, local, to], { cwd: top });
    return 'blocked';
  }
  return 'fast-forwarded';
}


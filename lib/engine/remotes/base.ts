import { git, gitIdentityEnv, gitOk, type GitPerson } from '../../sandbox/git/runner';
import path from 'node:path';
import { atTop, resolveCommit } from '../../sandbox/git/repo';
import { isAncestor } from '../../sandbox/git/fast-forward';
import { log } from '../../core/log';

export { fastForward, isAncestor, type FastForward } from '../../sandbox/git/fast-forward';

/**
 * The project repository's base branch beside the remote's. A fetch writes the remote's head of a
 * branch to `refs/remotes/origin/<branch>` (the tracking ref: a mirror, moved only by fetches and
 * by the server's own pushes). The local base follows it when it can without losing anything: a
 * fast-forward (compare-and-swap), the project folder's checkout moved along when it has the base
 * checked out (git's two-tree `read-tree -m -u`, which refuses rather than overwrite a local
 * change or an untracked file; the branch then goes back and the base is `blocked`). A local base
 * with commits the remote lacks (a merge made on the server in pull-request mode, the BMAD install
 * committed after a clone) is `ahead`, or `diverged` when the remote moved too: nothing local is
 * ever rewritten.
 */
export const trackingRef = (branch: string) => `refs/remotes/origin/${branch}`;

export type BaseRelation = 'up-to-date' | 'behind' | 'ahead' | 'diverged' | 'unknown';

export interface BaseState {
  branch: string;
  /** The local base's commit (null: no such branch). */
  local: string | null;
  /** The remote's, as last fetched (null: never fetched, or the remote has no such branch). */
  remote: string | null;
  /** Commits of the local base the remote lacks, and the other way round (null when either is unknown). */
  ahead: number | null;
  behind: number | null;
  state: BaseRelation;
}

/** Where the local base stands against the remote's, from the refs alone (no network). */
export async function baseState(top: string, branch: string): Promise<BaseState> {
  const [local, remote] = await Promise.all([resolveCommit(top, `refs/heads/${branch}`), resolveCommit(top, trackingRef(branch))]);
  if (!local || !remote) return { branch, local, remote, ahead: null, behind: null, state: 'unknown' };
  if (local === remote) return { branch, local, remote, ahead: 0, behind: 0, state: 'up-to-date' };
  const r = await git(['rev-list', '--left-right', '--count', `${local}...${remote}`], { cwd: top });
  if (r.code !== 0) return { branch, local, remote, ahead: null, behind: null, state: 'unknown' };
  const [ahead, behind] = r.stdout.trim().split(/\s+/).map(Number) as [number, number];
  const state: BaseRelation = ahead && behind ? 'diverged' : ahead ? 'ahead' : behind ? 'behind' : 'up-to-date';
  return { branch, local, remote, ahead, behind, state };
}

/**
 * Where a new workspace starts: the remote's head when the local base has nothing the remote
 * lacks, the local base when it holds the remote's head, and when they diverged a merge of both
 * (a commit only, no ref moved; by `person`), or the local base when that merge conflicts.
 */
export async function startCommit(top: string, branch: string, person: GitPerson): Promise<string | null> {
  const [local, remote] = await Promise.all([resolveCommit(top, `refs/heads/${branch}`), resolveCommit(top, trackingRef(branch))]);
  if (!remote) return local;
  if (!local || (await isAncestor(top, local, remote))) return remote;
  if (await isAncestor(top, remote, local)) return local;
  const m = await git(['merge-tree', '--write-tree', '--no-messages', '-z', local, remote], { cwd: top });
  if (m.code !== 0) {
    log.warn('remote.start_diverged', { branch, conflict: m.code === 1 });
    return local;
  }
  const tree = m.stdout.split('\0')[0]!.trim();
  return (await gitOk(['commit-tree', tree, '-p', local, '-p', remote, '-m', `Merge the remote's ${branch} into the server's ${branch}`], { cwd: top, env: gitIdentityEnv(person) })).trim();
}

/**
 * Commits what the project folder `folder` holds that its repository does not (a BMAD install laid
 * over a cloned repository) on the branch checked out, by `person`: the commit, or null when there
 * was nothing to commit. Committed so that workspaces (clones of the branch) and the board (which
 * reads commits) see it; it reaches the remote like any of the server's commits (see docs/remotes.md).
 */
export async function commitFolder(top: string, folder: string, person: GitPerson, message: string): Promise<string | null> {
  const rel = path.relative(top, folder).split(path.sep).join('/') || '.';
  await gitOk([...atTop(top), '--literal-pathspecs', 'add', '-A', '--', rel], { cwd: top, env: { GIT_OPTIONAL_LOCKS: '1' } });
  const staged = await git([...atTop(top), 'diff', '--cached', '--quiet', '--no-ext-diff'], { cwd: top });
  if (staged.code === 0) return null;
  await gitOk([...atTop(top), 'commit', '-q', '--no-verify', '-m', message], { cwd: top, env: { ...gitIdentityEnv(person), GIT_OPTIONAL_LOCKS: '1' } });
  return resolveCommit(top, 'HEAD');
}

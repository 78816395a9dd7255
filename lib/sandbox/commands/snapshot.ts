import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileLockFolder } from '../../core/paths';

/**
 * The git status a workspace's checkout was left in by its last command, so the next command's
 * "before" need not be read again (a git process inside the sandbox, the largest part of a short
 * command's cost after bubblewrap itself). It stands only while nothing but commands touched the
 * checkout since, which three things tell, each checked before it is used (all under the
 * workspace's lock, which every command and file tool holds):
 * - whatever else holds the workspace's lock (a file tool's write; a read leaves it) forgets
 *   it, in this process and, through a token in the shared lock folder, in every instance
 *   sharing it;
 * - the host's own steps on the checkout (a turn's commit, a setup) forget it (forgetStatus);
 * - a stamp of the repository's own files (index, HEAD, packed refs, HEAD's log) taken right
 *   after the command must be unchanged: any git operation from outside a command (another
 *   instance's sync among them) moves one of them.
 * Anything in doubt (no snapshot, a cut report, a command cut off) reads the status again.
 */

interface Kept {
  status: Map<string, string>;
  stamp: string;
}

const kept = new Map<string, Kept>();
/** Checkouts remembered at most (the least recently used go first), and entries of one kept at most. */
const MAX_KEPT = 256;
const MAX_ENTRIES = 20_000;

/** The lock folder's token for a checkout (by its real path): rewritten by every other holder of its lock. */
function tokenFile(real: string): string {
  return path.join(fileLockFolder(), `${createHash('sha256').update(`${real}\0status`).digest('hex').slice(0, 40)}.touched`);
}

const GIT_FILES = ['index', 'HEAD', 'packed-refs', 'logs/HEAD'];

/**
 * What says the checkout's git state is as it was: lstat of the repository's own files (never
 * read, no link followed at their last step) and the lock folder's token. Null when `.git` is
 * no folder (a `gitdir:` file): then nothing is kept.
 */
async function stampOf(real: string): Promise<string | null> {
  const dotGit = path.join(real, '.git');
  const top = await fs.lstat(dotGit).catch(() => null);
  if (!top?.isDirectory()) return null;
  const parts = await Promise.all([
    ...GIT_FILES.map((f) =>
      fs.lstat(path.join(dotGit, f), { bigint: true }).then(
        (s) => `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}:${s.mode}`,
        () => '-',
      ),
    ),
    fs.readFile(tokenFile(real), 'utf8').catch(() => ''),
  ]);
  return `${top.ino}|${parts.join('|')}`;
}

/** The status the last command left, when it still stands; null otherwise. */
export async function keptStatus(real: string): Promise<Map<string, string> | null> {
  const k = kept.get(real);
  if (!k) return null;
  const stamp = await stampOf(real);
  if (stamp !== null && k.stamp === stamp) return k.status;
  kept.delete(real);
  return null;
}

/** What the last command left is not known (it was cut off, or its report was): the next one reads it. */
export function dropStatus(real: string): void {
  kept.delete(real);
}

/** Keeps what a command left (read after every process of it is gone). */
export async function keepStatus(real: string, status: Map<string, string>): Promise<void> {
  const stamp = await stampOf(real);
  kept.delete(real);
  if (stamp === null || status.size > MAX_ENTRIES) return;
  kept.set(real, { status, stamp });
  if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value as string);
}

/**
 * Something other than a command touched (or may have touched) the checkout: the next command
 * reads its status before it runs. `real` is the checkout's real path. Also tells the other
 * instances sharing the lock folder.
 */
export async function forgetStatus(real: string): Promise<void> {
  kept.delete(real);
  await fs.writeFile(tokenFile(real), randomBytes(12).toString('hex')).catch(async () => {
    await fs.mkdir(fileLockFolder(), { recursive: true }).catch(() => undefined);
    await fs.writeFile(tokenFile(real), randomBytes(12).toString('hex')).catch(() => undefined);
  });
}

/** The checkout is gone (its workspace discarded): nothing of it is kept, here or in the lock folder. */
export async function forgetCheckout(real: string): Promise<void> {
  kept.delete(real);
  await fs.unlink(tokenFile(real)).catch(() => undefined);
}

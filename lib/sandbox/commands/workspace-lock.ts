import { promises as fs } from 'node:fs';
import path from 'node:path';
import { withFileLock } from '../../core/paths';
import { forgetStatus } from './snapshot';

/**
 * One thing at a time in a workspace's checkout: a command (its whole sandbox, from the mounts
 * to the set-id clearing after it) or a file tool's look or write. Parallel calls of a turn
 * queue here, so no command runs while the server walks or writes the checkout on the host: a
 * link a command swaps in (a folder for a symlink, in a loop) has no host-side step to race.
 * Keyed by the checkout's real path, in this process and through a lock file every instance
 * sharing the lock folder sees. No time limit on the wait (a holder ends within its own limits);
 * the signal stops it.
 */
export async function withWorkspaceLock<T>(checkout: string, fn: () => Promise<T>, signal?: AbortSignal, opts: { readsOnly?: boolean } = {}): Promise<T> {
  const real = await fs.realpath(checkout).catch(() => path.resolve(checkout));
  return withFileLock(
    `${real}\0commands`,
    async () => {
      // Whatever a holder other than a command may change in the checkout, the next command
      // reads its git status afresh for (see snapshot.ts); a holder that only reads leaves it.
      if (!opts.readsOnly) await forgetStatus(real);
      return fn();
    },
    { waitMs: Number.POSITIVE_INFINITY, signal },
  );
}

/** The lock as a command holds it: what a command changes, it reads itself. */
export async function withCommandLock<T>(real: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  return withFileLock(`${real}\0commands`, fn, { waitMs: Number.POSITIVE_INFINITY, signal });
}

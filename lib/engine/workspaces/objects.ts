import fs from 'node:fs';
import path from 'node:path';
import { git, gitOk } from '../../sandbox/git/runner';
import { gitDirs } from '../../sandbox/git/locks';

/**
 * What a workspace's commits weigh in the project repository, and the removal of what only a
 * workspace brought there. Both run in the project repository (the server's own, whose config the
 * runner makes safe), under the repository's lock: a fetch writes its objects before its ref, so
 * a removal running beside one could take objects that are about to become reachable.
 */

/** Bytes on disk of the objects reachable from `head` but from none of `not`. */
export async function diskUsage(top: string, head: string, not: string[], config?: Record<string, string>): Promise<number> {
  const out = await gitOk(['rev-list', '--objects', '--disk-usage', head, '--not', ...not], { cwd: top, timeoutMs: 300_000, ...(config ? { config } : {}) });
  const n = Number(out.trim());
  return Number.isFinite(n) ? n : 0;
}

export interface Pruned {
  /** Loose objects removed. */
  removed: number;
  /** Some were in a pack: the repository was repacked without them. */
  repacked: boolean;
}

const UNLINKS_AT_ONCE = 16;

/**
 * Removes the objects reachable from `heads` that nothing else keeps: no ref, no reflog entry, no
 * index (the project folder's staged files). The repository's own unreachable objects (a person's
 * dropped stash) are left alone: only what these heads reach is looked at. Loose objects are
 * removed one by one; when some sit in a pack (the repository's own gc packed them), the
 * repository is repacked, which drops unreachable packed objects.
 */
export async function pruneUnique(top: string, heads: string[]): Promise<Pruned> {
  const wanted = [...new Set(heads.filter((h) => /^[0-9a-f]{40}$/.test(h)))];
  if (!wanted.length) return { removed: 0, repacked: false };
  const r = await git(['rev-list', '--objects', '--no-object-names', '--missing=allow-any', '--ignore-missing', ...wanted, '--not', '--all', '--reflog', '--indexed-objects'], { cwd: top, timeoutMs: 300_000, maxBytes: 256 * 1024 * 1024 });
  if (r.code !== 0) throw new Error(`git rev-list failed (${r.code}): ${r.stderr.trim().split('\n').slice(-1)[0] ?? ''}`);
  const doomed = r.stdout.split('\n').map((l) => l.trim()).filter((l) => /^[0-9a-f]{40}$/.test(l));
  if (!doomed.length) return { removed: 0, repacked: false };
  const objects = path.join((await gitDirs(top)).commonDir, 'objects');
  let removed = 0;
  const notLoose: string[] = [];
  for (let i = 0; i < doomed.length; i += UNLINKS_AT_ONCE) {
    await Promise.all(
      doomed.slice(i, i + UNLINKS_AT_ONCE).map(async (oid) => {
        try {
          await fs.promises.unlink(path.join(objects, oid.slice(0, 2), oid.slice(2)));
          removed++;
        } catch {
          notLoose.push(oid);
        }
      }),
    );
  }
  let repacked = false;
  if (notLoose.length) {
    const check = await git(['cat-file', '--batch-check=%(objectname)'], { cwd: top, input: notLoose.map((o) => `${o}\n`).join('') });
    const packed = check.stdout.split('\n').some((l) => /^[0-9a-f]{40}$/.test(l.trim()));
    if (packed) {
      const rp = await git(['repack', '-a', '-d', '-q'], { cwd: top, timeoutMs: 1_800_000 });
      repacked = rp.code === 0;
    }
  }
  return { removed, repacked };
}

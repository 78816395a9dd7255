import fs from 'node:fs';
import path from 'node:path';
import { BoundedMap } from '../../core/bounded-map';

/**
 * Stamps of the files git reads a repository's configuration and refs from, so an answer git gave
 * can be kept until one of them changes (a git is a process of its own, dear on a server that
 * looks often). A stamp is the file's identity, size and times, or "-" when it is not there; a
 * file changed within the clock's tick could change again with the same stamp, so a file changed
 * just now has none (git's own "racy" entries) and nothing is kept for it.
 */

/** How long after its last change a file is stamped. */
const SETTLED_MS = 2_000;

/**
 * The `.git` folder of the checkout at `top` when git reads it and nothing else: a folder (not a
 * gitfile sending git elsewhere), one git takes as a repository (else it would look above), with
 * no common folder shared with other worktrees and refs in files (not a reftable).
 */
export function plainGitDir(top: string): string | null {
  const dir = path.join(top, '.git');
  try {
    if (!fs.lstatSync(dir).isDirectory()) return null;
    if (!fs.lstatSync(path.join(dir, 'HEAD')).isFile()) return null;
    if (!fs.lstatSync(path.join(dir, 'objects')).isDirectory() || !fs.lstatSync(path.join(dir, 'refs')).isDirectory()) return null;
    if (fs.existsSync(path.join(dir, 'commondir')) || fs.existsSync(path.join(dir, 'reftable'))) return null;
    return dir;
  } catch {
    return null;
  }
}

/** A regular file's stamp, "-" when it is missing, null when it cannot be stamped (a link, changed just now, unreadable). */
export function fileStamp(file: string): string | null {
  let st: fs.BigIntStats;
  try {
    st = fs.lstatSync(file, { bigint: true });
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? '-' : null;
  }
  if (!st.isFile()) return null;
  const settled = BigInt(Date.now() - SETTLED_MS) * 1_000_000n;
  if (st.mtimeNs > settled || st.ctimeNs > settled) return null;
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** Several files' stamps as one, null when any has none. */
export function filesStamp(files: string[]): string | null {
  const parts: string[] = [];
  for (const f of files) {
    const s = fileStamp(f);
    if (s === null) return null;
    parts.push(s);
  }
  return parts.join('/');
}

/** Answers, each kept under the stamp it was given at (bounded). */
export class StampedAnswers<T> {
  private readonly kept: BoundedMap<string, { stamp: string; value: T }>;
  constructor(max: number) {
    this.kept = new BoundedMap(max);
  }

  get(key: string, stamp: string | null): T | undefined {
    if (stamp === null) return undefined;
    const hit = this.kept.get(key);
    return hit && hit.stamp === stamp ? hit.value : undefined;
  }

  set(key: string, stamp: string | null, value: T): void {
    if (stamp !== null) this.kept.set(key, { stamp, value });
  }
}

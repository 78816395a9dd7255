import fs from 'node:fs';
import path from 'node:path';

const SHA = /^[0-9a-f]{40}$/;
const MAX_REF_BYTES = 256;
const MAX_PACKED_REFS_BYTES = 1024 * 1024;

/**
 * The commit a workspace clone's branch names, read from its files on the host without running
 * git there (the clone's config is the model's) — for deciding whether there is anything to sync.
 * Null when it cannot be read plainly (a symbolic ref, a planted link, a `.git` file, a packed-refs
 * too large): the caller then syncs, which is always safe. The model may swap files meanwhile; the
 * worst it can get is a sync that was not needed, since nothing read here is shown or trusted
 * beyond "same commit as last time".
 */
export function readCloneHead(checkout: string, branch: string): string | null {
  return readBranchAt(checkout, branch);
}

/**
 * The commit `refs/heads/<branch>` names in the repository whose working tree is `top` (its
 * `.git` a folder), read from the ref's file or packed-refs; null when it is not plainly there.
 */
export function readBranchAt(top: string, branch: string): string | null {
  const gitDir = path.join(top, '.git');
  if (!isRealDir(gitDir)) return null;
  const parts = ['refs', 'heads', ...branch.split('/')];
  let dir = gitDir;
  for (const part of parts.slice(0, -1)) {
    dir = path.join(dir, part);
    const kind = kindOf(dir);
    if (kind === 'missing') return packedRef(gitDir, branch);
    if (kind !== 'dir') return null;
  }
  const file = path.join(dir, parts[parts.length - 1]!);
  // Only a ref that is not there is looked up in packed-refs: anything else in its place (a link,
  // a folder) is read by nobody, and the caller syncs.
  if (kindOf(file) === 'missing') return packedRef(gitDir, branch);
  const loose = readSmallFile(file, MAX_REF_BYTES);
  if (loose === null) return null;
  const sha = loose.trim();
  return SHA.test(sha) ? sha : null;
}

function packedRef(gitDir: string, branch: string): string | null {
  const text = readSmallFile(path.join(gitDir, 'packed-refs'), MAX_PACKED_REFS_BYTES);
  if (text === null) return null;
  const want = ` refs/heads/${branch}`;
  for (const line of text.split('\n')) {
    if (line.endsWith(want) && line.length === 40 + want.length) {
      const sha = line.slice(0, 40);
      return SHA.test(sha) ? sha : null;
    }
  }
  return null;
}

function kindOf(p: string): 'missing' | 'dir' | 'other' {
  try {
    return fs.lstatSync(p).isDirectory() ? 'dir' : 'other';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'other';
  }
}

function isRealDir(p: string): boolean {
  try {
    return fs.lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** A regular file's text, opened without following a final link nor blocking on a FIFO; null otherwise or when larger than `max`. */
function readSmallFile(p: string, max: number): string | null {
  let fd: number;
  try {
    fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > max) return null;
    const buf = Buffer.alloc(st.size);
    const n = fs.readSync(fd, buf, 0, st.size, 0);
    return buf.subarray(0, n).toString('latin1');
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

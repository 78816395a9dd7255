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
  const gitDir = path.join(checkout, '.git');
  if (!isRealDir(gitDir)) return null;
  const parts = ['refs', 'heads', ...branch.split('/')];
  let dir = gitDir;
  for (const part of parts.slice(0, -1)) {
    dir = path.join(dir, part);
    if (!isRealDir(dir)) return packedRef(gitDir, branch);
  }
  const loose = readSmallFile(path.join(dir, parts[parts.length - 1]!), MAX_REF_BYTES);
  if (loose === null) return packedRef(gitDir, branch);
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

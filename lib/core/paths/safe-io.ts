import { constants, promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { fail, sha256, type ToolFailure } from '../results';
import { fsFailure, isInside, violation, type ResolvedPath } from './sandbox';

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

/**
 * Where an open descriptor really points. Checking the descriptor rather than the path closes
 * the gap between the sandbox check and the open (a folder swapped for a symlink in between).
 */
async function openedPath(handle: FileHandle, fallback: string): Promise<string> {
  if (process.platform === 'linux') {
    try {
      return await fs.readlink(`/proc/self/fd/${handle.fd}`);
    } catch {
      // /proc may be unavailable in some containers; fall through.
    }
  }
  return path.join(await fs.realpath(path.dirname(fallback)), path.basename(fallback));
}

export interface OpenedFile {
  handle: FileHandle;
  size: number;
}

/**
 * Opens a resolved file for reading without following a last-moment symlink and without
 * blocking on a FIFO; refuses anything that is not a regular file inside the mount.
 */
export async function openForRead(target: ResolvedPath): Promise<OpenedFile | ToolFailure> {
  let handle: FileHandle;
  try {
    handle = await fs.open(target.abs, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    return fsFailure(e, target.mount, target.virtual);
  }
  try {
    // Asked together: both only read the open descriptor.
    const [st, where] = await Promise.all([handle.stat(), openedPath(handle, target.abs)]);
    if (st.isDirectory()) {
      await handle.close();
      return fail('EISDIR', `${target.virtual} is a folder, not a file; use list_files`, { path: target.virtual });
    }
    if (!st.isFile()) {
      await handle.close();
      return violation(target.mount, 'not a regular file (FIFO, socket or device)', target.virtual);
    }
    if (!isInside(target.root, where)) {
      await handle.close();
      return violation(target.mount, 'path changed to point outside the mount', target.virtual);
    }
    return { handle, size: st.size };
  } catch (e) {
    await handle.close().catch(() => undefined);
    return fsFailure(e, target.mount, target.virtual);
  }
}

/** Reads a whole resolved file (callers bound its size first). */
export async function readResolved(target: ResolvedPath, maxBytes: number): Promise<Buffer | ToolFailure> {
  const opened = await openForRead(target);
  if (!('handle' in opened)) return opened;
  try {
    if (opened.size > maxBytes) {
      return fail('E_READ_LIMIT', `${target.virtual} is ${opened.size} bytes; the limit is ${maxBytes}`, {
        path: target.virtual,
      });
    }
    return await opened.handle.readFile();
  } finally {
    await opened.handle.close().catch(() => undefined);
  }
}

/** sha256 of a file's current bytes, or null when it does not exist. */
export async function hashResolved(target: ResolvedPath): Promise<string | null | ToolFailure> {
  if (!target.exists) return null;
  const opened = await openForRead(target);
  if (!('handle' in opened)) return opened.error.code === 'ENOENT' ? null : opened;
  try {
    const hash = createHash('sha256');
    const buf = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const { bytesRead } = await opened.handle.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
    }
    return hash.digest('hex');
  } finally {
    await opened.handle.close().catch(() => undefined);
  }
}

/** Creates missing folders one level at a time, refusing any that turn out to be links or leave the mount. */
async function ensureFolders(dir: string, target: ResolvedPath): Promise<ToolFailure | null> {
  const rel = path.relative(target.root, dir);
  if (!isInside(target.root, dir)) return violation(target.mount, 'path leaves the mount', target.virtual);
  let current = target.root;
  for (const name of rel ? rel.split(path.sep) : []) {
    current = path.join(current, name);
    try {
      await fs.mkdir(current);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') return fsFailure(e, target.mount, target.virtual);
    }
    const st = await fs.lstat(current).catch(() => null);
    if (!st) return fail('ENOENT', `A folder vanished while saving ${target.virtual}`, { path: target.virtual });
    if (st.isSymbolicLink()) {
      const real = await fs.realpath(current).catch(() => null);
      if (!real || !isInside(target.root, real)) {
        return violation(target.mount, 'a parent folder is a symlink pointing outside the mount', target.virtual);
      }
    } else if (!st.isDirectory()) {
      return fail('ENOTDIR', `A part of ${target.virtual} is a file, not a folder`, { path: target.virtual });
    }
  }
  const real = await fs.realpath(dir).catch(() => null);
  if (!real || !isInside(target.root, real)) {
    return violation(target.mount, 'a parent folder points outside the mount', target.virtual);
  }
  return null;
}

export interface WriteOutcome {
  bytes: number;
  sha256: string;
  created: boolean;
}

/**
 * Writes atomically: a hidden temp file created exclusively (never through a planted symlink)
 * in the target's folder, checked by descriptor to be inside the mount, then renamed over the
 * target. A failure leaves neither the temp file nor a partial target behind.
 */
export async function writeFileAtomic(target: ResolvedPath, data: Buffer): Promise<WriteOutcome | ToolFailure> {
  if (!target.writable) {
    return fail('E_READ_ONLY', `${target.mount} is read-only; save files into {output_folder}.`, { path: target.virtual });
  }
  if (target.exists && target.kind === 'directory') {
    return fail('EISDIR', `${target.virtual} is a folder, not a file`, { path: target.virtual });
  }
  const dir = path.dirname(target.abs);
  const folderProblem = await ensureFolders(dir, target);
  if (folderProblem) return folderProblem;

  const tmp = path.join(dir, `.${path.basename(target.abs)}.tmp-${randomBytes(6).toString('hex')}`);
  let handle: FileHandle | undefined;
  let tmpCreated = false;
  try {
    handle = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o644);
    tmpCreated = true;
    const where = await openedPath(handle, tmp);
    if (!isInside(target.root, where)) {
      return violation(target.mount, 'a parent folder changed to point outside the mount', target.virtual);
    }
    await handle.writeFile(data);
    await handle.close();
    handle = undefined;
    const before = await fs.lstat(target.abs).catch(() => null);
    if (before?.isDirectory()) return fail('EISDIR', `${target.virtual} is a folder, not a file`, { path: target.virtual });
    await fs.rename(tmp, target.abs);
    tmpCreated = false;
    return { bytes: data.length, sha256: sha256(data), created: !before };
  } catch (e) {
    return fsFailure(e, target.mount, target.virtual);
  } finally {
    if (handle) await handle.close().catch(() => undefined);
    if (tmpCreated) await fs.unlink(tmp).catch(() => undefined);
  }
}

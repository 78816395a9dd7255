import { constants, promises as fs } from 'node:fs';
import path from 'node:path';

const SETID = 0o6000;
/** Linux's O_PATH (not in Node's constants): a descriptor naming the file without opening it for reading or writing. */
const O_PATH = 0o10000000;

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Clears the set-user-ID and set-group-ID bits of one file or folder found by a host-side walk,
 * following no link: the path is taken as a descriptor without following a last-moment link
 * (O_PATH: nothing is opened, so no device or FIFO is touched and no read permission is needed),
 * checked through that descriptor to be a file or folder inside one of `roots`, and changed
 * through it (/proc/self/fd/N names that very file). A folder swapped for a link on the way fails
 * the check instead of changing what the link points at. True when bits were cleared.
 */
export async function clearSetIdNoFollow(file: string, roots: string[]): Promise<boolean> {
  const handle = await fs.open(file, O_PATH | constants.O_NOFOLLOW).catch(() => null);
  if (!handle) return false;
  try {
    const [st, where] = await Promise.all([handle.stat(), fs.readlink(`/proc/self/fd/${handle.fd}`).catch(() => '')]);
    if (!(st.isFile() || st.isDirectory()) || !(st.mode & SETID) || !roots.some((r) => inside(r, where))) return false;
    await fs.chmod(`/proc/self/fd/${handle.fd}`, st.mode & 0o1777);
    return true;
  } catch {
    return false;
  } finally {
    await handle.close().catch(() => undefined);
  }
}

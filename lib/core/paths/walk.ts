import { promises as fs, type Dirent, type Stats } from 'node:fs';
import path from 'node:path';

export interface WalkEntry {
  name: string;
  /** Relative to the walked folder, `/`-separated: never a server path. */
  path: string;
  type: 'file' | 'directory';
  /** 0 for the walked folder's own children. */
  depth: number;
  /** Files only, and only when the walk stats. */
  size?: number;
  /** Only when the walk stats. */
  mtime?: Date;
}

export interface WalkOptions {
  /** Open subfolders (default true); false yields the folder's own children only. */
  recursive?: boolean;
  /** Deepest entry yielded: folders at this depth are yielded but not opened (`tooDeep` tells). */
  maxDepth?: number;
  /** Entries yielded at most; the walk stops there (`truncated` tells whether more were left). */
  maxEntries?: number;
  /** Checked before each folder is read; an aborted walk throws a WalkError with reason 'aborted'. */
  signal?: AbortSignal;
  /** lstat each entry for size and mtime. Entries whose lstat fails are yielded without them. */
  stat?: boolean;
  /** Order of the names within one folder; default: by UTF-16 code units, the same on every machine. */
  compare?: (a: string, b: string) => number;
  /** An unreadable folder throws a WalkError (default) or is walked as empty. */
  onUnreadable?: 'throw' | 'skip';
  /**
   * Server upkeep of the output folder, whose leftovers are hidden (the temp files of atomic
   * writes) and may sit anywhere a save could reach: hidden entries and node_modules are walked
   * too. Never for anything shown to a user or a model. Links and special files stay skipped.
   */
  upkeep?: boolean;
}

export class WalkError extends Error {
  constructor(
    readonly reason: 'aborted' | 'unreadable',
    /** The folder, relative to the walked one ('' for the walked folder itself). */
    readonly path: string,
    cause?: unknown,
  ) {
    super(reason === 'aborted' ? 'The walk was stopped' : `Cannot read the folder "${path || '.'}"`, { cause });
    this.name = 'WalkError';
  }
}

/** Vendored trees: listed, never opened. Huge, and never what anyone wrote here. */
const OPAQUE_FOLDERS = new Set(['node_modules']);

/**
 * The one skip policy of every walk. Only real files and folders: a symbolic link is never
 * listed nor followed, wherever it points (inside the mount today, elsewhere tomorrow), and
 * FIFOs, sockets and devices are nothing to list or read. Hidden names (a leading dot: `.env*`,
 * `.git`, the `.name.tmp-*` files of atomic writes) are skipped except for upkeep.
 */
function walked(d: Dirent, upkeep: boolean): boolean {
  // readdir types entries like lstat: a link is neither a file nor a folder here.
  if (!d.isFile() && !d.isDirectory()) return false;
  return upkeep || !d.name.startsWith('.');
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function errorWithCode(message: string, code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

interface Frame {
  abs: string;
  entries: WalkEntry[];
  next: number;
}

/**
 * A depth-first walk (each folder's entries in order, a folder's contents right after it) over
 * a real folder the sandbox already resolved. The walked folder itself must be a real folder,
 * not a link to one. Read `truncated` and `tooDeep` after iterating.
 */
export class FolderWalk implements AsyncIterable<WalkEntry> {
  truncated = false;
  tooDeep = false;

  constructor(
    private readonly root: string,
    private readonly options: WalkOptions = {},
  ) {}

  async *[Symbol.asyncIterator](): AsyncIterator<WalkEntry> {
    const { recursive = true, maxDepth = Infinity, maxEntries = Infinity, upkeep = false } = this.options;
    this.truncated = false;
    this.tooDeep = false;
    const stack: Frame[] = [];
    const first = await this.read(this.root, '', 0);
    if (first) stack.push(first);
    let count = 0;
    while (stack.length) {
      const top = stack[stack.length - 1];
      if (top.next >= top.entries.length) {
        stack.pop();
        continue;
      }
      const entry = top.entries[top.next++];
      if (count >= maxEntries) {
        this.truncated = true;
        return;
      }
      count++;
      yield entry;
      if (entry.type !== 'directory' || !recursive || (OPAQUE_FOLDERS.has(entry.name) && !upkeep)) continue;
      if (entry.depth >= maxDepth) {
        this.tooDeep = true;
        continue;
      }
      const frame = await this.read(path.join(top.abs, entry.name), entry.path, entry.depth + 1);
      if (frame) stack.push(frame);
    }
  }

  private async read(abs: string, rel: string, depth: number): Promise<Frame | null> {
    const { signal, stat = false, compare = byCodeUnits, onUnreadable = 'throw', upkeep = false } = this.options;
    if (signal?.aborted) throw new WalkError('aborted', rel);
    let dirents: Dirent[];
    try {
      // A folder swapped for a link after it was listed is not followed.
      const st = await fs.lstat(abs);
      if (st.isSymbolicLink()) throw errorWithCode('a symlink where a real folder was expected', 'ELOOP');
      if (!st.isDirectory()) throw errorWithCode('not a folder', 'ENOTDIR');
      dirents = await fs.readdir(abs, { withFileTypes: true });
    } catch (e) {
      if (onUnreadable === 'skip') return null;
      throw new WalkError('unreadable', rel, e);
    }
    const kept = dirents.filter((d) => walked(d, upkeep)).sort((a, b) => compare(a.name, b.name));
    // Together: one round of lstat calls per folder, not one after another.
    const stats: Array<Stats | undefined> = stat
      ? await Promise.all(kept.map((d) => fs.lstat(path.join(abs, d.name)).catch(() => undefined)))
      : [];
    const entries: WalkEntry[] = [];
    kept.forEach((d, i) => {
      const st = stats[i];
      // Replaced between readdir and lstat (by a link, say): the policy holds for what is there now.
      if (st && !(d.isFile() ? st.isFile() : st.isDirectory())) return;
      const entry: WalkEntry = { name: d.name, path: rel ? `${rel}/${d.name}` : d.name, type: d.isFile() ? 'file' : 'directory', depth };
      if (st) {
        if (st.isFile()) entry.size = st.size;
        entry.mtime = st.mtime;
      }
      entries.push(entry);
    });
    return { abs, entries, next: 0 };
  }
}

export function walkFolder(root: string, options?: WalkOptions): FolderWalk {
  return new FolderWalk(root, options);
}

import fs from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../core/errors';
import { resolveInRoot, walkFolder } from '../../core/paths';

const MAX_TREE_ENTRIES = 2000;

/** One entry of an output folder's tree. */
export interface OutputEntry {
  /** Relative to the listed folder, with `/` separators. */
  path: string;
  name: string;
  type: 'file' | 'directory';
  size?: number;
  modifiedAt: string;
  children?: OutputEntry[];
}

/** Where a conversation's outputs live: OUTPUT_PATH/<conversationId>. */
export function outputRootOf(config: { outputPath: string }, conversationId: string): string {
  return path.join(config.outputPath, conversationId);
}

/**
 * The files of one conversation's output folder as a tree, by the walk's skip policy: no hidden
 * entries (temp files of atomic writes among them), no symlinks (a link could point anywhere).
 * A conversation folder replaced by a link is not listed either.
 */
export async function listOutputTree(outputRoot: string): Promise<OutputEntry[]> {
  const top: OutputEntry[] = [];
  const folders = new Map<string, OutputEntry[]>([['', top]]);
  const walk = walkFolder(outputRoot, {
    maxEntries: MAX_TREE_ENTRIES,
    stat: true,
    compare: (a, b) => a.localeCompare(b),
    onUnreadable: 'skip',
  });
  for await (const e of walk) {
    const slash = e.path.lastIndexOf('/');
    const siblings = folders.get(slash < 0 ? '' : e.path.slice(0, slash));
    // Gone before its lstat: left out, and so is anything found inside it.
    if (!siblings || !e.mtime) continue;
    const modifiedAt = e.mtime.toISOString();
    if (e.type === 'directory') {
      const children: OutputEntry[] = [];
      folders.set(e.path, children);
      siblings.push({ path: e.path, name: e.name, type: 'directory', modifiedAt, children });
    } else {
      siblings.push({ path: e.path, name: e.name, type: 'file', size: e.size, modifiedAt });
    }
  }
  return top;
}

const TYPES: Record<string, string> = {
  '.md': 'text/markdown; charset=utf-8',
  '.markdown': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.yaml': 'application/yaml; charset=utf-8',
  '.yml': 'application/yaml; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.html': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.svg': 'text/plain; charset=utf-8',
};

export function contentTypeOf(name: string): string {
  return TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream';
}

/** Reads one output file through the sandbox, so a request can never leave this conversation's folder. */
export async function readOutputFile(outputRoot: string, relPath: string): Promise<{ name: string; content: Buffer; contentType: string }> {
  const resolved = await resolveInRoot(outputRoot, relPath, 'read');
  if (!resolved.ok) {
    if (resolved.error.code === 'E_SANDBOX_VIOLATION') throw new AppError('E_SANDBOX_VIOLATION', resolved.error.message);
    throw new AppError('E_FILE_NOT_FOUND', `No output file "${relPath}".`);
  }
  const st = await fs.stat(resolved.abs).catch(() => null);
  if (!st || !st.isFile()) throw new AppError('E_FILE_NOT_FOUND', `No output file "${relPath}".`);
  const content = await fs.readFile(resolved.abs);
  const name = path.basename(resolved.abs);
  return { name, content, contentType: contentTypeOf(name) };
}

export async function removeOutputs(outputRoot: string): Promise<void> {
  await fs.rm(outputRoot, { recursive: true, force: true });
}

const TEMP_FILE = /^\..+\.tmp-[0-9a-f]{12}$/;

/**
 * Removes temp files of atomic writes that a crash left behind (a write is a hidden temp file,
 * then a rename). Call it only while holding the conversation's turn lock: then no write of this
 * conversation can be in flight.
 */
export async function sweepTempFiles(outputRoot: string): Promise<number> {
  let removed = 0;
  for await (const e of walkFolder(outputRoot, { upkeep: true, maxDepth: 32, onUnreadable: 'skip' })) {
    if (e.type === 'file' && TEMP_FILE.test(e.name)) {
      await fs.unlink(path.join(outputRoot, e.path)).then(() => removed++, () => undefined);
    }
  }
  return removed;
}

/** What "Continue in a copy" copies of a conversation's own files at most. */
export const COPY_LIMITS = { files: 500, bytes: 50 * 1024 * 1024 };

/**
 * Copies one conversation's output folder into another's (a copy that continues it keeps its
 * files), by the walk's skip policy (no hidden entries, no symlinks). Refused, with nothing
 * copied, over COPY_LIMITS; a folder that does not exist copies nothing. Returns the files copied.
 */
export async function copyOutputs(fromRoot: string, toRoot: string, limits = COPY_LIMITS): Promise<number> {
  const files: string[] = [];
  let bytes = 0;
  for await (const e of walkFolder(fromRoot, { stat: true, maxDepth: 32, onUnreadable: 'skip' })) {
    if (e.type !== 'file') continue;
    files.push(e.path);
    bytes += e.size ?? 0;
    if (files.length > limits.files || bytes > limits.bytes) {
      throw new AppError('E_TOO_LARGE', `This conversation's files are too many or too large to copy (at most ${limits.files} files, ${Math.round(limits.bytes / 1024 / 1024)} MB); download the ones you need instead.`);
    }
  }
  for (const rel of files) {
    const to = path.join(toRoot, ...rel.split('/'));
    await fs.mkdir(path.dirname(to), { recursive: true });
    await fs.copyFile(path.join(fromRoot, ...rel.split('/')), to);
  }
  return files.length;
}

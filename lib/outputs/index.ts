import fs from 'node:fs/promises';
import path from 'node:path';
import type { OutputFileEntry } from '../../types/api';
import { AppError } from '../errors';
import { resolveInRoot } from '../paths';

const MAX_TREE_ENTRIES = 2000;

/** Where a conversation's outputs live: OUTPUT_PATH/<conversationId>. */
export function outputRootOf(config: { outputPath: string }, conversationId: string): string {
  return path.join(config.outputPath, conversationId);
}

/**
 * The files of one conversation's output folder as a tree. Hidden entries (temp files of
 * atomic writes among them) and symlinks are left out: a link could point anywhere.
 */
export async function listOutputTree(outputRoot: string): Promise<OutputFileEntry[]> {
  let budget = MAX_TREE_ENTRIES;
  async function walk(dir: string, rel: string): Promise<OutputFileEntry[]> {
    let dirents;
    try {
      dirents = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return [];
    }
    const entries: OutputFileEntry[] = [];
    for (const d of dirents.sort((a, b) => a.name.localeCompare(b.name))) {
      if (d.name.startsWith('.') || budget <= 0) continue;
      if (!d.isFile() && !d.isDirectory()) continue;
      budget--;
      const abs = path.join(dir, d.name);
      const relPath = rel ? `${rel}/${d.name}` : d.name;
      const st = await fs.lstat(abs).catch(() => null);
      if (!st) continue;
      if (d.isDirectory()) {
        entries.push({ path: relPath, name: d.name, type: 'directory', modifiedAt: st.mtime.toISOString(), children: await walk(abs, relPath) });
      } else {
        entries.push({ path: relPath, name: d.name, type: 'file', size: st.size, modifiedAt: st.mtime.toISOString() });
      }
    }
    return entries;
  }
  // Same rule as the sandbox: a conversation folder replaced by a link is not listed.
  const st = await fs.lstat(outputRoot).catch(() => null);
  if (!st?.isDirectory()) return [];
  return walk(outputRoot, '');
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
  async function walk(dir: string, depth: number): Promise<void> {
    if (depth > 32) return;
    const dirents = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const d of dirents) {
      const abs = path.join(dir, d.name);
      if (d.isDirectory()) await walk(abs, depth + 1);
      else if (d.isFile() && TEMP_FILE.test(d.name)) {
        await fs.unlink(abs).then(() => removed++, () => undefined);
      }
    }
  }
  await walk(outputRoot, 0);
  return removed;
}

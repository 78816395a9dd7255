import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { fsFailure, MOUNT_TOKENS, resolvePath } from '../paths';
import { coerceArgs, defineTool } from './define';
import { fail } from '../results';
import type { ToolResult } from '../results';

export interface ListEntry {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink';
  size?: number;
}

const MAX_DEPTH = 24;
/** Folders never worth descending into when listing recursively. */
const SKIP_DIRS = new Set(['node_modules']);

const schema = z.object({
  path: z
    .string()
    .optional()
    .describe('Folder to list, e.g. {bundle-root}/workflows or {output_folder}. Empty lists the bundle root.'),
  recursive: z.boolean().optional().describe('List everything below the folder, not only its direct children.'),
});

export const listFilesTool = defineTool({
  name: 'list_files',
  description:
    'List a folder of the bundle, the BMAD core or the conversation output folder. Hidden entries are skipped and symlinks are shown but not followed.',
  schema,
  normalize: (a) => coerceArgs(a, { aliases: { file_path: 'path', dir: 'path', directory: 'path' }, bools: ['recursive'] }),
  async run(args, ctx): Promise<ToolResult> {
    const requested = args.path ?? '';
    const target = await resolvePath(requested.trim() === '.' ? '' : requested, ctx, 'read');
    if (!target.ok) {
      // The output folder is created on first save; before that it is simply empty.
      if (target.error.code === 'ENOENT' && target.path === MOUNT_TOKENS.output_folder) {
        return { ok: true, path: MOUNT_TOKENS.output_folder, entries: [], truncated: false };
      }
      return target;
    }
    if (target.kind !== 'directory') {
      return fail('ENOTDIR', `${target.virtual} is a file, not a folder; use read_file`, { path: target.virtual });
    }

    const max = ctx.limits.maxEntries;
    const entries: ListEntry[] = [];
    let truncated = false;

    const walk = async (absDir: string, virtualDir: string, depth: number): Promise<ToolResult | null> => {
      if (ctx.signal?.aborted) return fail('E_ABORTED', 'Stopped');
      let dirents;
      try {
        dirents = await fs.readdir(absDir, { withFileTypes: true });
      } catch (e) {
        return fsFailure(e, target.mount, virtualDir);
      }
      const visible = dirents
        .filter((d) => !d.name.startsWith('.') && (d.isFile() || d.isDirectory() || d.isSymbolicLink()))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const sizes = await Promise.all(
        visible.map((d) => (d.isFile() ? fs.lstat(path.join(absDir, d.name)).then((s) => s.size, () => undefined) : undefined)),
      );
      for (let i = 0; i < visible.length; i++) {
        if (entries.length >= max) {
          truncated = true;
          return null;
        }
        const d = visible[i];
        const entry: ListEntry = {
          name: d.name,
          path: `${virtualDir}/${d.name}`,
          type: d.isSymbolicLink() ? 'symlink' : d.isDirectory() ? 'directory' : 'file',
        };
        if (sizes[i] !== undefined) entry.size = sizes[i];
        entries.push(entry);
        if (args.recursive && entry.type === 'directory' && !SKIP_DIRS.has(d.name) && depth < MAX_DEPTH) {
          const problem = await walk(path.join(absDir, d.name), entry.path, depth + 1);
          if (problem) return problem;
          if (truncated) return null;
        }
      }
      return null;
    };

    const problem = await walk(target.abs, target.virtual, 0);
    if (problem) return problem;
    const result: Record<string, unknown> = { ok: true, path: target.virtual, entries, truncated };
    if (truncated) {
      result.hint = `Only the first ${max} entries are shown; list a subfolder${args.recursive ? ' or list without recursive' : ''} to see more.`;
    }
    return result as ToolResult;
  },
});

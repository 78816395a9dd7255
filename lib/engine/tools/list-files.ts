import { z } from 'zod';
import { MOUNT_TOKENS, resolvePath, walkFailure, walkFolder } from '../../core/paths';
import { coerceArgs, defineTool } from './define';
import { fail } from '../../core/results';
import type { ToolResult } from '../../core/results';

export interface ListEntry {
  name: string;
  path: string;
  type: 'file' | 'directory';
  size?: number;
}

const MAX_DEPTH = 24;

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
    'List a folder of the bundle, the BMAD core or the conversation output folder. Hidden entries and symlinks are skipped.',
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
    const walk = walkFolder(target.abs, { recursive: Boolean(args.recursive), maxDepth: MAX_DEPTH, maxEntries: max, signal: ctx.signal, stat: true });
    try {
      for await (const e of walk) {
        const entry: ListEntry = { name: e.name, path: `${target.virtual}/${e.path}`, type: e.type };
        if (e.size !== undefined) entry.size = e.size;
        entries.push(entry);
      }
    } catch (e) {
      return walkFailure(e, target);
    }
    const truncated = walk.truncated;
    const result: Record<string, unknown> = { ok: true, path: target.virtual, entries, truncated };
    if (truncated) {
      result.hint = `Only the first ${max} entries are shown; list a subfolder${args.recursive ? ' or list without recursive' : ''} to see more.`;
    }
    return result as ToolResult;
  },
});

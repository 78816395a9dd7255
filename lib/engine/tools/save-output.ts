import { z } from 'zod';
import { hashResolved } from '../../core/paths';
import { coerceArgs, defineTool } from './define';
import { checkFresh, readPrevious, underWriteLock, writeAndRecord } from './edit-target';
import { byteLength, fail, isFailure, sha256 } from '../../core/results';
import type { ToolResult } from '../../core/results';

const schema = z.object({
  file_path: z
    .string()
    .min(1)
    .describe('Where to save, inside the output folder: {output_folder}/plan.md (a relative path also lands there).'),
  content: z.string().describe('The complete file content (UTF-8 text).'),
  if_match_sha256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be a 64-character hex sha256')
    .optional()
    .describe('Only save if the file currently has this sha256 (from read_file or an earlier save).'),
});

export const saveOutputTool = defineTool({
  name: 'save_output',
  description:
    'Save a document into the conversation output folder ({output_folder}); creates folders as needed and replaces the file atomically. Bundle and core files are read-only.',
  schema,
  normalize: (a) => coerceArgs(a, { aliases: { path: 'file_path', filePath: 'file_path', ifMatchSha256: 'if_match_sha256', text: 'content' } }),
  async run(args, ctx): Promise<ToolResult> {
    const size = byteLength(args.content);
    if (size > ctx.limits.maxWriteBytes) {
      return fail('E_WRITE_LIMIT', `Content is ${size} bytes; the write limit is ${ctx.limits.maxWriteBytes} bytes. Split it into several files.`);
    }
    return underWriteLock(args.file_path, ctx, async (target) => {
      if (target.exists && target.kind === 'directory') {
        return fail('EISDIR', `${target.virtual} is a folder; give a file name`, { path: target.virtual });
      }
      const previous = await readPrevious(target, ctx);
      if (isFailure(previous)) return previous;
      if (args.if_match_sha256) {
        const current = previous === undefined ? await hashResolved(target) : previous && sha256(previous);
        if (isFailure(current)) return current;
        if (current !== args.if_match_sha256.toLowerCase()) {
          return fail(
            'E_PRECONDITION_FAILED',
            current === null
              ? `${target.virtual} does not exist, so it cannot match if_match_sha256`
              : `${target.virtual} changed: its sha256 is ${current}, not ${args.if_match_sha256}. Read it again before saving.`,
            { path: target.virtual, details: { currentSha256: current } },
          );
        }
      } else {
        // A matching if_match_sha256 already proves the model knows what it replaces.
        const stale = await checkFresh(target, ctx, previous);
        if (stale) return stale;
      }
      if (ctx.signal?.aborted) return fail('E_ABORTED', 'Stopped');
      const written = await writeAndRecord(target, Buffer.from(args.content, 'utf8'), ctx, 'save_output', previous);
      if (isFailure(written)) return written;
      return { ok: true, path: target.virtual, bytes_written: written.bytes, sha256: written.sha256, created: written.created };
    });
  },
});

import { createHash } from 'node:crypto';
import { z } from 'zod';
import { openForRead, resolvePath } from '../../core/paths';
import { coerceArgs, defineTool } from './define';
import { fail } from '../../core/results';
import type { ToolResult } from '../../core/results';

const CHUNK_BYTES = 1 << 20;
const BINARY_SNIFF_BYTES = 8000;
/** Longer lines are cut with a marker so one minified line cannot fill the model's context. */
const MAX_LINE_CHARS = 8000;

const schema = z.object({
  file_path: z
    .string()
    .min(1)
    .describe('File to read, e.g. {bundle-root}/workflows/intake/workflow.yaml, {core-root}/tasks/workflow.md or {output_folder}/plan.md. Relative paths look in {output_folder}, then {bundle-root}.'),
  start_line: z.number().int().min(1).optional().describe('First line to return (1-based, inclusive).'),
  end_line: z.number().int().min(1).optional().describe('Last line to return (1-based, inclusive).'),
});

/** Backs off to the start of a UTF-8 character so a cut never splits one. */
function utf8Boundary(buf: Buffer, end: number): number {
  let i = end;
  while (i > 0 && i < buf.length && (buf[i] & 0xc0) === 0x80) i--;
  return i;
}

function hasLongLine(text: string): boolean {
  for (let i = 0; ; ) {
    const j = text.indexOf('\n', i);
    if ((j === -1 ? text.length : j) - i > MAX_LINE_CHARS) return true;
    if (j === -1) return false;
    i = j + 1;
  }
}

function cutLongLines(text: string): { text: string; cut: boolean } {
  if (text.length <= MAX_LINE_CHARS || !hasLongLine(text)) return { text, cut: false };
  let cut = false;
  const lines = text.split('\n').map((line) => {
    if (line.length <= MAX_LINE_CHARS) return line;
    cut = true;
    return `${line.slice(0, MAX_LINE_CHARS)}…[line cut: ${line.length - MAX_LINE_CHARS} more characters]`;
  });
  return { text: cut ? lines.join('\n') : text, cut };
}

function countNewlines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
  return n;
}

export const readFileTool = defineTool({
  name: 'read_file',
  description:
    'Read a text file from the bundle, the BMAD core or the conversation output folder. Returns its content (or a window of lines), size, line count and sha256. Large files come back truncated: read further windows with start_line/end_line or use search_files.',
  schema,
  normalize: (a) => coerceArgs(a, { aliases: { path: 'file_path', filePath: 'file_path', startLine: 'start_line', endLine: 'end_line' }, ints: ['start_line', 'end_line'] }),
  async run(args, ctx): Promise<ToolResult> {
    const start = args.start_line ?? 1;
    const end = args.end_line ?? Number.POSITIVE_INFINITY;
    if (end < start) {
      return fail('E_INVALID_ARGS', `end_line (${args.end_line}) is before start_line (${start})`);
    }
    const target = await resolvePath(args.file_path, ctx, 'read');
    if (!target.ok) return target;
    if (target.kind === 'directory') {
      return fail('EISDIR', `${target.virtual} is a folder; use list_files to see what it holds`, { path: target.virtual });
    }
    const opened = await openForRead(target);
    if (!('handle' in opened)) return opened;

    const limit = ctx.limits.maxReadBytes;
    const hash = createHash('sha256');
    const buf = Buffer.allocUnsafe(Math.max(1, Math.min(CHUNK_BYTES, opened.size + 1)));
    const parts: Buffer[] = [];
    let collected = 0;
    let capped = false;
    let line = 1;
    let newlines = 0;
    let total = 0;
    let lastByte = -1;
    try {
      for (let first = true; ; first = false) {
        if (ctx.signal?.aborted) return fail('E_ABORTED', 'Stopped');
        const { bytesRead } = await opened.handle.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        const chunk = buf.subarray(0, bytesRead);
        if (first && chunk.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
          return fail('E_BINARY', `${target.virtual} looks like a binary file; only text files can be read`, {
            path: target.virtual,
          });
        }
        hash.update(chunk);
        total += bytesRead;
        lastByte = chunk[bytesRead - 1];

        // Keep the bytes of lines inside the window (up to the limit); elsewhere just count lines.
        let pos = 0;
        let rangeStart = -1;
        let rangeEnd = -1;
        const flush = () => {
          if (rangeStart === -1) return;
          const room = limit - collected;
          const len = rangeEnd - rangeStart;
          const take = Math.min(len, room);
          if (take > 0) parts.push(Buffer.from(chunk.subarray(rangeStart, rangeStart + take)));
          collected += Math.max(0, take);
          if (len > room) capped = true;
          rangeStart = -1;
        };
        while (pos < bytesRead) {
          const inWindow = line >= start && line <= end && !capped;
          if (!inWindow) {
            flush();
            if (line > end || capped) {
              newlines += countNewlines(chunk.subarray(pos));
              line = newlines + 1;
              break;
            }
          }
          const nl = chunk.indexOf(10, pos);
          const segEnd = nl === -1 ? bytesRead : nl + 1;
          if (inWindow) {
            if (rangeStart === -1) rangeStart = pos;
            rangeEnd = segEnd;
          }
          if (nl === -1) break;
          newlines++;
          line++;
          pos = segEnd;
        }
        flush();
      }
    } finally {
      // Nothing waits on the close: the bytes are read, and the answer should not queue behind it.
      void opened.handle.close().catch(() => undefined);
    }

    const lines = newlines + (total > 0 && lastByte !== 10 ? 1 : 0);
    let content = Buffer.concat(parts);
    if (capped) {
      const lastNl = content.lastIndexOf(10);
      content = lastNl > 0 ? content.subarray(0, lastNl + 1) : content.subarray(0, utf8Boundary(content, content.length));
    }
    const returned = countNewlines(content) + (content.length > 0 && content[content.length - 1] !== 10 ? 1 : 0);
    const shown = cutLongLines(content.toString('utf8'));
    const truncated = capped || shown.cut;
    const windowed = args.start_line !== undefined || args.end_line !== undefined;
    const digest = hash.digest('hex');
    // The conversation has now seen this content: a write after this read is not a stale one.
    ctx.freshness?.saw(target.abs, digest);
    const result: Record<string, unknown> = {
      ok: true,
      path: target.virtual,
      content: shown.text,
      bytes: total,
      lines,
      sha256: digest,
      truncated,
    };
    if (windowed || truncated) {
      result.start_line = start;
      result.end_line = returned > 0 ? start + returned - 1 : start - 1;
    }
    if (start > lines && lines > 0 && windowed) {
      result.hint = `The file has ${lines} lines; start_line ${start} is past its end.`;
    } else if (capped) {
      const next = start + Math.max(returned, 1);
      result.hint = `Showing lines ${start}-${start + returned - 1} of ${lines} (${total} bytes; the read limit is ${limit} bytes). Read on with start_line=${next}, or use search_files to find what you need.`;
    } else if (shown.cut) {
      result.hint = `Lines longer than ${MAX_LINE_CHARS} characters were cut; use search_files to find text inside them.`;
    }
    return result as ToolResult;
  },
});

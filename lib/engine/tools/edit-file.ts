import { createTwoFilesPatch } from 'diff';
import { z } from 'zod';
import { readForEdit, underWriteLock, writeBack } from './edit-target';
import { coerceArgs, defineTool } from './define';
import { fail, isFailure, sha256 } from '../../core/results';
import type { ToolResult } from '../../core/results';
import type { ResolvedPath } from '../../core/paths';
import type { ToolContext } from './types';

const MAX_DIFF_CHARS = 20_000;
/** The most time the diff shown back may take (it is a courtesy; the edit is already written). */
const DIFF_TIMEOUT_MS = 200;

const schema = z.object({
  file_path: z.string().min(1).describe('File in the output folder to edit, e.g. {output_folder}/plan.md.'),
  old_text: z.string().min(1).describe('Exact text to replace; it must occur exactly once unless replace_all is true.'),
  new_text: z.string().describe('Replacement text (taken literally).'),
  replace_all: z.boolean().optional().describe('Replace every occurrence instead of requiring exactly one.'),
});

function occurrences(haystack: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) at.push(i);
  return at;
}

/** Splices by index so `$&`, `$1` and friends in new_text stay literal. */
function spliceAll(text: string, at: number[], oldLen: number, replacement: string): string {
  let out = '';
  let last = 0;
  for (const i of at) {
    out += text.slice(last, i) + replacement;
    last = i + oldLen;
  }
  return out + text.slice(last);
}

export const editFileTool = defineTool({
  name: 'edit_file',
  description:
    'Replace exact text in a file of the output folder and return a unified diff. old_text must match exactly once (or set replace_all). Line endings of the file are kept.',
  schema,
  normalize: (a) =>
    coerceArgs(a, {
      aliases: { path: 'file_path', filePath: 'file_path', oldText: 'old_text', newText: 'new_text', old_string: 'old_text', new_string: 'new_text', replaceAll: 'replace_all' },
      bools: ['replace_all'],
    }),
  run: (args, ctx) => underWriteLock(args.file_path, ctx, (target) => edit(args, target, ctx)),
});

async function edit(args: z.infer<typeof schema>, target: ResolvedPath, ctx: ToolContext): Promise<ToolResult> {
  const raw = await readForEdit(target, ctx);
  if (isFailure(raw)) return raw;
  if (raw.subarray(0, 8000).includes(0)) return fail('E_BINARY', `${target.virtual} is a binary file`, { path: target.virtual });
  const before = raw.toString('utf8');

  // Models write \n; a CRLF file must still match and stay CRLF.
  let oldText = args.old_text;
  let newText = args.new_text;
  let at = occurrences(before, oldText);
  if (at.length === 0 && before.includes('\r\n')) {
    const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
    const alt = occurrences(before, crlf(oldText));
    if (alt.length) {
      oldText = crlf(oldText);
      newText = crlf(newText);
      at = alt;
    }
  } else if (at.length === 0 && oldText.includes('\r\n')) {
    const lf = (s: string) => s.replace(/\r\n/g, '\n');
    const alt = occurrences(before, lf(oldText));
    if (alt.length) {
      oldText = lf(oldText);
      newText = lf(newText);
      at = alt;
    }
  }
  if (at.length === 0) {
    const loose = before.replace(/\s+/g, ' ').includes(args.old_text.replace(/\s+/g, ' ').trim());
    return fail(
      'E_NO_MATCH',
      `old_text was not found in ${target.virtual}${loose ? ' (it differs only in whitespace; copy it exactly from read_file)' : ''}`,
      { path: target.virtual },
    );
  }
  if (at.length > 1 && !args.replace_all) {
    return fail(
      'E_AMBIGUOUS_MATCH',
      `old_text occurs ${at.length} times in ${target.virtual}; include more surrounding text or set replace_all`,
      { path: target.virtual, details: { count: at.length } },
    );
  }
  const after = spliceAll(before, at, oldText.length, newText);
  const written = await writeBack(target, after, ctx, 'edited', 'edit_file', raw);
  if (isFailure(written)) return written;
  // Myers' diff is quadratic when most lines change: past DIFF_TIMEOUT_MS it gives up (undefined).
  let diff: string =
    createTwoFilesPatch(target.virtual, target.virtual, before, after, undefined, undefined, { context: 3, timeout: DIFF_TIMEOUT_MS }) ??
    `[no diff: the change touches too many lines to show; read_file ${target.virtual} to see the result]\n`;
  if (diff.length > MAX_DIFF_CHARS) diff = `${diff.slice(0, MAX_DIFF_CHARS)}\n…[diff cut: ${diff.length - MAX_DIFF_CHARS} more characters]\n`;
  return {
    ok: true,
    path: target.virtual,
    diff,
    sha256: written.sha256,
    sha256Before: sha256(raw),
    replacements: at.length,
  };
}

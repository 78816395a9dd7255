import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { openForRead, resolvePath, walkFailure, walkFolder, type ResolvedPath } from '../../core/paths';
import { coerceArgs, defineTool } from './define';
import { fail, isFailure } from '../../core/results';
import type { ToolFailure, ToolResult } from '../../core/results';
import type { ToolContext } from './types';

const SEARCH_BUDGET_MS = 2000;
const MAX_PATTERN_CHARS = 500;
/** Files read ahead of the one being matched. */
const READ_AHEAD = 12;
const MAX_FILE_BYTES = 1_000_000;
const MAX_FILES = 5000;
/** Lines are matched on at most this many characters: it bounds any regex's work per line. */
const MAX_MATCH_LINE_CHARS = 4000;
const MAX_SHOWN_LINE_CHARS = 500;
const MAX_CONTEXT = 10;
const MAX_DEPTH = 32;

const schema = z.object({
  path: z.string().optional().describe('Folder (searched recursively) or file, e.g. {bundle-root} or {output_folder}/plan.md. Empty searches the bundle.'),
  pattern: z.string().min(1).max(MAX_PATTERN_CHARS).describe('Text to find (plain, case-sensitive), or a regular expression written /like this/i.'),
  regex: z.boolean().optional().describe('Treat pattern as a regular expression even without /slashes/.'),
  before: z.number().int().min(0).max(MAX_CONTEXT).optional().describe('Lines of context before each match (default 1).'),
  after: z.number().int().min(0).max(MAX_CONTEXT).optional().describe('Lines of context after each match (default 1).'),
  max_matches: z.number().int().min(1).optional().describe('Stop after this many matches (default 50).'),
});

interface Match {
  path: string;
  line: number;
  text: string;
  before?: string[];
  after?: string[];
}

/**
 * Patterns whose backtracking can explode: a quantified group that itself contains a
 * quantifier, e.g. (a+)+ or (x|y*)*, and backreferences. The deadline is the real guard.
 */
function looksCatastrophic(source: string): boolean {
  if (/\\[1-9]/.test(source)) return true;
  return /\((?:[^()\\]|\\.)*(?:[+*]|\{\d*,\d*\})(?:[^()\\]|\\.)*\)(?:[+*]|\{\d*,\d*\})/.test(source);
}

function compile(pattern: string, regexFlag: boolean | undefined): RegExp | string | { error: string } {
  const slashed = regexFlag !== false ? /^\/(.+)\/([a-z]*)$/s.exec(pattern) : null;
  if (!slashed && !regexFlag) return pattern;
  const source = slashed ? slashed[1] : pattern;
  const flags = [...new Set((slashed ? slashed[2] : '').split(''))].filter((f) => 'imsu'.includes(f)).join('');
  if (looksCatastrophic(source)) {
    return { error: 'the regular expression has nested quantifiers or backreferences that can take forever; simplify it' };
  }
  try {
    return new RegExp(source, flags);
  } catch (e) {
    return { error: `invalid regular expression: ${e instanceof Error ? e.message : 'syntax error'}` };
  }
}

/** Runs regex tests off the main thread, so a pathological pattern costs a terminated worker, not a hung server. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const re = new RegExp(workerData.source, workerData.flags);
parentPort.on('message', (m) => {
  const hits = [];
  for (let i = 0; i < m.lines.length && hits.length < m.limit; i++) {
    if (re.test(m.lines[i])) hits.push(i);
  }
  parentPort.postMessage(hits);
});
`;

class RegexRunner {
  private worker: Worker | null = null;
  private failed = false;
  constructor(private readonly re: RegExp) {}

  async test(lines: string[], limit: number, deadline: number): Promise<number[] | 'timeout'> {
    if (this.failed) return 'timeout';
    if (!this.worker) {
      this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { source: this.re.source, flags: this.re.flags } });
      this.worker.unref();
    }
    const worker = this.worker;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        cleanup();
        this.failed = true;
        void this.close();
        resolve('timeout');
      }, Math.max(0, deadline - Date.now()));
      const onMessage = (hits: number[]) => {
        cleanup();
        resolve(hits);
      };
      const onError = () => {
        cleanup();
        this.failed = true;
        resolve('timeout');
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.postMessage({ lines, limit });
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate().catch(() => undefined);
  }
}

interface FileRef {
  abs: string;
  virtual: string;
}

async function collectFiles(target: ResolvedPath, ctx: ToolContext, deadline: number): Promise<{ files: FileRef[]; truncated: boolean } | ToolFailure> {
  if (target.kind === 'file') return { files: [{ abs: target.abs, virtual: target.virtual }], truncated: false };
  const files: FileRef[] = [];
  let truncated = false;
  const walk = walkFolder(target.abs, { maxDepth: MAX_DEPTH, signal: ctx.signal });
  try {
    for await (const e of walk) {
      if (e.type === 'directory') {
        if (Date.now() > deadline) {
          truncated = true;
          break;
        }
        continue;
      }
      if (files.length >= MAX_FILES) {
        truncated = true;
        break;
      }
      files.push({ abs: path.join(target.abs, e.path), virtual: `${target.virtual}/${e.path}` });
    }
  } catch (e) {
    return walkFailure(e, target);
  }
  return { files, truncated: truncated || walk.tooDeep };
}

function shown(line: string): string {
  return line.length > MAX_SHOWN_LINE_CHARS ? `${line.slice(0, MAX_SHOWN_LINE_CHARS)}…` : line;
}

export const searchFilesTool = defineTool({
  name: 'search_files',
  description:
    'Search text files under a folder (recursively) or in one file for a plain string or a /regular expression/flags. Returns matching lines with line numbers and context. Skips hidden folders, node_modules, binary and very large files.',
  schema,
  normalize: (a) =>
    coerceArgs(a, {
      aliases: { file_path: 'path', query: 'pattern', maxMatches: 'max_matches' },
      ints: ['before', 'after', 'max_matches'],
      bools: ['regex'],
    }),
  async run(args, ctx): Promise<ToolResult> {
    const started = Date.now();
    const deadline = started + SEARCH_BUDGET_MS;
    const matcher = compile(args.pattern, args.regex);
    if (typeof matcher === 'object' && 'error' in matcher) return fail('E_INVALID_ARGS', `pattern: ${matcher.error}`);
    const limit = Math.min(args.max_matches ?? 50, ctx.limits.maxMatches);
    const nBefore = args.before ?? 1;
    const nAfter = args.after ?? 1;

    const requested = args.path ?? '';
    const target = await resolvePath(requested.trim() === '.' ? '' : requested, ctx, 'read');
    if (!target.ok) return target;
    const collected = await collectFiles(target, ctx, deadline);
    if (isFailure(collected)) return collected;

    const matches: Match[] = [];
    let truncated = collected.truncated;
    let stoppedForTime = false;
    let skipped = 0;
    let searched = 0;
    const runner = matcher instanceof RegExp ? new RegexRunner(matcher) : null;
    // Files are read a few at a time ahead of the matching, which stays in order: each read is
    // several awaited syscalls, and one after another they dominate a search of many small files.
    const load = async (file: FileRef): Promise<Buffer | null> => {
      const opened = await openForRead({ ...target, abs: file.abs, virtual: file.virtual, kind: 'file' });
      if (!('handle' in opened)) return null;
      try {
        return opened.size > MAX_FILE_BYTES ? null : await opened.handle.readFile();
      } finally {
        await opened.handle.close().catch(() => undefined);
      }
    };
    const ahead: Promise<Buffer | null>[] = [];
    const prefetch = (from: number) => {
      for (let j = ahead.length; j < Math.min(collected.files.length, from + READ_AHEAD); j++) ahead.push(load(collected.files[j]).catch(() => null));
    };
    try {
      for (let n = 0; n < collected.files.length; n++) {
        const file = collected.files[n];
        if (ctx.signal?.aborted) return fail('E_ABORTED', 'Stopped');
        if (matches.length >= limit) {
          truncated = true;
          break;
        }
        if (Date.now() > deadline) {
          truncated = stoppedForTime = true;
          break;
        }
        prefetch(n);
        const buf = await ahead[n];
        if (!buf || buf.subarray(0, 8000).includes(0)) {
          skipped++;
          continue;
        }
        searched++;
        const lines = buf.toString('utf8').split(/\r?\n/);
        if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
        const room = limit - matches.length;
        let hits: number[];
        if (runner) {
          const tested = await runner.test(
            lines.map((l) => (l.length > MAX_MATCH_LINE_CHARS ? l.slice(0, MAX_MATCH_LINE_CHARS) : l)),
            room + 1,
            deadline,
          );
          if (tested === 'timeout') {
            truncated = stoppedForTime = true;
            break;
          }
          hits = tested;
        } else {
          hits = [];
          const needle = matcher as string;
          for (let i = 0; i < lines.length && hits.length <= room; i++) if (lines[i].includes(needle)) hits.push(i);
        }
        for (const i of hits) {
          if (matches.length >= limit) {
            truncated = true;
            break;
          }
          const m: Match = { path: file.virtual, line: i + 1, text: shown(lines[i]) };
          if (nBefore > 0) m.before = lines.slice(Math.max(0, i - nBefore), i).map(shown);
          if (nAfter > 0) m.after = lines.slice(i + 1, i + 1 + nAfter).map(shown);
          matches.push(m);
        }
      }
    } finally {
      await runner?.close();
    }
    const result: Record<string, unknown> = { ok: true, path: target.virtual, matches, truncated, files_searched: searched };
    if (skipped) result.files_skipped = skipped;
    if (stoppedForTime) {
      result.hint = `The search stopped after ${SEARCH_BUDGET_MS / 1000} s; narrow the path or simplify the pattern.`;
    } else if (truncated && matches.length >= limit) {
      result.hint = `Stopped at ${limit} matches; narrow the path or the pattern to see the rest.`;
    } else if (truncated) {
      result.hint = 'Not every file was searched; narrow the path.';
    }
    return result as ToolResult;
  },
});

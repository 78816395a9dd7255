import { constants, promises as fsp } from 'node:fs';
import path from 'node:path';
import { splitFrontmatter } from '../../core/frontmatter';
import { isInside } from '../../core/paths/sandbox';
import { specNumber, storyNumber } from './board';

/**
 * What a build skill's run came to. Build skills have no JSON contract: they write their end into
 * the story's files. BMAD 6.11 on (`bmad-build-auto`) keeps a spec `spec-<story>-….md` in the
 * implementation artifacts with a frontmatter `status` and, when it halts, `## Auto Run Result`
 * with `Status:` and `Blocking condition:` lines (or, halting before it knows its spec,
 * `bmad-build-auto-result-<slug>.md` of the same shape); 6.0.x's dev-story writes the story file
 * `<key>.md`'s `Status:` line.
 */
export interface BuildResult {
  outcome: 'complete' | 'blocked' | 'failed';
  /** The status the skill wrote (lower case), or null when it wrote none. */
  status: string | null;
  /** Why the run is blocked or failed (the skill's blocking condition when it gave one). */
  reason?: string;
  /** The file the status was read from, relative to the project; null when none was found. */
  file: string | null;
}

const COMPLETE = new Set(['done', 'review', 'in-review']);
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_ENTRIES = 20_000;
const MAX_REASON = 2_000;
const NO_CONDITION = /^(none|n\/a|na|-+|—|null|no|\(none\))?\.?$/i;

const AUTO_RESULT = /^bmad-build-auto-result-(\d+)-(\d+)([a-z]?)(?:-|\.md$)/;

/** A file of the folder that may carry the story's result, and how much it is preferred on equal times. */
function candidateRank(name: string, key: string, number: string): number | null {
  if (!name.endsWith('.md')) return null;
  if (name === `${key}.md`) return 0;
  if (specNumber(name) === number) return 2;
  const m = AUTO_RESULT.exec(name);
  if (m && `${Number(m[1])}-${Number(m[2])}${m[3]}` === number) return 1;
  return null;
}

/** A regular file's text, never through a symlink, never a FIFO, never more than the cap; null otherwise. */
async function readPlain(file: string): Promise<{ text: string; mtimeMs: number } | null> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch {
    return null;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile() || st.size > MAX_FILE_BYTES) return null;
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await handle.read(buf, 0, st.size, 0);
    return { text: buf.subarray(0, bytesRead).toString('utf8'), mtimeMs: st.mtimeMs };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function cleanStatus(v: unknown): string | null {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const s = String(v).trim().replace(/^['"`*]+|['"`*.]+$/g, '').trim().toLowerCase();
  return s && s.length <= 40 ? s : null;
}

/** The status a file states: its frontmatter's `status`, else its first `Status:` line. */
export function statusOfText(text: string): { status: string | null; blocking: string | null } {
  const { data, body } = splitFrontmatter(text);
  let status = cleanStatus(data.status);
  if (!status) {
    const m = /^[ \t]*(?:[-*][ \t]+)?\**Status\**[ \t]*:[ \t]*\**[ \t]*([A-Za-z][A-Za-z -]{0,39})/m.exec(body);
    status = m ? cleanStatus(m[1]!.trim().split(/\s+/)[0]) : null;
  }
  // The last blocking condition written (a run may halt more than once over its life).
  let blocking: string | null = null;
  const re = /^[ \t]*(?:[-*][ \t]+)?\**Blocking condition\**[ \t]*:[ \t]*(.*)$/gim;
  for (let m = re.exec(body); m; m = re.exec(body)) {
    const v = m[1]!.replace(/\*+$/, '').trim();
    blocking = NO_CONDITION.test(v) ? null : v.slice(0, MAX_REASON);
  }
  return { status, blocking };
}

export function outcomeOf(status: string | null, blocking: string | null): Pick<BuildResult, 'outcome' | 'reason'> {
  if (status && COMPLETE.has(status)) return { outcome: 'complete' };
  if (status === 'blocked' || blocking) return { outcome: 'blocked', reason: blocking ?? 'The build skill reported the story blocked without a reason.' };
  if (!status) return { outcome: 'failed', reason: 'The build skill wrote no status for the story.' };
  return { outcome: 'failed', reason: `The build skill stopped with the story at "${status}".` };
}

/**
 * The result of a build skill's run on `storyKey`, read from a checkout (a workspace's clone, at
 * the project's place in it): of the story file `<key>.md`, its build specs and build-auto's
 * result files, the one written last that states a status. Files are read as plain files only (a
 * symlink, or an artifacts folder leading out of the checkout, is not followed).
 */
export async function buildResultOf(checkout: { root: string; artifacts: string }, storyKey: string): Promise<BuildResult> {
  const none: BuildResult = { outcome: 'failed', status: null, reason: 'The build skill wrote no status for the story.', file: null };
  const number = storyNumber(storyKey);
  if (!number || /[/\\\0]/.test(storyKey)) return none;
  let root: string;
  let folder: string;
  try {
    root = await fsp.realpath(checkout.root);
    folder = await fsp.realpath(path.join(root, checkout.artifacts));
  } catch {
    return none;
  }
  if (!isInside(root, folder)) return none;
  let names: string[];
  try {
    const dir = await fsp.opendir(folder);
    names = [];
    for await (const e of dir) {
      if (e.isFile() && candidateRank(e.name, storyKey, number) !== null) names.push(e.name);
      if (names.length >= MAX_ENTRIES) break;
    }
  } catch {
    return none;
  }
  let best: { name: string; mtimeMs: number; rank: number; status: string | null; blocking: string | null } | null = null;
  for (const name of names.sort()) {
    const read = await readPlain(path.join(folder, name));
    if (!read) continue;
    const { status, blocking } = statusOfText(read.text);
    if (!status && !blocking) continue;
    const rank = candidateRank(name, storyKey, number)!;
    if (!best || read.mtimeMs > best.mtimeMs || (read.mtimeMs === best.mtimeMs && rank > best.rank)) best = { name, mtimeMs: read.mtimeMs, rank, status, blocking };
  }
  if (!best) return none;
  const rel = path.relative(root, path.join(folder, best.name)).split(path.sep).join('/');
  return { ...outcomeOf(best.status, best.blocking), status: best.status, file: rel };
}

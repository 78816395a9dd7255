import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { git, gitOk, GitError } from '../../sandbox/git/runner';

/**
 * A merge of two commits as a tree, computed off to the side (no ref, index or working tree is
 * touched), where files that parallel work only appends to merge as the union of both sides'
 * lines: what git's `merge=union` attribute does, without asking the repository for a driver.
 * The repository's own .gitattributes and config stay powerless here as everywhere (see
 * lib/sandbox/git/runner.ts): the union is made by `git merge-file --union` on the three blobs
 * copied to a private temp folder, a builtin that runs no program and reads no attribute.
 *
 * The workspace merge uses it, and so can anything that must see the same result before it
 * lands (a test run on the merge result in a scratch checkout).
 */

export interface TreeMerge {
  /** The merged tree (with conflict markers in `conflicts`' files when there are any). */
  tree: string;
  /** Paths (repository-relative) that still conflict; empty when the merge is clean. */
  conflicts: string[];
  /** Append-only paths whose two sides' lines were joined. */
  unioned: string[];
}

/** Above this a blob is not joined line by line: it stays a conflict if it is one. */
const MAX_UNION_BYTES = 8 * 1024 * 1024;

interface Entry {
  mode: string;
  blob: string;
}

async function entryOf(top: string, commit: string, repoPath: string, config?: Record<string, string>): Promise<Entry | null> {
  const r = await git(['--literal-pathspecs', 'ls-tree', '-z', '--full-tree', commit, '--', repoPath], { cwd: top, ...(config ? { config } : {}) });
  if (r.code !== 0) return null;
  const m = /^(\d{6}) blob ([0-9a-f]{40,64})\t/.exec(r.stdout);
  return m && (m[1] === '100644' || m[1] === '100755') ? { mode: m[1], blob: m[2]! } : null;
}

async function blobBytes(top: string, blob: string, config?: Record<string, string>): Promise<Buffer | null> {
  const r = await git(['cat-file', 'blob', blob], { cwd: top, bytes: true, maxBytes: MAX_UNION_BYTES + 1, ...(config ? { config } : {}) });
  if (r.code !== 0 || r.cut) return null;
  return Buffer.from(r.stdout, 'latin1');
}

/**
 * The union of a file's two sides against their merge base, as a new blob written to the
 * repository; null when it cannot be joined (a side is no regular file, a blob is too large).
 */
async function unionBlob(top: string, base: Entry | null, ours: Entry, theirs: Entry, dir: string, config?: Record<string, string>): Promise<string | null> {
  const [o, b, t] = await Promise.all([blobBytes(top, ours.blob, config), base ? blobBytes(top, base.blob, config) : Promise.resolve(Buffer.alloc(0)), blobBytes(top, theirs.blob, config)]);
  if (!o || !b || !t) return null;
  const files = ['ours', 'base', 'theirs'].map((n) => path.join(dir, n));
  fs.writeFileSync(files[0]!, o);
  fs.writeFileSync(files[1]!, b);
  fs.writeFileSync(files[2]!, t);
  // Exit code is the number of conflicts, which --union leaves none of.
  const merged = await git(['merge-file', '-p', '--union', '--', files[0]!, files[1]!, files[2]!], { cwd: dir, bytes: true, maxBytes: 3 * MAX_UNION_BYTES });
  if (merged.code < 0 || merged.cut) return null;
  return (await gitOk(['hash-object', '-w', '--no-filters', '--stdin'], { cwd: top, input: Buffer.from(merged.stdout, 'latin1'), ...(config ? { config } : {}) })).trim();
}

/**
 * Merges `theirs` into `ours` (commits of the repository at `top`) as git's merge-tree does, then
 * joins `unionPaths` (repository-relative files) that both sides changed: their lines are the
 * union of both sides' (ours first where both added at one place), with no conflict markers and
 * nothing dropped. A path one side deleted, or not a regular file on both sides, is left to git.
 */
export async function mergeTrees(top: string, ours: string, theirs: string, opts: { unionPaths?: string[]; config?: Record<string, string> } = {}): Promise<TreeMerge> {
  const config = opts.config;
  const m = await git(['merge-tree', '--write-tree', '--no-messages', '--name-only', '-z', ours, theirs], { cwd: top, ...(config ? { config } : {}) });
  if (m.code !== 0 && m.code !== 1) throw new GitError('merge-tree', m);
  const parts = m.stdout.split('\0');
  let tree = parts[0]!.trim();
  const conflicts: string[] = [];
  if (m.code === 1) {
    for (const p of parts.slice(1)) {
      if (!p) break;
      if (!conflicts.includes(p)) conflicts.push(p);
    }
  }
  const wanted = [...new Set(opts.unionPaths ?? [])];
  if (!wanted.length) return { tree, conflicts, unioned: [] };
  const mb = await git(['merge-base', ours, theirs], { cwd: top, ...(config ? { config } : {}) });
  const base = mb.code === 0 ? mb.stdout.trim() || null : null;
  const unioned: { path: string; mode: string; blob: string }[] = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-union-'));
  try {
    for (const p of wanted) {
      const [o, t, b] = await Promise.all([entryOf(top, ours, p, config), entryOf(top, theirs, p, config), base ? entryOf(top, base, p, config) : Promise.resolve(null)]);
      if (!o || !t || o.blob === t.blob) continue;
      // One side unchanged: git took the other by itself.
      if (b && (o.blob === b.blob || t.blob === b.blob)) continue;
      const blob = await unionBlob(top, b, o, t, dir, config);
      if (blob) unioned.push({ path: p, mode: o.mode, blob });
    }
    if (unioned.length) {
      const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
      const run = (args: string[]) => gitOk(args, { cwd: top, env, ...(config ? { config } : {}) });
      await run(['read-tree', tree]);
      for (const u of unioned) await run(['--literal-pathspecs', 'update-index', '--add', '--cacheinfo', `${u.mode},${u.blob},${u.path}`]);
      tree = (await run(['write-tree'])).trim();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const joined = new Set(unioned.map((u) => u.path));
  return { tree, conflicts: conflicts.filter((c) => !joined.has(c)), unioned: [...joined] };
}

/** Project-relative paths → repository-relative, given the project folder's place in its repository ('' when they are one). */
export function repoPathsOf(projectInRepo: string, paths: readonly string[]): string[] {
  return paths.map((p) => (projectInRepo ? `${projectInRepo}/${p}` : p));
}

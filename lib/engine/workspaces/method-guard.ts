import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { git, gitOk, GitError } from '../../sandbox/git/runner';

/**
 * The method stays the method: a workspace's commits never change the installed BMAD method in
 * the project's branch. What is protected is read from the workspace's base commit (never from a
 * working tree, which the model's git plumbing can make lie: `update-index --skip-worktree`): the
 * method folder (`_bmad/`, `bmad/` of early alphas) but its `render/` folder, which the method's
 * render step writes by design, and the install's skill folders (`.<tool>/skills/<name>/` holding
 * a SKILL.md in the base). Every commit's tree is compared with the base there; a commit that
 * differs is rewritten with the base's method (its author, committer, dates and message kept), and
 * its descendants onto it, so the branch carries the rest of the work and none of those changes.
 * All of it runs in the project repository, on objects only: no working tree, no filter, no hook.
 */

/** Commits a sync checks at most; a longer range is refused rather than half checked. */
export const MAX_GUARDED_COMMITS = 2_000;
const MAX_PATHS_SHOWN = 20;

export interface Dropped {
  /** Commits of the range that changed the method. */
  commits: number;
  /** Their ids (as the clone has them). */
  shas: string[];
  /** Paths they changed there (repository-relative, at most 20). */
  paths: string[];
  /** More paths than shown. */
  more: boolean;
}

export interface Guarded {
  /** The head to set: the one fetched, or its rewrite. */
  head: string;
  dropped: Dropped | null;
}

export class MethodGuardError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MethodGuardError';
  }
}

const join = (prefix: string, p: string) => (prefix ? `${prefix}/${p}` : p);
const spec = (p: string) => `:(top,literal)${p}`;
const excluded = (p: string) => `:(top,exclude,literal)${p}`;

interface TreeEntry {
  type: string;
  path: string;
}

function parseLsTree(out: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const rec of out.split('\0')) {
    const tab = rec.indexOf('\t');
    if (tab < 0) continue;
    const [, type] = rec.slice(0, tab).split(' ');
    entries.push({ type: type ?? '', path: rec.slice(tab + 1) });
  }
  return entries;
}

const cache = new Map<string, string[]>();

/**
 * The pathspecs of the method as the base commit has it, for a project folder at `prefix`
 * (posix, relative to the repository's top; '' for the top). Empty when the base holds no method.
 */
export async function methodPathspecs(top: string, prefix: string, base: string, config?: Record<string, string>): Promise<string[]> {
  const key = `${top}\0${prefix}\0${base}`;
  const known = cache.get(key);
  if (known) return known;
  const at = async (args: string[], paths: string[]) => gitOk(['ls-tree', '-z', '--full-tree', ...args, base, '--', ...paths], { cwd: top, maxBytes: 16 * 1024 * 1024, ...(config ? { config } : {}) });
  const tops = parseLsTree(await at([], prefix ? [`${prefix}/`] : [])).filter((e) => e.type === 'tree');
  const specs: string[] = [];
  for (const name of ['_bmad', 'bmad']) {
    const folder = join(prefix, name);
    if (!tops.some((e) => e.path === folder)) continue;
    if (name === 'bmad') {
      // `bmad/` is the method only where it holds what an install puts there.
      const inside = parseLsTree(await at([], [`${folder}/`])).map((e) => e.path.slice(folder.length + 1));
      if (!inside.some((n) => ['_config', '_cfg', 'core', 'bmm'].includes(n))) continue;
    }
    specs.push(spec(folder), excluded(`${folder}/render`));
  }
  const dotted = tops.filter((e) => path.posix.basename(e.path).startsWith('.') && e.path !== join(prefix, '.git'));
  if (dotted.length) {
    const files = parseLsTree(await at(['-r'], dotted.map((e) => `${e.path}/skills/`)));
    const skill = new RegExp(`^${escape(prefix ? `${prefix}/` : '')}(\\.[^/]+/skills/[^/]+)/SKILL\\.md$`);
    const folders = new Set<string>();
    for (const f of files) {
      const m = skill.exec(f.path);
      if (m) folders.add(m[1]!);
    }
    for (const f of [...folders].sort()) specs.push(spec(join(prefix, f)));
  }
  // With only exclusions git would read the rest of the tree as protected: none means none.
  const out = specs.some((s) => !s.includes('exclude')) ? specs : [];
  if (cache.size > 200) cache.clear();
  cache.set(key, out);
  return out;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

interface RangeCommit {
  sha: string;
  tree: string;
  parents: string[];
}

/** The range's commits, parents before children. */
async function rangeCommits(top: string, base: string, head: string, config?: Record<string, string>): Promise<RangeCommit[]> {
  const out = await gitOk(['rev-list', '--topo-order', `--max-count=${MAX_GUARDED_COMMITS + 1}`, '--no-commit-header', '--format=%H %T %P', head, `^${base}`], { cwd: top, ...(config ? { config } : {}) });
  const commits = out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const [sha, tree, ...parents] = l.trim().split(' ');
      return { sha: sha!, tree: tree!, parents: parents.filter(Boolean) };
    });
  if (commits.length > MAX_GUARDED_COMMITS) throw new MethodGuardError(`the branch has more than ${MAX_GUARDED_COMMITS} commits the base does not have, too many to check`);
  return commits.reverse();
}

/**
 * Which of the tree pairs differ in the protected paths, and those paths. git prints each pair's
 * line, in input order, followed by its paths (NUL-terminated), so a pair differs when a path
 * comes before the next pair's line. Every path printed starts with a protected folder (`_bmad/`,
 * `.<tool>/skills/`, under the project folder), never with a hexadecimal id: none can pass for a
 * pair's line.
 */
async function differingPairs(top: string, pairs: [string, string][], specs: string[], config?: Record<string, string>): Promise<{ differ: Set<string>; paths: string[]; more: boolean }> {
  const differ = new Set<string>();
  const paths = new Set<string>();
  let more = false;
  if (!pairs.length) return { differ, paths: [], more };
  const lines = pairs.map(([a, b]) => `${a} ${b}\n`);
  const out = await gitOk(['diff-tree', '--stdin', '-r', '--no-renames', '--name-only', '-z', '--', ...specs], { cwd: top, input: lines.join(''), maxBytes: 32 * 1024 * 1024, ...(config ? { config } : {}) });
  let at = 0;
  for (let k = 0; k < lines.length; k++) {
    if (!out.startsWith(lines[k]!, at)) throw new MethodGuardError('the changes to the installed method could not be read');
    at += lines[k]!.length;
    const next = lines[k + 1];
    while (at < out.length && !(next !== undefined && out.startsWith(next, at))) {
      const end = out.indexOf('\0', at);
      const p = out.slice(at, end < 0 ? out.length : end);
      at = end < 0 ? out.length : end + 1;
      if (!p) continue;
      differ.add(lines[k]!.trimEnd());
      if (paths.size < MAX_PATHS_SHOWN) paths.add(p);
      else if (!paths.has(p)) more = true;
    }
  }
  return { differ, paths: [...paths].sort(), more };
}

/**
 * The head to carry for the fetched `head`: itself when no commit since `base` changes the
 * method, else its rewrite. Throws MethodGuardError when the range cannot be checked whole.
 */
export async function keepMethod(top: string, base: string, head: string, specs: string[], config?: Record<string, string>): Promise<Guarded> {
  if (!specs.length || head === base) return { head, dropped: null };
  const commits = await rangeCommits(top, base, head, config);
  if (!commits.length) return { head, dropped: null };
  const baseTree = (await gitOk(['rev-parse', '--verify', `${base}^{tree}`], { cwd: top, ...(config ? { config } : {}) })).trim();
  const trees = [...new Set(commits.map((c) => c.tree))].filter((t) => t !== baseTree);
  const vsBase = await differingPairs(top, trees.map((t) => [baseTree, t]), specs, config);
  const changed = new Set(trees.filter((t) => vsBase.differ.has(`${baseTree} ${t}`)));
  if (!changed.size) return { head, dropped: null };
  const rewritten = await rewrite(top, baseTree, commits, changed, specs);
  // The commits that made a change (not those that only carry an earlier one): what is told.
  const treeOf = new Map(commits.map((c) => [c.sha, c.tree]));
  const candidates = commits.filter((c) => changed.has(c.tree));
  const pairs: [string, string][] = [];
  for (const c of candidates) for (const p of c.parents) if (treeOf.has(p) && treeOf.get(p) !== c.tree) pairs.push([treeOf.get(p)!, c.tree]);
  const vsParent = await differingPairs(top, pairs, specs, config);
  const made = candidates.filter((c) => {
    const inRange = c.parents.filter((p) => treeOf.has(p));
    // A root of the range changed it against the base; a merge only when it differs from every parent.
    return inRange.length < c.parents.length || !inRange.length || inRange.every((p) => vsParent.differ.has(`${treeOf.get(p)} ${c.tree}`));
  });
  const shas = made.map((c) => c.sha);
  return { head: rewritten, dropped: { commits: shas.length, shas, paths: vsBase.paths, more: vsBase.more } };
}

async function rewrite(top: string, baseTree: string, commits: RangeCommit[], changed: Set<string>, specs: string[]): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-method-guard-'));
  try {
    const run = async (index: string, args: string[], input?: Buffer) => {
      const r = await git(args, { cwd: top, env: { GIT_INDEX_FILE: path.join(dir, index) }, bytes: true, ...(input ? { input } : {}) });
      if (r.code !== 0) throw new GitError(args[0]!, r);
      return r.stdout;
    };
    await run('base', ['read-tree', baseTree]);
    const baseEntries = Buffer.from(await run('base', ['ls-files', '-s', '-z', '--', ...specs]), 'latin1');
    const fixed = new Map<string, string>();
    const fixTree = async (tree: string): Promise<string> => {
      const known = fixed.get(tree);
      if (known) return known;
      await run('work', ['read-tree', tree]);
      const theirs = Buffer.from(await run('work', ['ls-files', '-z', '--', ...specs]), 'latin1');
      if (theirs.length) await run('work', ['update-index', '-z', '--force-remove', '--stdin'], theirs);
      if (baseEntries.length) await run('work', ['update-index', '-z', '--index-info'], baseEntries);
      const next = (await run('work', ['write-tree'])).trim();
      fixed.set(tree, next);
      return next;
    };
    const raw = await rawCommits(top, commits.map((c) => c.sha));
    const map = new Map<string, string>();
    for (const c of commits) {
      const parents = c.parents.map((p) => map.get(p) ?? p);
      const tree = changed.has(c.tree) ? await fixTree(c.tree) : c.tree;
      if (tree === c.tree && parents.every((p, i) => p === c.parents[i])) {
        map.set(c.sha, c.sha);
        continue;
      }
      const body = withTreeAndParents(raw.get(c.sha)!, tree, parents);
      const made = await git(['hash-object', '-t', 'commit', '-w', '--stdin'], { cwd: top, input: Buffer.from(body, 'latin1') });
      if (made.code !== 0) throw new GitError('hash-object', made);
      map.set(c.sha, made.stdout.trim());
    }
    return map.get(commits[commits.length - 1]!.sha)!;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The commits' raw objects, byte for byte (as latin1 text). */
async function rawCommits(top: string, shas: string[]): Promise<Map<string, string>> {
  const out = await gitOk(['cat-file', '--batch'], { cwd: top, input: shas.map((s) => `${s}\n`).join(''), bytes: true, maxBytes: 256 * 1024 * 1024 });
  const map = new Map<string, string>();
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf('\n', at);
    if (nl < 0) break;
    const [sha, type, size] = out.slice(at, nl).split(' ');
    const n = Number(size);
    if (type !== 'commit' || !Number.isInteger(n)) throw new MethodGuardError('a commit of the range could not be read');
    map.set(sha!, out.slice(nl + 1, nl + 1 + n));
    at = nl + 1 + n + 1;
  }
  return map;
}

/**
 * A commit object with another tree and parents; every other header kept but signatures, which
 * the new content would not match. The message is kept byte for byte.
 */
function withTreeAndParents(raw: string, tree: string, parents: string[]): string {
  const end = raw.indexOf('\n\n');
  const head = end < 0 ? raw.replace(/\n$/, '') : raw.slice(0, end);
  const rest = end < 0 ? null : raw.slice(end + 2);
  const kept: string[] = [];
  let skipping = false;
  for (const line of head.split('\n')) {
    if (line.startsWith(' ')) {
      if (!skipping) kept.push(line);
      continue;
    }
    skipping = /^(tree|parent|gpgsig|gpgsig-sha256) /.test(line);
    if (!skipping) kept.push(line);
  }
  const headers = [`tree ${tree}`, ...parents.map((p) => `parent ${p}`), ...kept].join('\n');
  return rest === null ? `${headers}\n` : `${headers}\n\n${rest}`;
}

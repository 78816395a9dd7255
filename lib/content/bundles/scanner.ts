import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { log } from '../../core/log';
import { validateManifest, type BundleManifest, type FsLimitOverrides } from './schema';

export const MANIFEST_FILE = 'bundle.yaml';

/** An agent whose file was found inside its bundle. Agents that cannot run are only in `problems`. */
export interface ScannedAgent {
  id: string;
  /** As written in bundle.yaml; the catalog falls back to the agent file, then the id. */
  name?: string;
  title?: string;
  icon?: string;
  description?: string;
  /** As written in bundle.yaml, relative to the bundle folder. */
  file: string;
  /** Absolute path of the agent file. Server side only. */
  path: string;
  entryPoint: boolean;
  /** Offered to users: an entry point (or the standalone agent) of a valid bundle, and not a duplicate id. */
  offered: boolean;
  /** The agent's own `tools.fs` overrides (the bundle's apply underneath). */
  limits: FsLimitOverrides;
  /** Change stamp of the agent file; equal stamps mean the parsed file can be reused. */
  stamp: string;
}

export interface ScannedBundle {
  /** Folder name under the bundles root. */
  folder: string;
  /** Absolute path of the bundle folder. Server side only. */
  root: string;
  /** The manifest's name, or the folder name when it has none or could not be read. */
  name: string;
  type?: 'bundle' | 'standalone';
  version?: string;
  description?: string;
  resources?: Record<string, unknown>;
  coreDependencies?: string[];
  limits: FsLimitOverrides;
  /** False when the bundle has no agent to offer users; `problems` says why. */
  valid: boolean;
  /** Human-readable, with paths relative to the bundles root. Non-empty does not imply invalid. */
  problems: string[];
  agents: ScannedAgent[];
}

export interface OfferedAgentRef {
  bundle: ScannedBundle;
  agent: ScannedAgent;
}

export interface BundleSnapshot {
  /** Absolute bundles root. */
  root: string;
  /** Sorted by folder name. */
  bundles: ScannedBundle[];
  /** Problems with the root itself (e.g. it does not exist). */
  problems: string[];
  /** Offered agents by lower-cased id. */
  offered: Map<string, OfferedAgentRef>;
  /** Increases whenever the content changes; equal generations mean equal content. */
  generation: number;
}

export interface BundleScanner {
  readonly root: string;
  /** Current bundles; re-reads only what changed since the last call. */
  scan(): Promise<BundleSnapshot>;
  /**
   * Cheaper check for a hot path that needs one bundle: re-validates the root and that bundle
   * only. Edits to other bundles show up at the next `scan()`.
   */
  check(folder: string): Promise<BundleSnapshot>;
}

interface Entry {
  bundle: ScannedBundle;
  /** Absolute paths whose change means the bundle must be rebuilt, with their stamps. */
  watch: string[];
  stamps: string[];
}

const MISSING = '-';

function stampOf(st: fs.Stats): string {
  return `${st.mtimeMs}:${st.ctimeMs}:${st.size}:${st.ino}`;
}

/**
 * Stats many paths at once. The callback API is used because one promise per stat costs about
 * twice as much, and this runs on every cached call.
 */
function stampAll(paths: string[]): Promise<string[]> {
  return new Promise((resolve) => {
    const out = new Array<string>(paths.length);
    let left = paths.length;
    if (left === 0) return resolve(out);
    paths.forEach((p, i) => {
      fs.stat(p, (err, st) => {
        out[i] = err ? MISSING : stampOf(st);
        if (--left === 0) resolve(out);
      });
    });
  });
}

function rel(...parts: string[]): string {
  return parts
    .join('/')
    .replace(/\\/g, '/')
    .replace(/\/{2,}/g, '/')
    .replace(/(^|\/)\.\//g, '$1');
}

function isInside(root: string, target: string): boolean {
  const r = path.relative(root, target);
  return r !== '' && !r.startsWith('..') && !path.isAbsolute(r);
}

/** Rejects agent `file` values that could point outside the bundle before touching the disk. */
function lexicalFileProblem(file: string): string | null {
  if (file.includes('\0')) return 'contains a NUL byte';
  if (path.isAbsolute(file) || /^[A-Za-z]:/.test(file) || file.startsWith('\\') || file.startsWith('/')) {
    return 'must be a path relative to the bundle folder';
  }
  if (file.includes('\\')) return 'must use "/" as separator';
  if (file.split('/').includes('..')) return 'must stay inside the bundle folder (no "..")';
  return null;
}

/**
 * Stats a file inside a bundle and says whether it really lives there. Real paths are only
 * compared when a symlink is on the way: resolving every file costs more than the whole rest
 * of a scan.
 */
async function inspectFile(
  root: string,
  abs: string,
  dirLinks: Map<string, Promise<boolean>>,
): Promise<'missing' | { st: fs.Stats; escapes: boolean }> {
  let st: fs.Stats;
  try {
    st = await fsp.lstat(abs);
  } catch {
    return 'missing';
  }
  const parents: string[] = [];
  for (let d = path.dirname(abs); isInside(root, d); d = path.dirname(d)) parents.push(d);
  const linkedParents = await Promise.all(
    parents.map((d) => {
      let p = dirLinks.get(d);
      if (!p) {
        p = fsp.lstat(d).then((s) => s.isSymbolicLink(), () => false);
        dirLinks.set(d, p);
      }
      return p;
    }),
  );
  if (!st.isSymbolicLink() && !linkedParents.some(Boolean)) return { st, escapes: false };
  try {
    st = await fsp.stat(abs);
    const [realRoot, real] = await Promise.all([fsp.realpath(root), fsp.realpath(abs)]);
    return { st, escapes: !isInside(realRoot, real) };
  } catch {
    return 'missing';
  }
}

async function readManifest(
  root: string,
  folder: string,
): Promise<{ manifest?: BundleManifest; problems: string[]; stamp: string }> {
  const file = path.join(root, MANIFEST_FILE);
  const where = rel(folder, MANIFEST_FILE);
  const [stamp] = await stampAll([file]);
  if (stamp === MISSING) return { problems: [`${where} not found`], stamp };
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { problems: [`${where} could not be read (${code === 'EISDIR' ? 'it is a folder' : code ?? 'error'})`], stamp };
  }
  let data: unknown;
  try {
    data = yaml.load(text);
  } catch (e) {
    const err = e as yaml.YAMLException;
    const line = err.mark ? ` at line ${err.mark.line + 1}` : '';
    return { problems: [`${where}: invalid YAML${line}: ${err.reason ?? 'parse error'}`], stamp };
  }
  const result = validateManifest(data);
  const problems = result.problems.map((p) => `${where}: ${p}`);
  return result.ok ? { manifest: result.manifest, problems, stamp } : { problems, stamp };
}

async function buildBundle(bundlesRoot: string, folder: string): Promise<Entry> {
  const root = path.join(bundlesRoot, folder);
  const where = rel(folder, MANIFEST_FILE);
  const read = await readManifest(root, folder);
  const manifestPath = path.join(root, MANIFEST_FILE);
  const bundle: ScannedBundle = { folder, root, name: folder, limits: {}, valid: false, problems: read.problems, agents: [] };
  const watch = [manifestPath];
  const stamps = [read.stamp];
  const m = read.manifest;
  if (!m) return { bundle, watch, stamps };

  if (m.name) bundle.name = m.name;
  bundle.type = m.type;
  if (m.version) bundle.version = m.version;
  if (m.description) bundle.description = m.description;
  if (m.resources) bundle.resources = m.resources;
  if (m.core_dependencies) bundle.coreDependencies = m.core_dependencies;
  bundle.limits = { ...m.tools?.fs };

  const entries = m.agents;
  const dirLinks = new Map<string, Promise<boolean>>();
  const checks = await Promise.all(
    entries.map(async (a) => {
      const label = `${a.at}.file`;
      const lexical = lexicalFileProblem(a.file);
      if (lexical) return { problem: `${where}: ${label} ${lexical}`, abs: null, stamp: MISSING };
      const abs = path.resolve(root, a.file);
      const shown = rel(folder, path.relative(root, abs));
      if (!isInside(root, abs)) return { problem: `${where}: ${label} must stay inside the bundle folder`, abs: null, stamp: MISSING };
      const found = await inspectFile(root, abs, dirLinks);
      if (found === 'missing') return { problem: `${shown} not found (${label} in ${where})`, abs, stamp: MISSING };
      const stamp = stampOf(found.st);
      if (found.escapes) return { problem: `${shown} links outside the bundle folder (${label} in ${where})`, abs, stamp };
      if (!found.st.isFile()) return { problem: `${shown} is not a file (${label} in ${where})`, abs, stamp };
      return { problem: null, abs, stamp };
    }),
  );

  const seen = new Map<string, string>();
  entries.forEach((a, i) => {
    const c = checks[i];
    if (c.abs) {
      watch.push(c.abs);
      stamps.push(c.stamp);
    }
    // One broken agent costs only itself: the others of the bundle stay available.
    if (c.problem || !c.abs) {
      if (c.problem) bundle.problems.push(c.problem);
      return;
    }
    const key = a.id.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) {
      bundle.problems.push(`${where}: agent id "${a.id}" is listed twice (${first} and ${a.at}); the first is used`);
      return;
    }
    seen.set(key, a.at);
    const agent: ScannedAgent = {
      id: a.id,
      file: a.file,
      path: c.abs,
      entryPoint: m.type === 'standalone' || a.entry_point === true,
      offered: false,
      limits: { ...a.tools?.fs },
      stamp: c.stamp,
    };
    if (a.name) agent.name = a.name;
    if (a.title) agent.title = a.title;
    if (a.icon) agent.icon = a.icon;
    if (a.description) agent.description = a.description;
    bundle.agents.push(agent);
  });

  // Agents without the flag stay private: a helper meant to be called by other agents must not
  // show up in the picker because its author left the line out. Saying so here makes the fix obvious.
  if (m.type === 'bundle' && m.agents.length && !m.agents.some((a) => a.entry_point === true)) {
    bundle.problems.push(
      `${where}: no agent has entry_point: true, so users have nobody to talk to (add entry_point: true to the agents users should pick)`,
    );
  }
  bundle.valid = bundle.agents.some((a) => a.entryPoint);
  return { bundle, watch, stamps };
}

async function listFolders(bundlesRoot: string): Promise<string[]> {
  const dirents = await fsp.readdir(bundlesRoot, { withFileTypes: true });
  const candidates = dirents.filter((d) => !d.name.startsWith('.') && (d.isDirectory() || d.isSymbolicLink()));
  const links = candidates.filter((d) => d.isSymbolicLink());
  const linkStamps = await Promise.all(
    links.map((d) => fsp.stat(path.join(bundlesRoot, d.name)).then((s) => s.isDirectory(), () => false)),
  );
  const okLinks = new Set(links.filter((_, i) => linkStamps[i]).map((d) => d.name));
  return candidates
    .filter((d) => d.isDirectory() || okLinks.has(d.name))
    .map((d) => d.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Applies the rules that span bundles: first folder wins a duplicate id. Never mutates cached entries. */
function assemble(root: string, entries: Entry[], generation: number): BundleSnapshot {
  const offered = new Map<string, OfferedAgentRef>();
  const names = new Map<string, string>();
  const bundles: ScannedBundle[] = [];
  for (const { bundle: base } of entries) {
    const bundle: ScannedBundle = { ...base, problems: [...base.problems], agents: base.agents.map((a) => ({ ...a })) };
    if (bundle.valid) {
      const where = rel(bundle.folder, MANIFEST_FILE);
      const other = names.get(bundle.name);
      if (other !== undefined) bundle.problems.push(`${where}: bundle name "${bundle.name}" is also used by ${rel(other, MANIFEST_FILE)}`);
      else names.set(bundle.name, bundle.folder);
      for (const agent of bundle.agents) {
        if (!agent.entryPoint) continue;
        const key = agent.id.toLowerCase();
        const owner = offered.get(key);
        if (owner) {
          bundle.problems.push(
            `${where}: agent id "${agent.id}" is already offered by ${rel(owner.bundle.folder, MANIFEST_FILE)}; this one is skipped`,
          );
          continue;
        }
        agent.offered = true;
        offered.set(key, { bundle, agent });
      }
    }
    bundles.push(bundle);
  }
  return { root, bundles, problems: [], offered, generation };
}

export function createBundleScanner(bundlesRoot: string): BundleScanner {
  const root = path.resolve(bundlesRoot);
  let rootStamp: string | null = null;
  let folders: string[] = [];
  const entries = new Map<string, Entry>();
  let snapshot: BundleSnapshot | null = null;
  let generation = 0;
  let pending: Promise<BundleSnapshot> | null = null;

  function emptySnapshot(problem: string): BundleSnapshot {
    return { root, bundles: [], problems: [problem], offered: new Map(), generation };
  }

  async function refresh(): Promise<BundleSnapshot> {
    const [rs] = await stampAll([root]);
    if (rs === MISSING) {
      if (rootStamp !== MISSING || !snapshot) {
        generation++;
        entries.clear();
        folders = [];
        rootStamp = MISSING;
        snapshot = emptySnapshot('the bundles folder (BUNDLES_ROOT) does not exist');
        log.warn('bundles_root_missing');
      }
      return snapshot!;
    }
    let changed = false;
    if (rs !== rootStamp || !snapshot) {
      try {
        const next = await listFolders(root);
        changed = next.length !== folders.length || next.some((f, i) => f !== folders[i]);
        folders = next;
        rootStamp = rs;
      } catch {
        generation++;
        entries.clear();
        folders = [];
        rootStamp = null;
        snapshot = emptySnapshot('the bundles folder (BUNDLES_ROOT) could not be read');
        return snapshot;
      }
    }
    for (const f of [...entries.keys()]) if (!folders.includes(f)) entries.delete(f);

    // One batch of stats for every known bundle; unknown folders are built from scratch.
    const known = folders.filter((f) => entries.has(f));
    const paths: string[] = [];
    for (const f of known) paths.push(...entries.get(f)!.watch);
    const now = await stampAll(paths);
    const stale: string[] = folders.filter((f) => !entries.has(f));
    let k = 0;
    for (const f of known) {
      const e = entries.get(f)!;
      let same = true;
      for (let j = 0; j < e.watch.length; j++, k++) if (now[k] !== e.stamps[j]) same = false;
      if (!same) stale.push(f);
    }
    if (stale.length) {
      changed = true;
      const built = await Promise.all(stale.map((f) => buildBundle(root, f)));
      for (const e of built) {
        entries.set(e.bundle.folder, e);
        if (!e.bundle.valid) log.warn('bundle_invalid', { folder: e.bundle.folder, problems: e.bundle.problems.length });
      }
    }
    if (!changed && snapshot) return snapshot;
    generation++;
    snapshot = assemble(root, folders.map((f) => entries.get(f)!).filter(Boolean), generation);
    return snapshot;
  }

  function scan(): Promise<BundleSnapshot> {
    // Concurrent callers share one pass over the disk.
    if (!pending) {
      pending = refresh().finally(() => {
        pending = null;
      });
    }
    return pending;
  }

  async function check(folder: string): Promise<BundleSnapshot> {
    if (pending || !snapshot || rootStamp === MISSING) return scan();
    const e = entries.get(folder);
    if (!e) return scan();
    const now = await stampAll([root, ...e.watch]);
    if (now[0] !== rootStamp) return scan();
    for (let j = 0; j < e.watch.length; j++) if (now[j + 1] !== e.stamps[j]) return scan();
    return snapshot;
  }

  return { root, scan, check };
}

const scanners = new Map<string, BundleScanner>();

/** Scans with a scanner shared per root, so every caller benefits from the same cache. */
export function scanBundles(bundlesRoot: string): Promise<BundleSnapshot> {
  const key = path.resolve(bundlesRoot);
  let s = scanners.get(key);
  if (!s) {
    s = createBundleScanner(key);
    scanners.set(key, s);
  }
  return s.scan();
}

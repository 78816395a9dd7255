import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import yaml from 'js-yaml';
import { isInside, walkFolder } from '../../core/paths';
import { isTable, parseToml } from '../bmad-config';
import { splitFrontmatter } from '../../core/frontmatter';

/**
 * The skill folders BMAD's installer writes into a project, one per tool (`target_dir` in
 * `tools/installer/ide/platform-codes.yaml` of bmad-method 6.12). The most common first: a
 * project installed for two tools holds the same skills twice, and the first copy is used.
 */
export const SKILL_FOLDERS = [
  '.claude/skills',
  '.agents/skills',
  '.agent/skills',
  '.cline/skills',
  '.kiro/skills',
  '.qwen/skills',
  '.adal/skills',
  '.bob/skills',
  '.codebuddy/skills',
  '.codewhale/skills',
  '.cortex/skills',
  '.factory/skills',
  '.firebender/skills',
  '.iflow/skills',
  '.junie/skills',
  '.kode/skills',
  '.neovate/skills',
  '.ona/skills',
  '.qoder/skills',
  '.trae/skills',
  '.zcode/skills',
  '.zencoder/skills',
] as const;

export const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MANIFEST = 'skill-manifest.csv';
/** Folders of `_bmad/` that never hold skills: the installer's own state. */
const NOT_SKILLS = new Set(['_config', '_cfg', 'custom', 'render', 'scripts', '_memory']);

export interface InstalledSkill {
  /** The folder's name, which is how menus, manifests and prose name the skill. */
  name: string;
  /** Absolute real path of the skill folder. */
  dir: string;
  /** The folder relative to the project, posix (`.claude/skills/bmad-prd`). */
  relDir: string;
  description?: string;
  module?: string;
  /** An agent: its customize.toml has an `[agent]` table (6.12) or its bmad-skill-manifest.yaml says `type: agent` (6.3). */
  agent: boolean;
  /** Has a customize.toml. */
  customizable: boolean;
}

export interface SkillDiscovery {
  skills: InstalledSkill[];
  /** What is wrong with the installed skills, for the project's problem list. */
  problems: string[];
}

interface ManifestRow {
  name: string;
  module?: string;
  description?: string;
  /** SKILL.md (or the skill folder) relative to the project, as the manifest writes it. */
  path: string;
}

const posix = (p: string) => p.split(path.sep).join('/');
const isDir = (p: string) => fs.stat(p).then((s) => s.isDirectory(), () => false);
const isFile = (p: string) => fs.stat(p).then((s) => s.isFile(), () => false);

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
}

/** `_bmad/_config/skill-manifest.csv` (6.2 on): where the installer put each skill, even when it has since moved it. */
export async function readSkillManifest(configDir: string | null): Promise<ManifestRow[]> {
  if (!configDir) return [];
  const text = await fs.readFile(path.join(/*turbopackIgnore: true*/ configDir, MANIFEST), 'utf8').catch(() => null);
  if (text === null) return [];
  let rows: Record<string, string>[];
  try {
    rows = parseCsv(text, { columns: true, skip_empty_lines: true, relax_column_count: true, bom: true }) as Record<string, string>[];
  } catch {
    return [];
  }
  return rows.flatMap((r) => {
    const name = str(r.canonicalId) ?? str(r.name);
    const where = str(r.path);
    return name && SKILL_NAME.test(name) && where ? [{ name, module: str(r.module), description: str(r.description), path: where.replace(/^\{project[-_]root\}\/?/, '') }] : [];
  });
}

/** The skill folders whose tool folder (`.claude`, `.agents`, ...) the project has: one listing instead of a lookup per tool. */
async function presentFolders(projectReal: string): Promise<string[]> {
  const top = new Set(await fs.readdir(projectReal).catch(() => [] as string[]));
  return SKILL_FOLDERS.filter((f) => top.has(f.split('/')[0]));
}

/** The real folder, when it is one inside the project (a link out of the project is no skill of it). */
async function realInside(projectReal: string, candidate: string): Promise<string | null> {
  const real = await fs.realpath(candidate).catch(() => null);
  if (!real || !isInside(projectReal, real) || !(await isDir(real))) return null;
  return real;
}

interface Found {
  name: string;
  dir: string;
  row?: ManifestRow;
}

interface Described {
  skill: InstalledSkill | null;
  problems: string[];
  /** `table.key = bare path` values of its customize.toml, checked against the folder on every discovery. */
  assets: Array<[string, string]>;
}

// Parsing every skill's files again on each look at the project would cost more than the rest of
// the project together; a skill is read again only when one of its files changes.
const describedCache = new Map<string, { stamp: string; value: Promise<Described> }>();
const SKILL_FILES = ['SKILL.md', 'customize.toml', 'bmad-skill-manifest.yaml'];

async function describe(projectReal: string, found: Found, problems: string[]): Promise<InstalledSkill | null> {
  // One listing, then stats of the files that are there: a failed stat costs an exception.
  const present = new Set(await fs.readdir(found.dir).catch(() => [] as string[]));
  const stats = await Promise.all(SKILL_FILES.map((f) => (present.has(f) ? fs.stat(path.join(/*turbopackIgnore: true*/ found.dir, f)).catch(() => null) : null)));
  const stamp = stats.map((st) => (st ? `${st.mtimeMs}:${st.size}` : '-')).join('/');
  const key = [projectReal, found.dir, found.name, found.row?.module ?? '', found.row?.description ?? ''].join('\0');
  let hit = describedCache.get(key);
  if (!hit || hit.stamp !== stamp) {
    hit = { stamp, value: read(projectReal, found) };
    describedCache.set(key, hit);
  }
  const d = await hit.value;
  problems.push(...d.problems);
  const relDir = posix(path.relative(projectReal, found.dir));
  for (const [where, value] of d.assets) {
    if (!(await isFile(path.join(/*turbopackIgnore: true*/ found.dir, value)))) problems.push(`skill ${found.name}: ${where} names ${value}, which is not in ${relDir}`);
  }
  return d.skill && { ...d.skill };
}

async function read(projectReal: string, found: Found): Promise<Described> {
  const problems: string[] = [];
  const assets: Array<[string, string]> = [];
  const skill = await parseSkill(projectReal, found, problems, assets);
  return { skill, problems, assets };
}

async function parseSkill(projectReal: string, found: Found, problems: string[], assets: Array<[string, string]>): Promise<InstalledSkill | null> {
  const relDir = posix(path.relative(projectReal, found.dir));
  const skillMd = await fs.readFile(path.join(/*turbopackIgnore: true*/ found.dir, 'SKILL.md'), 'utf8').catch(() => null);
  if (skillMd === null) {
    problems.push(`skill ${found.name}: ${relDir}/SKILL.md is missing`);
    return null;
  }
  const front = splitFrontmatter(skillMd);
  if (front.problem) problems.push(`skill ${found.name}: ${relDir}/SKILL.md: ${front.problem}`);
  const skill: InstalledSkill = { name: found.name, dir: found.dir, relDir, agent: false, customizable: false };
  const description = str(front.data.description) ?? found.row?.description;
  if (description) skill.description = description;
  if (found.row?.module) skill.module = found.row.module;

  const customize = await fs.readFile(path.join(/*turbopackIgnore: true*/ found.dir, 'customize.toml'), 'utf8').catch(() => null);
  if (customize !== null) {
    skill.customizable = true;
    const parsed = parseToml(customize);
    if (!parsed.ok) problems.push(`skill ${found.name}: ${relDir}/customize.toml is not valid TOML: ${parsed.reason}`);
    else {
      if (isTable(parsed.data.agent)) skill.agent = true;
      assets.push(...bareFiles(parsed.data));
    }
  }
  const meta = await fs.readFile(path.join(/*turbopackIgnore: true*/ found.dir, 'bmad-skill-manifest.yaml'), 'utf8').catch(() => null);
  if (meta !== null) {
    try {
      const m = yaml.load(meta, { schema: yaml.CORE_SCHEMA }) as Record<string, unknown> | null;
      if (m && str(m.type) === 'agent') skill.agent = true;
      if (m && !skill.module && str(m.module)) skill.module = str(m.module);
    } catch {
      problems.push(`skill ${found.name}: ${relDir}/bmad-skill-manifest.yaml is not valid YAML`);
    }
  }
  return skill;
}

// `prd_template = "assets/prd-template.md"`: a bare path, read from the skill folder.
const BARE_FILE = /^(?:\.\/)?[\w.-]+(?:\/[\w.-]+)+\.[A-Za-z0-9]+$/;

/** The files a skill's customize.toml names by a bare path: they must be in the skill folder. */
function bareFiles(data: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const table of ['workflow', 'agent']) {
    const t = data[table];
    if (!isTable(t)) continue;
    for (const [key, value] of Object.entries(t)) {
      if (typeof value === 'string' && BARE_FILE.test(value) && !value.split('/').includes('..')) out.push([`${table}.${key}`, value]);
    }
  }
  return out;
}

const installWalks = new Map<string, { stamp: string; value: Promise<Array<{ name: string; dir: string }>> }>();

/**
 * Every SKILL.md under the install folder (6.2 keeps its skills there), a few levels deep. The
 * walk is redone when the installer has run again (its manifest.yaml) or the folder changed.
 */
async function skillsInInstall(installReal: string): Promise<Array<{ name: string; dir: string }>> {
  const stats = await Promise.all([installReal, path.join(installReal, '_config', 'manifest.yaml'), path.join(installReal, '_cfg', 'manifest.yaml')].map((p) => fs.stat(p).catch(() => null)));
  const stamp = stats.map((st) => (st ? String(st.mtimeMs) : '-')).join('/');
  const hit = installWalks.get(installReal);
  if (hit && hit.stamp === stamp) return hit.value;
  const value = walkInstall(installReal);
  installWalks.set(installReal, { stamp, value });
  return value;
}

async function walkInstall(installReal: string): Promise<Array<{ name: string; dir: string }>> {
  const out: Array<{ name: string; dir: string }> = [];
  try {
    const walk = walkFolder(installReal, { maxDepth: 5, maxEntries: 20_000, onUnreadable: 'skip' });
    for await (const e of walk) {
      if (e.depth === 0 && NOT_SKILLS.has(e.name)) continue;
      if (e.type !== 'file' || e.name !== 'SKILL.md' || e.depth === 0) continue;
      const rel = e.path.split('/');
      if (NOT_SKILLS.has(rel[0])) continue;
      const dir = path.join(/*turbopackIgnore: true*/ installReal, ...rel.slice(0, -1));
      out.push({ name: rel[rel.length - 2], dir });
    }
  } catch {
    // An unreadable install has no skills to offer; its other problems are reported elsewhere.
  }
  return out;
}

/**
 * A project's installed skills: the folders its skill manifest names (kept in `_bmad/` up to
 * 6.2), every `SKILL.md` under `_bmad/`, then every skill folder of every tool BMAD installs
 * for. One skill per name; missing files are problems, never errors.
 */
export async function discoverSkills(projectRoot: string, installRoot: string, configDir: string | null): Promise<SkillDiscovery> {
  const problems: string[] = [];
  const projectReal = await fs.realpath(projectRoot).catch(() => projectRoot);
  const installReal = await realInside(projectReal, installRoot);
  const rows = await readSkillManifest(configDir);
  const byName = new Map<string, Found>();
  const add = (f: Found) => {
    if (!byName.has(f.name)) byName.set(f.name, f);
  };

  for (const row of rows) {
    const target = path.resolve(/*turbopackIgnore: true*/ projectReal, row.path);
    const dir = /(^|\/)SKILL\.md$/i.test(row.path) ? path.dirname(target) : target;
    const real = await realInside(projectReal, dir);
    if (real) add({ name: row.name, dir: real, row });
  }
  if (installReal) for (const s of await skillsInInstall(installReal)) if (SKILL_NAME.test(s.name)) add(s);
  for (const folder of await presentFolders(projectReal)) {
    const root = await realInside(projectReal, path.join(/*turbopackIgnore: true*/ projectReal, folder));
    if (!root) continue;
    const entries = await fs.readdir(root, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (!e.isDirectory() || e.name.startsWith('.') || !SKILL_NAME.test(e.name)) continue;
      add({ name: e.name, dir: path.join(/*turbopackIgnore: true*/ root, e.name) });
    }
  }
  const rowOf = new Map(rows.map((r) => [r.name, r]));
  for (const f of byName.values()) f.row ??= rowOf.get(f.name);

  const described = await Promise.all([...byName.values()].map((f) => describe(projectReal, f, problems)));
  const skills = described.filter((s): s is InstalledSkill => s !== null);
  for (const row of rows) {
    if (!byName.has(row.name)) problems.push(`skill ${row.name}: listed in the skill manifest but installed in no skill folder (${row.path} is gone)`);
  }
  return { skills, problems };
}

/** Where a named skill lives, looked up the way {@link discoverSkills} ranks copies; null when it is not installed. */
export async function locateSkill(projectRoot: string, installRoot: string, name: string): Promise<string | null> {
  if (!SKILL_NAME.test(name)) return null;
  const projectReal = await fs.realpath(projectRoot).catch(() => projectRoot);
  let configDir: string | null = null;
  for (const folder of ['_config', '_cfg']) if (!configDir && (await isDir(path.join(/*turbopackIgnore: true*/ installRoot, folder)))) configDir = path.join(/*turbopackIgnore: true*/ installRoot, folder);
  const hasSkillMd = async (dir: string | null) => (dir && (await isFile(path.join(/*turbopackIgnore: true*/ dir, 'SKILL.md'))) ? dir : null);
  const row = (await readSkillManifest(configDir)).find((r) => r.name === name);
  if (row) {
    const target = path.resolve(/*turbopackIgnore: true*/ projectReal, row.path);
    const found = await hasSkillMd(await realInside(projectReal, /(^|\/)SKILL\.md$/i.test(row.path) ? path.dirname(target) : target));
    if (found) return found;
  }
  const installReal = await realInside(projectReal, installRoot);
  if (installReal) {
    const inInstall = (await skillsInInstall(installReal)).find((s) => s.name === name);
    if (inInstall) return inInstall.dir;
  }
  for (const folder of await presentFolders(projectReal)) {
    const found = await hasSkillMd(await realInside(projectReal, path.join(/*turbopackIgnore: true*/ projectReal, folder, name)));
    if (found) return found;
  }
  return null;
}

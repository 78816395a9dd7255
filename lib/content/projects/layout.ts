import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import yaml from 'js-yaml';
import { isDocumentFolderKey, isDeniedProjectName } from '../../core/paths';
import type { Problem } from '../../core/results';
import { centralConfigLayers, isTable, mergeTomlLayers, type TomlTable } from '../bmad-config';
import { discoverSkills, type InstalledSkill } from '../skills';

/**
 * What BMAD's installer leaves in a project, read as it is: `_bmad/` (`bmad/` in early v6
 * alphas) with `_config/` (`_cfg/`) manifests and one `config.yaml` per module.
 */
export interface BmadInstall {
  /** `_bmad` or `bmad`. */
  folder: string;
  /** Absolute path of the install folder. */
  root: string;
  version?: string;
  modules: string[];
  agents: InstalledAgent[];
  /**
   * The modules' config.yaml merged (core first, then the others in manifest order), then the
   * `core` and `modules.*` tables of the central config (6.12) over them, as BMAD resolves them.
   */
  config: Record<string, unknown>;
  /** `_config/` or `_cfg/`, absolute, when the install has one. */
  configDir: string | null;
  /** The central config's layers merged in BMAD's order (6.12 `_bmad/config.toml` ...), or null. */
  central: TomlTable | null;
  /** Skills found in the project's skill folders and in the install (6.2 on). */
  skills: InstalledSkill[];
  /** Absolute output folder, inside the project. */
  outputRoot: string;
  /**
   * The folders the config names for documents (`output_folder`, `planning_artifacts`, ...) by
   * key, relative to the project (posix), as BMAD means them: `docs/planning` and
   * `{project-root}/docs/planning` alike. Values that name no folder inside the project are left out.
   */
  documentFolders: Record<string, string>;
  /** Files named relative to the project. */
  problems: Problem[];
}

export interface InstalledAgent {
  /** The manifest's `name` (`pm`), unique in the project. */
  id: string;
  displayName?: string;
  title?: string;
  icon?: string;
  capabilities?: string;
  module?: string;
  /** Absolute path of the compiled agent file, or of an agent skill's SKILL.md. */
  file: string;
  /** Relative to the project, posix. */
  relFile: string;
  /** Set for an agent that is a skill (6.3 on): the skill's name. */
  skill?: string;
  /** The install's description of the agent (6.12 `[agents.<skill>]` of the central config). */
  description?: string;
}

const INSTALL_FOLDERS = ['_bmad', 'bmad'];
const CONFIG_FOLDERS = ['_config', '_cfg'];
const DEFAULT_OUTPUT = '_bmad-output';
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

async function isDir(p: string): Promise<boolean> {
  return fs.stat(p).then((s) => s.isDirectory(), () => false);
}

async function readText(p: string): Promise<string | null> {
  return fs.readFile(p, 'utf8').catch(() => null);
}

function isInsideFolder(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function posix(p: string): string {
  return p.split(path.sep).join('/');
}

/** The install folder of a project, or null when the folder holds no BMAD install. */
export async function findInstallFolder(projectRoot: string): Promise<string | null> {
  for (const name of INSTALL_FOLDERS) {
    const root = path.join(/*turbopackIgnore: true*/ projectRoot, name);
    for (const cfg of CONFIG_FOLDERS) if (await isDir(path.join(/*turbopackIgnore: true*/ root, cfg))) return name;
    // An install without manifests still has its modules' agents.
    if ((await isDir(path.join(/*turbopackIgnore: true*/ root, 'core'))) || (await isDir(path.join(/*turbopackIgnore: true*/ root, 'bmm')))) return name;
  }
  return null;
}

function yamlMap(text: string | null): Record<string, unknown> | null {
  const read = readYamlMap(text);
  return read && 'map' in read ? read.map : null;
}

/** A YAML map, or why the text is none (null when there is no text). */
function readYamlMap(text: string | null): { map: Record<string, unknown> } | { reason: string } | null {
  if (text === null) return null;
  try {
    const v = yaml.load(text, { schema: yaml.CORE_SCHEMA });
    return v && typeof v === 'object' && !Array.isArray(v) ? { map: v as Record<string, unknown> } : { reason: 'is not a YAML map of keys' };
  } catch (e) {
    const reason = e instanceof yaml.YAMLException ? `${e.reason} (line ${e.mark.line + 1})` : 'unreadable YAML';
    return { reason: `is not valid YAML: ${reason}` };
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() ? v.trim() : typeof v === 'number' ? String(v) : undefined;
}

/** Module names from manifest.yaml: a list of names (alphas) or of `{ name, version }` (6.x). */
function manifestModules(manifest: Record<string, unknown> | null): string[] {
  const list = Array.isArray(manifest?.modules) ? manifest.modules : [];
  return list.map((m) => (typeof m === 'string' ? m : str((m as { name?: unknown })?.name))).filter((m): m is string => !!m);
}

/**
 * A folder a config names for documents, relative to the project (posix), as BMAD means it: with
 * or without `{project-root}/`, relative to the project root. `{output_folder}/...` is under the
 * output folder. Null, with the reason, for anything else: an absolute path, one that leaves the
 * project, the project root itself, the installed method, a secret or machinery folder, or a
 * value still waiting on a variable.
 */
export function projectFolderOf(raw: string, outputRel: string, installFolder: string): { rel: string } | { reason: string } {
  let text = raw.trim().replace(/\\/g, '/');
  text = text.replace(/^\{output_folder\}(?=\/|$)/, outputRel);
  text = text.replace(/^\{project[-_]root\}(?=\/|$)/, '');
  if (/\{[^}]*\}/.test(text)) return { reason: 'names a variable the server does not resolve here' };
  if (/^([A-Za-z]:|~)/.test(text) || (raw.trim().startsWith('/') && !/^\{/.test(raw.trim()))) return { reason: 'is an absolute path' };
  const parts = text.split('/').filter((p) => p && p !== '.');
  if (parts.some((p) => p === '..')) return { reason: 'leaves the project' };
  if (!parts.length) return { reason: 'is the project folder itself' };
  if (parts.some((p) => isDeniedProjectName(p) || p.startsWith('.'))) return { reason: 'is a hidden, secret or machinery folder' };
  if (parts[0] === installFolder || /^(_bmad|bmad|_config|_cfg)$/i.test(parts[0])) return { reason: 'is inside the installed method' };
  return { rel: parts.join('/') };
}

/**
 * Where the project's documents go: the config's `output_folder` (`_bmad-output`,
 * `{project-root}/docs`, ...), always inside the project.
 */
function outputRootOf(projectRoot: string, config: Record<string, unknown>, configFile: string, problems: Problem[]): string {
  const raw = str(config.output_folder) ?? DEFAULT_OUTPUT;
  // Looser than the other document folders (an absolute path inside the project counts): the output folder is the app's own mount.
  const rel = raw.replace(/^\{project[-_]root\}\/?/, '').replace(/^\.\//, '');
  const abs = path.resolve(/*turbopackIgnore: true*/ projectRoot, rel || DEFAULT_OUTPUT);
  if (/\{[^}]*\}/.test(rel) || !isInsideFolder(projectRoot, abs) || abs === projectRoot) {
    problems.push({ file: configFile, severity: 'warning', reason: `output_folder "${raw}" is not a folder inside the project; ${DEFAULT_OUTPUT} is used` });
    return path.join(/*turbopackIgnore: true*/ projectRoot, DEFAULT_OUTPUT);
  }
  return abs;
}

/** Every other folder the config names for documents, by key; one that cannot be used is a problem line. */
function documentFoldersOf(config: Record<string, unknown>, outputRel: string, folder: string, problems: Problem[]): Record<string, string> {
  const out: Record<string, string> = { output_folder: outputRel };
  for (const [key, value] of Object.entries(config)) {
    if (key === 'output_folder' || !isDocumentFolderKey(key)) continue;
    const raw = str(value);
    if (!raw) continue;
    const found = projectFolderOf(raw, outputRel, folder);
    if ('rel' in found) out[key] = found.rel;
    else problems.push({ file: folder, severity: 'warning', reason: `${key} "${raw}" ${found.reason}; it is not a folder agents write to` });
  }
  return out;
}

async function manifestAgents(projectRoot: string, configDir: string, problems: Problem[]): Promise<InstalledAgent[] | null> {
  const manifestFile = `${posix(path.relative(projectRoot, configDir))}/agent-manifest.csv`;
  const text = await readText(path.join(/*turbopackIgnore: true*/ configDir, 'agent-manifest.csv'));
  if (text === null) return null;
  let rows: Record<string, string>[];
  try {
    rows = parseCsv(text, { columns: true, skip_empty_lines: true, relax_column_count: true, bom: true }) as Record<string, string>[];
  } catch (e) {
    problems.push({ file: manifestFile, severity: 'error', reason: `not valid CSV (${(e as Error).message.split('\n')[0]}); the agents are looked for in the module folders instead` });
    return null;
  }
  const agents: InstalledAgent[] = [];
  for (const row of rows) {
    const id = str(row.name);
    const rel = str(row.path);
    if (!id || !ID.test(id) || !rel) {
      problems.push({ file: manifestFile, severity: 'error', reason: `a row without a usable name or path was skipped${id ? ` (${id})` : ''}` });
      continue;
    }
    const file = path.resolve(/*turbopackIgnore: true*/ projectRoot, rel.replace(/^\{project[-_]root\}\/?/, ''));
    if (!isInsideFolder(projectRoot, file)) {
      problems.push({ file: manifestFile, severity: 'error', reason: `agent ${id} points outside the project (${rel})`, agent: id });
      continue;
    }
    agents.push({
      id,
      displayName: str(row.displayName),
      title: str(row.title),
      icon: str(row.icon),
      capabilities: str(row.capabilities),
      module: str(row.module),
      file,
      relFile: posix(path.relative(projectRoot, file)),
    });
  }
  return agents;
}

/** Without a manifest: every `<module>/agents/*.md` of the install. */
async function scannedAgents(projectRoot: string, installRoot: string): Promise<InstalledAgent[]> {
  const agents: InstalledAgent[] = [];
  const modules = await fs.readdir(installRoot, { withFileTypes: true }).catch(() => []);
  for (const m of modules) {
    if (!m.isDirectory() || m.name.startsWith('_') || m.name.startsWith('.')) continue;
    const dir = path.join(/*turbopackIgnore: true*/ installRoot, m.name, 'agents');
    const files = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const f of files) {
      if (!f.isFile() || !f.name.endsWith('.md')) continue;
      const id = f.name.replace(/\.md$/, '');
      if (!ID.test(id)) continue;
      const file = path.join(/*turbopackIgnore: true*/ dir, f.name);
      agents.push({ id, module: m.name, file, relFile: posix(path.relative(projectRoot, file)) });
    }
  }
  return agents;
}

/** `_bmad/config.toml` and its overrides (6.12), merged; null without the installer's layer. */
async function centralConfig(root: string, folder: string, problems: string[]): Promise<TomlTable | null> {
  const layers = centralConfigLayers(folder);
  const texts = await Promise.all(layers.map((rel) => readText(path.join(/*turbopackIgnore: true*/ path.dirname(root), rel))));
  if (texts[0] === null) return null;
  const merged = mergeTomlLayers(layers.map((rel, i) => ({ path: rel, text: texts[i] })));
  problems.push(...merged.problems);
  return merged.data;
}

function tableScalars(t: unknown): Record<string, unknown> {
  if (!isTable(t)) return {};
  return Object.fromEntries(Object.entries(t).filter(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'));
}

function skillAgent(projectRoot: string, skill: InstalledSkill, from: Partial<InstalledAgent>): InstalledAgent {
  const file = path.join(/*turbopackIgnore: true*/ skill.dir, 'SKILL.md');
  const agent: InstalledAgent = { ...from, id: skill.name, file, relFile: posix(path.relative(projectRoot, file)), skill: skill.name };
  agent.module ??= skill.module;
  return agent;
}

/**
 * Agents that are skills (6.3 on): the agent manifest's rows whose compiled file is gone but
 * whose skill is installed (6.3), the central config's `[agents.<skill>]` roster (6.12), then
 * any other agent skill, in name order.
 */
async function skillAgents(projectRoot: string, listed: InstalledAgent[] | null, central: TomlTable | null, skills: InstalledSkill[], problems: string[]): Promise<{ compiled: InstalledAgent[]; skills: InstalledAgent[] }> {
  const byName = new Map(skills.map((s) => [s.name, s]));
  const out: InstalledAgent[] = [];
  const taken = new Set<string>();
  const compiled: InstalledAgent[] = [];
  for (const a of listed ?? []) {
    const skill = byName.get(a.id);
    // 6.3 lists its agent skills at the folders it removed after copying them to the tool's.
    if (skill?.agent && !taken.has(skill.name) && !(await fs.stat(a.file).then((st) => st.isFile(), () => false))) {
      out.push(skillAgent(projectRoot, skill, a));
      taken.add(skill.name);
    } else compiled.push(a);
  }
  const roster = isTable(central?.agents) ? (central?.agents as TomlTable) : {};
  for (const [name, entry] of Object.entries(roster)) {
    if (taken.has(name)) continue;
    const skill = byName.get(name);
    if (!skill) {
      problems.push(`agent ${name}: listed in the central config but its skill is not installed in any skill folder`);
      continue;
    }
    const e = isTable(entry) ? entry : {};
    out.push(skillAgent(projectRoot, skill, { displayName: str(e.name), title: str(e.title), icon: str(e.icon), description: str(e.description), module: str(e.module) }));
    taken.add(name);
  }
  for (const skill of [...skills].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (skill.agent && !taken.has(skill.name)) {
      out.push(skillAgent(projectRoot, skill, {}));
      taken.add(skill.name);
    }
  }
  return { compiled, skills: out };
}

/** Reads a project's BMAD install, or null when there is none. Never throws for bad content. */
export async function readInstall(projectRoot: string): Promise<BmadInstall | null> {
  const folder = await findInstallFolder(projectRoot);
  if (!folder) return null;
  const root = path.join(/*turbopackIgnore: true*/ projectRoot, folder);
  const problems: Problem[] = [];
  let configDir: string | null = null;
  for (const cfg of CONFIG_FOLDERS) if (await isDir(path.join(/*turbopackIgnore: true*/ root, cfg))) configDir = path.join(/*turbopackIgnore: true*/ root, cfg);

  const manifest = configDir ? yamlMap(await readText(path.join(/*turbopackIgnore: true*/ configDir, 'manifest.yaml'))) : null;
  const installation = manifest?.installation as Record<string, unknown> | undefined;
  const version = str(installation?.version) ?? str(manifest?.version);
  let modules = manifestModules(manifest);
  if (!modules.length) {
    const entries = await fs.readdir(root, { withFileTypes: true }).catch(() => []);
    modules = entries.filter((e) => e.isDirectory() && !e.name.startsWith('_') && !e.name.startsWith('.')).map((e) => e.name);
  }

  // core first: module configs repeat its keys and may refine them.
  const config: Record<string, unknown> = {};
  let outputFrom = `${folder}/core/config.yaml`;
  for (const m of ['core', ...modules.filter((x) => x !== 'core')]) {
    const file = `${folder}/${m}/config.yaml`;
    const read = readYamlMap(await readText(path.join(/*turbopackIgnore: true*/ root, m, 'config.yaml')));
    if (read === null) continue;
    if ('reason' in read) {
      problems.push({ file, severity: 'error', reason: `${read.reason}; its settings are not used` });
      continue;
    }
    Object.assign(config, read.map);
    if (read.map.output_folder !== undefined) outputFrom = file;
  }

  // Skill installs: their central config and skills report problems as lines; they become the install's problems.
  const skillNotes: string[] = [];
  const central = await centralConfig(root, folder, skillNotes);
  if (central) {
    const modules = isTable(central.modules) ? Object.keys(central.modules).map((m) => (central.modules as TomlTable)[m]) : [];
    for (const t of [central.core, ...modules]) Object.assign(config, tableScalars(t));
  }

  const discovery = await discoverSkills(projectRoot, root, configDir);
  skillNotes.push(...discovery.problems);
  const listed = configDir ? await manifestAgents(projectRoot, configDir, problems) : null;
  const listedIn = configDir && listed ? `${posix(path.relative(projectRoot, configDir))}/agent-manifest.csv` : null;
  const split = await skillAgents(projectRoot, listed, central, discovery.skills, skillNotes);
  const agents = [...(listed ? split.compiled : await scannedAgents(projectRoot, root)), ...split.skills];
  for (const reason of skillNotes) problems.push({ file: folder, severity: /not installed|missing|not in /.test(reason) ? 'error' : 'warning', reason });
  const present = await Promise.all(agents.map((a) => fs.stat(a.file).then((s) => s.isFile(), () => false)));
  const usable = agents.filter((a, i) => {
    if (!present[i]) problems.push({ file: listedIn ?? a.relFile, severity: 'error', reason: `agent ${a.id}: ${a.relFile} not found`, agent: a.id });
    return present[i];
  });
  const seen = new Set<string>();
  const unique = usable.filter((a) => {
    const key = a.id.toLowerCase();
    if (seen.has(key)) {
      problems.push({ file: listedIn ?? a.relFile, severity: 'warning', reason: `agent id ${a.id} appears twice; ${a.relFile} is not offered`, agent: a.id });
      return false;
    }
    seen.add(key);
    return true;
  });

  const outputRoot = outputRootOf(projectRoot, config, outputFrom, problems);
  const documentFolders = documentFoldersOf(config, posix(path.relative(projectRoot, outputRoot)), folder, problems);
  return { folder, root, version, modules, agents: unique, config, configDir, central, skills: discovery.skills, outputRoot, documentFolders, problems };
}

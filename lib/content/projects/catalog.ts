import { promises as fs } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { parseAgentFile, type AgentDefinition } from '../agents/parser';
import { commandSummaries, type AgentListing, type ResolvedAgent } from '../agents/catalog';
import type { Workspace } from '../agents/workspace';
import { problemLine, type Problem } from '../../core/results';
import { readInstall, type BmadInstall, type InstalledAgent } from './layout';
import { customizationLayers, mergeTomlLayers } from '../bmad-config';
import { skillAgentDefinition } from '../agents/skill-agent';

/** A project folder's own settings for this app, beside its BMAD install. */
export const SETTINGS_FILE = '.bmad-orchestrator.yaml';
const PROJECT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const SAFE_FOLDER = /^[A-Za-z0-9_][A-Za-z0-9._ -]*$/;
const NEVER_WRITABLE = /^(node_modules|_bmad|bmad|_config|_cfg)$/i;

export interface Project {
  id: string;
  name: string;
  /** Real (symlink-free) project folder. */
  root: string;
  install: BmadInstall;
  /**
   * Project folders agents may write besides the output folder (relative, posix): the settings'
   * and the folders the config names for documents (`planning_artifacts: docs/planning`).
   */
  writable: string[];
  /** What is wrong with the install or the settings file (cheap checks; the doctor does the rest). */
  problems: Problem[];
}

/** A project as a listing shows it: never an absolute path. */
export interface ProjectOverview {
  /** The project's folder name. */
  id: string;
  /** BMAD's `project_name` (the folder name when the install sets none). */
  name: string;
  bmad: { version: string | null; folder: string; modules: string[] };
  agentCount: number;
  /** Virtual path of the output folder every agent of the project shares. */
  outputFolder: string;
  /** Further folders agents may write (virtual paths). */
  writable: string[];
  /** The config's document folders beyond the output folder (virtual paths). */
  documentFolders: string[];
  /** `<file>: <severity>: <reason>` lines of what reading the install finds. */
  problems: string[];
}

export interface ProjectCatalog {
  readonly projectsRoot: string;
  list(): Promise<Project[]>;
  get(projectId: string): Promise<Project | null>;
  agents(project: Project): Promise<AgentListing[]>;
  getAgent(projectId: string, agentId: string): Promise<ResolvedAgent | null>;
  /** What others are shown of a project: its install, folders as virtual paths, its problems (no absolute path). */
  view(project: Project): Promise<ProjectOverview>;
}

export interface ProjectCatalogOptions {
  /** A project read this recently is not read again (0: always). New installs show within this delay. */
  revalidateMs?: number;
}

export function isValidProjectId(id: unknown): id is string {
  return typeof id === 'string' && PROJECT_ID.test(id) && !/^\.+$/.test(id);
}

/** `writable: [docs, src]` from the settings file; anything unsafe is dropped with a problem line. */
async function readSettings(root: string, install: BmadInstall, problems: Problem[]): Promise<string[]> {
  const text = await fs.readFile(path.join(/*turbopackIgnore: true*/ root, SETTINGS_FILE), 'utf8').catch(() => null);
  if (text === null) return [];
  let parsed: unknown;
  try {
    parsed = yaml.load(text, { schema: yaml.CORE_SCHEMA });
  } catch (e) {
    problems.push({ file: SETTINGS_FILE, severity: 'warning', reason: `not valid YAML (${(e as Error).message.split('\n')[0]}); no extra folder is writable` });
    return [];
  }
  const list = (parsed as { writable?: unknown } | null)?.writable;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) {
    problems.push({ file: SETTINGS_FILE, severity: 'warning', reason: 'writable must be a list of folders, e.g. [docs, src]' });
    return [];
  }
  const out: string[] = [];
  for (const item of list) {
    const folder = typeof item === 'string' ? item.trim().replace(/^\.\//, '').replace(/\/+$/, '') : '';
    const parts = folder.split('/');
    const ok = folder && parts.every((p) => SAFE_FOLDER.test(p) && p !== '..' && p !== '.') && !NEVER_WRITABLE.test(parts[0]) && parts[0] !== install.folder;
    if (!ok) problems.push({ file: SETTINGS_FILE, severity: 'warning', reason: `"${String(item)}" cannot be made writable (a folder inside the project, not hidden, not the installed method)` });
    else out.push(parts.join('/'));
  }
  return out;
}

function posixRel(root: string, abs: string): string {
  return path.relative(root, abs).split(path.sep).join('/');
}

/** The config's document folders that are not inside the output folder, in the config's order. */
export function documentFoldersBeyondOutput(root: string, install: BmadInstall): string[] {
  const outputRel = posixRel(root, install.outputRoot);
  return [...new Set(Object.values(install.documentFolders))].filter((f) => f !== outputRel && !f.startsWith(`${outputRel}/`));
}

/** The project in a folder (its install and settings), or null when the folder holds no BMAD install. */
export async function readProject(folder: string, id: string): Promise<Project | null> {
  // A symlink to a folder elsewhere is a project too; its real path is what the sandbox uses.
  const root = await fs.realpath(folder).catch(() => null);
  if (!root || !(await fs.stat(root).then((s) => s.isDirectory(), () => false))) return null;
  const install = await readInstall(root);
  if (!install) return null;
  const problems = [...install.problems];
  const writable = [...new Set([...(await readSettings(root, install, problems)), ...documentFoldersBeyondOutput(root, install)])];
  const name = typeof install.config.project_name === 'string' && install.config.project_name.trim() ? install.config.project_name.trim() : id;
  return { id, name, root, install, writable, problems };
}

/** Why a menu item naming a skill the project lacks cannot run, and what to do about it. */
export function missingSkill(skill: string): string {
  return `The skill ${skill} is not installed in this project, so this command cannot run. Run BMAD's installer on the project again to restore it, or remove the item from the agent's menu.`;
}

/** `bmad-agent-pm` → `pm`: the short form of an agent skill's name. */
function shortId(id: string): string {
  return id.replace(/^bmad-(agent-)?/i, '');
}

/** An agent by its id, or by the short form of a skill agent's id when only one agent has it. */
function findInstalledAgent(agents: InstalledAgent[], agentId: string): InstalledAgent | undefined {
  const wanted = agentId.toLowerCase();
  const exact = agents.find((a) => a.id.toLowerCase() === wanted);
  if (exact) return exact;
  const short = agents.filter((a) => a.skill && shortId(a.id).toLowerCase() === wanted);
  return short.length === 1 ? short[0] : undefined;
}

export function createProjectCatalog(projectsRoot: string, options: ProjectCatalogOptions = {}): ProjectCatalog {
  const fresh = options.revalidateMs ?? 0;
  const projects = new Map<string, { at: number; promise: Promise<Project | null> }>();
  const defs = new Map<string, { stamp: string; def: Promise<AgentDefinition | null> }>();

  async function readOptional(file: string): Promise<string | null> {
    return fs.readFile(file, 'utf8').catch(() => null);
  }

  /** The files an agent skill's definition is built from: any change to one is a new definition. */
  function skillSources(project: Project, agent: InstalledAgent): string[] {
    const dir = path.dirname(agent.file);
    const install = project.install.root;
    return [agent.file, path.join(/*turbopackIgnore: true*/ dir, 'customize.toml'), path.join(/*turbopackIgnore: true*/ dir, 'bmad-skill-manifest.yaml'), path.join(/*turbopackIgnore: true*/ install, 'custom', `${agent.skill}.toml`), path.join(/*turbopackIgnore: true*/ install, 'custom', `${agent.skill}.user.toml`)];
  }

  async function skillDefinition(project: Project, agent: InstalledAgent): Promise<AgentDefinition | null> {
    const [skillMd, customize, metaText, team, user] = await Promise.all(skillSources(project, agent).map(readOptional));
    if (skillMd === null || !agent.skill) return null;
    const install = project.install;
    const relDir = posixRel(project.root, path.dirname(agent.file));
    // Labelled as reads of them show them: the install is {bundle-root}.
    const labels = customizationLayers(`{project-root}/${relDir}`, '{bundle-root}', agent.skill);
    const customization = customize === null ? undefined : mergeTomlLayers([customize, team, user].map((text, i) => ({ path: labels[i], text })));
    let meta: Record<string, unknown> | undefined;
    try {
      const m = metaText === null ? null : yaml.load(metaText, { schema: yaml.CORE_SCHEMA });
      if (m && typeof m === 'object' && !Array.isArray(m)) meta = m as Record<string, unknown>;
    } catch {
      // Reported by the skill discovery; the agent is still built from its SKILL.md.
    }
    const files = await fs.readdir(path.dirname(agent.file)).catch(() => [] as string[]);
    const roster: Record<string, string> = {};
    for (const k of ['displayName', 'title', 'icon', 'description'] as const) if (agent[k]) roster[k === 'displayName' ? 'name' : k] = agent[k] as string;
    return skillAgentDefinition({
      id: agent.id,
      skill: { name: agent.skill, relDir },
      skillMd,
      ...(customization ? { customization } : {}),
      ...(meta ? { meta } : {}),
      roster,
      installFolder: install.folder,
      module: agent.module ?? (install.modules.includes('bmm') ? 'bmm' : (install.modules.find((m) => m !== 'core') ?? 'core')),
      centralConfig: install.central !== null,
      skillNames: new Set(install.skills.map((sk) => sk.name)),
      files: new Set(files),
    });
  }

  /** What is wrong with the agents' menus: items naming a skill the project does not have. */
  async function menuProblems(project: Project): Promise<string[]> {
    const names = new Set(project.install.skills.map((sk) => sk.name));
    const out: string[] = [];
    for (const agent of project.install.agents) {
      const def = await definition(project, agent);
      if (!def) continue;
      if (agent.skill) {
        out.push(...def.problems.map((p) => `agent ${agent.id}: ${p}`));
        continue;
      }
      for (const c of def.commands) {
        const skill = /^skill:\s*(\S+)$/.exec(c.target.trim())?.[1];
        if (skill && !names.has(skill)) out.push(`agent ${agent.id}: menu item ${c.cmd} names the skill ${skill}, which is not installed`);
      }
    }
    return out;
  }

  async function load(id: string): Promise<Project | null> {
    const project = await readProject(path.join(/*turbopackIgnore: true*/ projectsRoot, id), id);
    if (project) {
      for (const line of await menuProblems(project)) project.problems.push({ file: project.install.folder, severity: 'error', reason: line });
    }
    return project;
  }

  function get(id: string): Promise<Project | null> {
    if (!isValidProjectId(id)) return Promise.resolve(null);
    const hit = projects.get(id);
    if (hit && fresh > 0 && performance.now() - hit.at < fresh) return hit.promise;
    const promise = load(id).catch(() => null);
    projects.set(id, { at: performance.now(), promise });
    // A folder that is no project yet may be one a moment later (an install under way).
    promise.then((p) => {
      if (!p && projects.get(id)?.promise === promise) projects.delete(id);
    });
    return promise;
  }

  async function list(): Promise<Project[]> {
    const entries = await fs.readdir(projectsRoot, { withFileTypes: true }).catch(() => []);
    const ids = entries.filter((e) => (e.isDirectory() || e.isSymbolicLink()) && isValidProjectId(e.name) && !e.name.startsWith('.')).map((e) => e.name).sort();
    for (const known of [...projects.keys()]) if (!ids.includes(known)) projects.delete(known);
    return (await Promise.all(ids.map(get))).filter((p): p is Project => p !== null);
  }

  async function definition(project: Project, agent: InstalledAgent): Promise<AgentDefinition | null> {
    const files = agent.skill ? skillSources(project, agent) : [agent.file];
    const stats = await Promise.all(files.map((f) => fs.stat(f).catch(() => null)));
    if (!stats[0]) return null;
    // A skill agent also depends on what the project knows of its skills (menu problems). Size and
    // ctime beside the mtime: another instance's edit within one tick of a coarse clock (NFS) still shows.
    const stamp = `${stats.map((st) => (st ? `${st.mtimeMs}:${st.ctimeMs}:${st.size}` : '-')).join('/')}${agent.skill ? `#${project.install.skills.length}` : ''}`;
    const key = `${project.root}\0${agent.file}`;
    const hit = defs.get(key);
    if (hit && hit.stamp === stamp) return hit.def;
    const def = agent.skill ? skillDefinition(project, agent).catch(() => null) : fs.readFile(agent.file, 'utf8').then(parseAgentFile, () => null);
    defs.set(key, { stamp, def });
    return def;
  }

  function merged(agent: InstalledAgent, def: AgentDefinition): AgentDefinition {
    // A skill agent's definition already weighed the roster against its own customization.
    if (agent.skill) return { ...def, id: agent.id };
    const out: AgentDefinition = { ...def, id: agent.id, name: agent.displayName ?? (def.name.trim() || agent.id), title: agent.title ?? def.title.trim() };
    const icon = agent.icon ?? def.icon;
    if (icon) out.icon = icon;
    return out;
  }

  function summary(project: Project, agent: InstalledAgent, def: AgentDefinition): AgentListing {
    const installed = new Set(project.install.skills.map((sk) => sk.name));
    const s: AgentListing = {
      id: agent.id,
      name: def.name,
      title: def.title,
      bundleName: project.name,
      projectId: project.id,
      // Marked before anyone picks it: a menu item whose skill is not installed cannot run.
      commands: commandSummaries(def).map((c) => {
        const skill = /^skill:\s*(\S+)$/.exec((c.target ?? '').trim())?.[1];
        return skill && !installed.has(skill) ? { ...c, problem: missingSkill(skill) } : c;
      }),
    };
    if (def.icon) s.icon = def.icon;
    const description = agent.capabilities ?? agent.description ?? (agent.skill ? def.attrs.capabilities : undefined);
    if (description) s.description = description;
    if (def.greeting) s.greeting = def.greeting;
    return s;
  }

  async function agents(project: Project): Promise<AgentListing[]> {
    const parsed = await Promise.all(project.install.agents.map((a) => definition(project, a)));
    return project.install.agents.flatMap((a, i) => (parsed[i] ? [summary(project, a, merged(a, parsed[i] as AgentDefinition))] : []));
  }

  function workspace(project: Project): Workspace {
    const install = project.install;
    const core = path.join(/*turbopackIgnore: true*/ install.root, 'core');
    return {
      kind: 'project',
      name: project.name,
      projectId: project.id,
      bundleRoot: install.root,
      coreRoot: core,
      projectRoot: project.root,
      outputRoot: () => install.outputRoot,
      sharedOutput: true,
      writable: project.writable,
      limits: {},
    };
  }

  async function getAgent(projectId: string, agentId: string): Promise<ResolvedAgent | null> {
    const project = await get(projectId);
    if (!project || typeof agentId !== 'string') return null;
    const agent = findInstalledAgent(project.install.agents, agentId);
    if (!agent) return null;
    const def = await definition(project, agent);
    if (!def) return null;
    const full = merged(agent, def);
    return {
      agent: full,
      bundle: { name: project.name, folder: project.id, root: project.install.root, limits: {} },
      summary: summary(project, agent, full),
      workspace: workspace(project),
    };
  }

  async function view(project: Project): Promise<ProjectOverview> {
    const list = await agents(project);
    return {
      id: project.id,
      name: project.name,
      bmad: { version: project.install.version ?? null, folder: project.install.folder, modules: project.install.modules },
      agentCount: list.length,
      outputFolder: `{project-root}/${posixRel(project.root, project.install.outputRoot)}`,
      writable: project.writable.map((w) => `{project-root}/${w}`),
      documentFolders: documentFoldersBeyondOutput(project.root, project.install).map((f) => `{project-root}/${f}`),
      problems: project.problems.map(problemLine),
    };
  }

  return { projectsRoot, list, get, agents, getAgent, view };
}

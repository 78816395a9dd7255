import { promises as fs } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import type { AgentSummary, ProjectView } from '../../types/api';
import { parseAgentFile, type AgentDefinition } from '../agents/parser';
import type { ResolvedAgent } from '../agents/catalog';
import type { Workspace } from '../agents/workspace';
import { problemLine, type Problem } from '../results';
import { readInstall, type BmadInstall, type InstalledAgent } from './layout';

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
  /** Project folders agents may write besides the output folder (relative, posix). */
  writable: string[];
  /** What is wrong with the install or the settings file (cheap checks; the doctor does the rest). */
  problems: Problem[];
}

export interface ProjectCatalog {
  readonly projectsRoot: string;
  list(): Promise<Project[]>;
  get(projectId: string): Promise<Project | null>;
  agents(project: Project): Promise<AgentSummary[]>;
  getAgent(projectId: string, agentId: string): Promise<ResolvedAgent | null>;
  /** The API view of a project (virtual paths only). */
  view(project: Project): Promise<ProjectView>;
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

/** The project in a folder (its install and settings), or null when the folder holds no BMAD install. */
export async function readProject(folder: string, id: string): Promise<Project | null> {
  // A symlink to a folder elsewhere is a project too; its real path is what the sandbox uses.
  const root = await fs.realpath(folder).catch(() => null);
  if (!root || !(await fs.stat(root).then((s) => s.isDirectory(), () => false))) return null;
  const install = await readInstall(root);
  if (!install) return null;
  const problems = [...install.problems];
  const writable = await readSettings(root, install, problems);
  const name = typeof install.config.project_name === 'string' && install.config.project_name.trim() ? install.config.project_name.trim() : id;
  return { id, name, root, install, writable, problems };
}

export function createProjectCatalog(projectsRoot: string, options: ProjectCatalogOptions = {}): ProjectCatalog {
  const fresh = options.revalidateMs ?? 0;
  const projects = new Map<string, { at: number; promise: Promise<Project | null> }>();
  const defs = new Map<string, { mtimeMs: number; def: Promise<AgentDefinition | null> }>();

  async function load(id: string): Promise<Project | null> {
    return readProject(path.join(/*turbopackIgnore: true*/ projectsRoot, id), id);
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

  async function definition(agent: InstalledAgent): Promise<AgentDefinition | null> {
    const st = await fs.stat(agent.file).catch(() => null);
    if (!st) return null;
    const hit = defs.get(agent.file);
    if (hit && hit.mtimeMs === st.mtimeMs) return hit.def;
    const def = fs.readFile(agent.file, 'utf8').then(parseAgentFile, () => null);
    defs.set(agent.file, { mtimeMs: st.mtimeMs, def });
    return def;
  }

  function merged(agent: InstalledAgent, def: AgentDefinition): AgentDefinition {
    const out: AgentDefinition = { ...def, id: agent.id, name: agent.displayName ?? (def.name.trim() || agent.id), title: agent.title ?? def.title.trim() };
    const icon = agent.icon ?? def.icon;
    if (icon) out.icon = icon;
    return out;
  }

  function summary(project: Project, agent: InstalledAgent, def: AgentDefinition): AgentSummary {
    const s: AgentSummary = {
      id: agent.id,
      name: def.name,
      title: def.title,
      bundleName: project.name,
      projectId: project.id,
      commands: def.commands.map(({ cmd, description, kind, target }) => ({ cmd, description, kind, target })),
    };
    if (def.icon) s.icon = def.icon;
    if (agent.capabilities) s.description = agent.capabilities;
    if (def.greeting) s.greeting = def.greeting;
    return s;
  }

  async function agents(project: Project): Promise<AgentSummary[]> {
    const parsed = await Promise.all(project.install.agents.map(definition));
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
    const agent = project.install.agents.find((a) => a.id.toLowerCase() === agentId.toLowerCase());
    if (!agent) return null;
    const def = await definition(agent);
    if (!def) return null;
    const full = merged(agent, def);
    return {
      agent: full,
      bundle: { name: project.name, folder: project.id, root: project.install.root, limits: {} },
      summary: summary(project, agent, full),
      workspace: workspace(project),
    };
  }

  async function view(project: Project): Promise<ProjectView> {
    const list = await agents(project);
    return {
      id: project.id,
      name: project.name,
      bmad: { version: project.install.version ?? null, folder: project.install.folder, modules: project.install.modules },
      agentCount: list.length,
      outputFolder: `{project-root}/${posixRel(project.root, project.install.outputRoot)}`,
      writable: project.writable.map((w) => `{project-root}/${w}`),
      problems: project.problems.map(problemLine),
    };
  }

  return { projectsRoot, list, get, agents, getAgent, view };
}

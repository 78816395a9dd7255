import { promises as fs } from 'node:fs';
import { existsSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { AppError } from '../../core/errors';
import { isValidProjectId, type Project, type ProjectCatalog } from './catalog';
import { installerCli, runBmadInstaller } from './installer';
import { readInstall } from './layout';

export interface NewProject {
  name: string;
  /** One of BMAD_RELEASES; DEFAULT_BMAD_VERSION when absent. */
  bmadVersion?: string;
  /** The installer's tool ids (`claude-code`, `cursor`...); `["claude-code"]` when absent. */
  tools?: string[];
  modules?: string[];
  userName?: string;
  communicationLanguage?: string;
  documentLanguage?: string;
}

/**
 * The BMAD releases this app installs projects with, each pinned in package.json (an npm alias
 * per release) and installed offline from the package: today's method first, and 6.0.4 for teams
 * still on the older one.
 */
export const BMAD_RELEASES: Readonly<Record<string, { package: string }>> = Object.freeze({
  '6.12.0': { package: 'bmad-method-612' },
  '6.0.4': { package: 'bmad-method' },
});
export const DEFAULT_BMAD_VERSION = '6.12.0';
/** So the project opens in Claude Code the way its users expect (`.claude/skills/`). */
export const DEFAULT_TOOLS = ['claude-code'];

/**
 * A pinned release's package folder, found in the app's node_modules by walking up from the
 * working folder. A plain file lookup: the server build rewrites `require.resolve` and
 * `createRequire` into bundled module ids.
 */
function pinnedPackage(version: string = DEFAULT_BMAD_VERSION): string {
  const release = BMAD_RELEASES[version];
  if (!release) throw new AppError('E_VALIDATION', `Invalid bmadVersion: ${String(version).slice(0, 40)} is not one this app installs (${Object.keys(BMAD_RELEASES).join(', ')}).`, { field: 'bmadVersion' });
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    const candidate = path.join(/*turbopackIgnore: true*/ dir, 'node_modules', release.package);
    if (existsSync(path.join(/*turbopackIgnore: true*/ candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) throw new AppError('E_INSTALL_FAILED', `BMAD ${version}'s installer (the ${release.package} package) is not installed next to this app; run npm install.`);
  }
}

export interface InstallerTool {
  id: string;
  name: string;
  /** The installer lists it among its recommended tools. */
  preferred: boolean;
}

/** The tools a release's installer knows (its `platform-codes.yaml`), in its order; suspended ones left out. */
export async function installerTools(packageDir: string): Promise<InstallerTool[]> {
  const candidates = ['tools/installer/ide/platform-codes.yaml', 'tools/cli/installers/lib/ide/platform-codes.yaml', 'tools/platform-codes.yaml'];
  for (const rel of candidates) {
    const text = await fs.readFile(path.join(/*turbopackIgnore: true*/ packageDir, rel), 'utf8').catch(() => null);
    if (text === null) continue;
    let doc: unknown;
    try {
      doc = yaml.load(text, { schema: yaml.CORE_SCHEMA });
    } catch {
      continue;
    }
    const platforms = (doc as { platforms?: unknown } | null)?.platforms;
    if (!platforms || typeof platforms !== 'object') continue;
    return Object.entries(platforms as Record<string, Record<string, unknown> | null>)
      .filter(([, p]) => p && typeof p === 'object' && !p.suspended)
      .map(([id, p]) => ({ id, name: typeof p?.name === 'string' ? p.name : id, preferred: p?.preferred === true }));
  }
  return [];
}

export interface InstallableRelease {
  version: string;
  default: boolean;
  tools: InstallerTool[];
  modules: string[];
}

/** What a new project can be created with: each pinned release, its installer's tools and its modules. */
export async function installableReleases(): Promise<InstallableRelease[]> {
  return Promise.all(
    Object.keys(BMAD_RELEASES).map(async (version) => {
      const dir = pinnedPackage(version);
      return { version, default: version === DEFAULT_BMAD_VERSION, tools: await installerTools(dir), modules: await bundledModules(dir) };
    }),
  );
}

/** Modules a pinned package carries (`src/bmm`, 6.12's `src/bmm-skills`); others would have to be downloaded, which never happens here. */
export async function bundledModules(packageDir = pinnedPackage()): Promise<string[]> {
  const entries = await fs.readdir(path.join(/*turbopackIgnore: true*/ packageDir, 'src'), { withFileTypes: true }).catch(() => []);
  const names = entries.filter((e) => e.isDirectory()).map((e) => e.name.replace(/-skills$/, ''));
  return [...new Set(names)].filter((n) => !['core', 'utility', 'scripts'].includes(n)).sort();
}

/** A new project checked and its folder claimed: what is left is to run the installer. */
export interface ClaimedProject {
  name: string;
  version: string;
  packageDir: string;
  tools: string[];
  modules: string[];
  /** Absolute, server side only. */
  target: string;
  input: NewProject;
  /** The folder was there before (a repository cloned without an install): what it held then, by top-level name. */
  existing?: string[];
}

/**
 * Checks a new project (name, release, tools, modules: 400 naming the field) and claims its
 * folder with an exclusive mkdir (409 when the name is taken), so two requests for one name
 * cannot both install. Everything a request can get wrong is answered here, before any install.
 */
export async function claimProject(projects: ProjectCatalog, input: NewProject, opts: { existing?: boolean } = {}): Promise<ClaimedProject> {
  if (!isValidProjectId(input.name)) {
    throw new AppError('E_VALIDATION', 'Invalid name: use letters, digits, ".", "_" or "-" (at most 64, starting with a letter or digit).', { field: 'name' });
  }
  const version = input.bmadVersion ?? DEFAULT_BMAD_VERSION;
  const packageDir = pinnedPackage(version);
  const known = await installerTools(packageDir);
  const tools = input.tools ? [...new Set(input.tools)] : DEFAULT_TOOLS;
  const unknownTools = tools.filter((t) => !known.some((k) => k.id === t));
  if (unknownTools.length) {
    throw new AppError('E_VALIDATION', `Invalid tools: ${unknownTools.map((t) => t.slice(0, 40)).join(', ')} ${unknownTools.length === 1 ? 'is' : 'are'} not a tool BMAD ${version}'s installer knows (GET /api/installer lists them).`, { field: 'tools' });
  }
  if (!tools.length && version !== '6.0.4') {
    throw new AppError('E_VALIDATION', `Invalid tools: BMAD ${version} installs its skills into at least one tool's folder; name one (e.g. claude-code).`, { field: 'tools' });
  }
  const available = await bundledModules(packageDir);
  const modules = input.modules?.length ? [...new Set(input.modules)] : available.includes('bmm') ? ['bmm'] : available.slice(0, 1);
  const unknown = modules.filter((m) => !available.includes(m));
  if (unknown.length) {
    throw new AppError('E_VALIDATION', `Invalid modules: ${unknown.map((m) => m.slice(0, 40)).join(', ')} cannot be installed here (available: ${available.join(', ')}).`, { field: 'modules' });
  }
  await fs.mkdir(projects.projectsRoot, { recursive: true });
  const target = path.join(/*turbopackIgnore: true*/ projects.projectsRoot, input.name);
  if (opts.existing) {
    // A folder already there (a repository cloned from a URL) gets an install only when it has none.
    const st = await fs.lstat(target).catch(() => null);
    if (!st?.isDirectory()) throw new AppError('E_PROJECT_NOT_FOUND', `No folder "${input.name}" to install into.`);
    if (await readInstall(target)) throw new AppError('E_PROJECT_EXISTS', `"${input.name}" already holds a BMAD install.`);
    return { name: input.name, version, packageDir, tools, modules, target, input, existing: await fs.readdir(target) };
  }
  try {
    await fs.mkdir(target);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new AppError('E_PROJECT_EXISTS', `A project named "${input.name}" already exists.`);
    throw e;
  }
  return { name: input.name, version, packageDir, tools, modules, target, input };
}

/**
 * Runs BMAD's own installer into a claimed folder, reporting its steps as they happen. A failed
 * install leaves nothing behind.
 */
export async function installClaimed(projects: ProjectCatalog, claim: ClaimedProject, onStep?: (line: string) => void): Promise<Project> {
  const { input, target } = claim;
  onStep?.(`Installing BMAD ${claim.version} (${claim.modules.join(', ')}${claim.tools.length ? `; ${claim.tools.join(', ')}` : ''}) into ${claim.name}`);
  const outcome = await runBmadInstaller(installerCli(claim.packageDir), {
    directory: target,
    modules: claim.modules,
    tools: claim.tools.length ? claim.tools.join(',') : 'none',
    ...(onStep ? { onStep } : {}),
    userName: input.userName,
    communicationLanguage: input.communicationLanguage,
    documentLanguage: input.documentLanguage,
  }).catch((e: unknown) => ({ ok: false as const, message: e instanceof Error ? e.name : 'unknown error', durationMs: 0 }));
  const project = outcome.ok ? await projects.get(claim.name) : null;
  if (!project) {
    if (claim.existing) {
      // Only what the installer added goes: the folder's own files stay as they were.
      const before = new Set(claim.existing);
      for (const name of await fs.readdir(target).catch(() => [] as string[])) if (!before.has(name)) await fs.rm(path.join(target, name), { recursive: true, force: true });
    } else await fs.rm(target, { recursive: true, force: true });
    const reason = outcome.ok ? 'the install has no BMAD folder' : outcome.message.split(target).join(claim.name).split(projects.projectsRoot).join('…');
    throw new AppError('E_INSTALL_FAILED', `BMAD's installer could not set up "${claim.name}": ${reason}.`);
  }
  return project;
}

/** Creates `PROJECTS_ROOT/<name>` with BMAD's own installer (claimProject, then installClaimed). */
export async function createProject(projects: ProjectCatalog, input: NewProject, onStep?: (line: string) => void): Promise<Project> {
  return installClaimed(projects, await claimProject(projects, input), onStep);
}

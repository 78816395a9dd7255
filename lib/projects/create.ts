import { promises as fs } from 'node:fs';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { AppError } from '../errors';
import { isValidProjectId, type Project, type ProjectCatalog } from './catalog';
import { installerCli, runBmadInstaller } from './installer';

export interface NewProject {
  name: string;
  modules?: string[];
  userName?: string;
  communicationLanguage?: string;
  documentLanguage?: string;
}

/**
 * The `bmad-method` package this app installs projects with (pinned in package.json), found in
 * the app's node_modules by walking up from the working folder. A plain file lookup: the server
 * build rewrites `require.resolve` and `createRequire` into bundled module ids.
 */
function pinnedPackage(): string {
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    const candidate = path.join(/*turbopackIgnore: true*/ dir, 'node_modules', 'bmad-method');
    if (existsSync(path.join(/*turbopackIgnore: true*/ candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) throw new AppError('E_INSTALL_FAILED', "BMAD's installer (the bmad-method package) is not installed next to this app; run npm install.");
  }
}

/** Modules the pinned package carries; others would have to be downloaded, which never happens here. */
export async function bundledModules(packageDir = pinnedPackage()): Promise<string[]> {
  const entries = await fs.readdir(path.join(/*turbopackIgnore: true*/ packageDir, 'src'), { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory() && !['core', 'utility'].includes(e.name)).map((e) => e.name).sort();
}

/**
 * Creates `PROJECTS_ROOT/<name>` with BMAD's own installer. The folder is claimed first (an
 * exclusive mkdir), so two requests for one name cannot both install; a failed install leaves
 * nothing behind.
 */
export async function createProject(projects: ProjectCatalog, input: NewProject): Promise<Project> {
  if (!isValidProjectId(input.name)) {
    throw new AppError('E_VALIDATION', 'Invalid name: use letters, digits, ".", "_" or "-" (at most 64, starting with a letter or digit).', { field: 'name' });
  }
  const available = await bundledModules();
  const modules = input.modules?.length ? [...new Set(input.modules)] : available.includes('bmm') ? ['bmm'] : available.slice(0, 1);
  const unknown = modules.filter((m) => !available.includes(m));
  if (unknown.length) {
    throw new AppError('E_VALIDATION', `Invalid modules: ${unknown.join(', ')} cannot be installed here (available: ${available.join(', ')}).`, { field: 'modules' });
  }
  await fs.mkdir(projects.projectsRoot, { recursive: true });
  const target = path.join(/*turbopackIgnore: true*/ projects.projectsRoot, input.name);
  try {
    await fs.mkdir(target);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new AppError('E_PROJECT_EXISTS', `A project named "${input.name}" already exists.`);
    throw e;
  }
  const outcome = await runBmadInstaller(installerCli(pinnedPackage()), {
    directory: target,
    modules,
    userName: input.userName,
    communicationLanguage: input.communicationLanguage,
    documentLanguage: input.documentLanguage,
  });
  const project = outcome.ok ? await projects.get(input.name) : null;
  if (!project) {
    await fs.rm(target, { recursive: true, force: true });
    throw new AppError('E_INSTALL_FAILED', `BMAD's installer could not set up "${input.name}"${outcome.ok ? ': the install has no BMAD folder' : `: ${outcome.message}`}.`);
  }
  return project;
}

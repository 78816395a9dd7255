/**
 * The doctor: everything an agent needs before it can run, checked without running it. A BMAD
 * project, a folder of bundles or one bundle; one problem per thing to fix, naming its file
 * relative to the folder.
 */

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createProjectCatalog, isValidProjectId, readProject, type Project } from '../projects';
import type { Problem, Severity } from '../../core/results';
import type { AgentListing } from '../agents/catalog';
import { diagnoseBundles, type BundleRoots } from './bundles';
import type { ProjectCheck } from './cache';
import { diagnoseProject } from './project';

export { diagnoseProject } from './project';
export { diagnoseBundles, type BundleRoots } from './bundles';
export { createDoctorCache, type DoctorCache, type ProjectCheck } from './cache';

export type FolderKind = 'project' | 'bundles' | 'bundle' | 'unknown';

export interface Diagnosis {
  kind: FolderKind;
  problems: Problem[];
}

const MANIFEST = 'bundle.yaml';

async function isFile(p: string): Promise<boolean> {
  return fs.stat(p).then((s) => s.isFile(), () => false);
}

/** What kind of folder it is: a project (`_bmad/` or `bmad/`), one bundle, a folder of bundles, or none. */
export async function folderKind(folder: string): Promise<FolderKind> {
  if (await isFile(path.join(/*turbopackIgnore: true*/ folder, MANIFEST))) return 'bundle';
  if (await readProject(folder, path.basename(folder))) return 'project';
  const entries = await fs.readdir(folder, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (!e.name.startsWith('.') && (e.isDirectory() || e.isSymbolicLink()) && (await isFile(path.join(/*turbopackIgnore: true*/ folder, e.name, MANIFEST)))) return 'bundles';
  }
  return 'unknown';
}

/**
 * Diagnoses a folder. `roots` are the `{core-root}` and `{project-root}` of bundle agents (the
 * server's CORE_ROOT and working folder); a project brings its own. `checks` run on a project
 * after its own diagnosis, as the server's doctor cache runs them (the MCP tools its skills name),
 * so the lines come in the same order. Throws when the folder does not exist.
 */
export async function diagnose(folder: string, roots: Partial<BundleRoots> = {}, checks: readonly ProjectCheck[] = []): Promise<Diagnosis> {
  const real = await fs.realpath(folder);
  if (!(await fs.stat(real)).isDirectory()) throw new Error(`${folder} is not a folder`);
  const kind = await folderKind(real);
  const bundleRoots: BundleRoots = { coreRoot: path.resolve(/*turbopackIgnore: true*/ roots.coreRoot ?? 'bmad/core'), projectRoot: path.resolve(/*turbopackIgnore: true*/ roots.projectRoot ?? '.') };
  switch (kind) {
    case 'project': {
      const project = await projectAsServed(real);
      if (!project) return { kind, problems: [] };
      const lists = await Promise.all([diagnoseProject(project), ...checks.map((check) => check(project))]);
      return { kind, problems: lists.flat() };
    }
    case 'bundle':
      return { kind, problems: await diagnoseBundles(path.dirname(real), bundleRoots, path.basename(real)) };
    case 'bundles':
      return { kind, problems: await diagnoseBundles(real, bundleRoots) };
    default:
      return {
        kind,
        problems: [{ file: '.', severity: 'error', reason: 'neither a BMAD project (no _bmad/ or bmad/ install), a bundle (no bundle.yaml) nor a folder of bundles' }],
      };
  }
}

/**
 * The project as the server reads it (with the catalog's checks of the agents' menus), so the CLI
 * and GET /api/projects/:id diagnose the same thing and print the same lines.
 */
async function projectAsServed(folder: string): Promise<Project | null> {
  const id = path.basename(folder);
  if (isValidProjectId(id)) {
    const served = await createProjectCatalog(path.dirname(folder)).get(id);
    if (served) return served;
  }
  return readProject(folder, id);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `1 error, 1 warning`: how the CLI and the UI both sum a diagnosis up (notes are nothing to fix). */
export function countLine(problems: Problem[]): string {
  const counts = countBySeverity(problems);
  return `${plural(counts.error, 'error')}, ${plural(counts.warning, 'warning')}`;
}

const commandKey = (cmd: string) => cmd.replace(/^\*/, '').trim().toLowerCase();

/**
 * The agents with each menu item the diagnosis found broken marked by its `problem` (the first
 * error or warning reached through it), so a menu shows it before anyone clicks it. A mark the
 * catalog already set (a skill not installed) stays.
 */
export function markCommands(agents: AgentListing[], problems: Problem[]): AgentListing[] {
  const byCommand = new Map<string, Problem>();
  for (const p of problems) {
    if (p.severity === 'note' || !p.agent || !p.command) continue;
    const key = `${p.agent}\0${commandKey(p.command)}`;
    const had = byCommand.get(key);
    if (!had || (had.severity === 'warning' && p.severity === 'error')) byCommand.set(key, p);
  }
  if (!byCommand.size) return agents;
  return agents.map((a) => ({
    ...a,
    commands: a.commands.map((c) => {
      if (c.problem) return c;
      const p = byCommand.get(`${a.id}\0${commandKey(c.cmd)}`);
      if (!p) return c;
      const severity = p.severity === 'error' ? 'error' : 'warning';
      return { ...c, problem: `${severity === 'error' ? 'Broken' : 'May not work'}: ${p.reason} (${p.file}). Fix the file, or run BMAD's installer on the project again.`, problemSeverity: severity };
    }),
  }));
}

export function countBySeverity(problems: Problem[]): Record<Severity, number> {
  const counts: Record<Severity, number> = { error: 0, warning: 0, note: 0 };
  for (const p of problems) counts[p.severity]++;
  return counts;
}

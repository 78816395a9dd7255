/**
 * The doctor: everything an agent needs before it can run, checked without running it. A BMAD
 * project, a folder of bundles or one bundle; one problem per thing to fix, naming its file
 * relative to the folder.
 */

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { readProject } from '../projects';
import type { Problem, Severity } from '../results';
import { diagnoseBundles, type BundleRoots } from './bundles';
import { diagnoseProject } from './project';

export { diagnoseProject } from './project';
export { diagnoseBundles, type BundleRoots } from './bundles';
export { createDoctorCache, type DoctorCache } from './cache';

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
 * server's CORE_ROOT and working folder); a project brings its own. Throws when the folder does
 * not exist.
 */
export async function diagnose(folder: string, roots: Partial<BundleRoots> = {}): Promise<Diagnosis> {
  const real = await fs.realpath(folder);
  if (!(await fs.stat(real)).isDirectory()) throw new Error(`${folder} is not a folder`);
  const kind = await folderKind(real);
  const bundleRoots: BundleRoots = { coreRoot: path.resolve(/*turbopackIgnore: true*/ roots.coreRoot ?? 'bmad/core'), projectRoot: path.resolve(/*turbopackIgnore: true*/ roots.projectRoot ?? '.') };
  switch (kind) {
    case 'project': {
      const project = await readProject(real, path.basename(real));
      return { kind, problems: project ? await diagnoseProject(project) : [] };
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

export function countBySeverity(problems: Problem[]): Record<Severity, number> {
  const counts: Record<Severity, number> = { error: 0, warning: 0, note: 0 };
  for (const p of problems) counts[p.severity]++;
  return counts;
}

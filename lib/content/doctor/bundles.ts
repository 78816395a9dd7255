import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCatalog } from '../agents/catalog';
import { parseAgentFile } from '../agents/parser';
import type { Problem, Severity } from '../../core/results';
import { checkAgent, tellReached, type Reached } from './agents';
import { placeOf } from './place';
import { Report } from './report';
import { WorkflowChecker } from './workflows';

export interface BundleRoots {
  /** `{core-root}` of bundle agents. */
  coreRoot: string;
  /** `{project-root}` of bundle agents (the server's working folder). */
  projectRoot: string;
}

// What leaves a bundle or one of its agents unusable, in the words of the bundle scanner and catalog.
const UNUSABLE = /skipped|not found|could not be read|invalid YAML|is not a file|links outside|must stay inside|nobody to talk to|no <agent> element|which does not exist/;

/** A catalog problem line (`<file>: <reason>` or `<file> <reason>`, relative to the bundles root). */
function splitLine(line: string): { file: string; reason: string } {
  const m = /^(\S+?):\s+(.*)$/s.exec(line) ?? /^(\S+)\s+(.*)$/s.exec(line);
  return m ? { file: m[1], reason: m[2] } : { file: '.', reason: line };
}

/**
 * The bundles of a bundles root (or only the one in `only`): what GET /api/bundles reports, then
 * each agent's start, menu targets and workflows as a bundle conversation would run them. Lines
 * name files relative to the folder diagnosed: the root, or the one bundle.
 */
export async function diagnoseBundles(bundlesRoot: string, roots: BundleRoots, only?: string): Promise<Problem[]> {
  const catalog = createCatalog(bundlesRoot, { coreRoot: roots.coreRoot, projectRoot: roots.projectRoot });
  const views = (await catalog.listBundles()).filter((b) => only === undefined || b.folder === only);
  const folder = only === undefined ? bundlesRoot : path.join(/*turbopackIgnore: true*/ bundlesRoot, only);
  const report = new Report();
  const checker = new WorkflowChecker();
  const reached: Reached[] = [];
  // Never created: the doctor only reads, and a bundle's outputs are not its business.
  const outputRoot = path.join(/*turbopackIgnore: true*/ os.tmpdir(), 'bmad-doctor-no-output', String(process.pid));
  for (const view of views) {
    const bundleRoot = path.join(/*turbopackIgnore: true*/ bundlesRoot, view.folder);
    const place = placeOf(folder, { bundleRoot, coreRoot: roots.coreRoot, projectRoot: roots.projectRoot, outputRoot });
    for (const agent of view.agents) {
      const file = path.join(/*turbopackIgnore: true*/ bundleRoot, agent.file);
      const text = await fs.readFile(file, 'utf8').catch(() => null);
      // The catalog says so already.
      if (text === null) continue;
      reached.push(...(await checkAgent({ id: agent.id, file, def: parseAgentFile(text) }, place, checker, report)));
    }
  }
  tellReached(reached, checker, report);
  // After the doctor's own lines: the catalog's missing targets are the same check, told once.
  for (const view of views) {
    for (const line of view.problems) {
      const { file, reason } = splitLine(line);
      const shown = only !== undefined && file.startsWith(`${only}/`) ? file.slice(only.length + 1) : file;
      const severity: Severity = UNUSABLE.test(reason) ? 'error' : 'warning';
      report.add({ file: shown, severity, reason });
    }
  }
  return report.problems();
}

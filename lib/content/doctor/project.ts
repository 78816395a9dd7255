import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import yaml from 'js-yaml';
import { parseAgentFile } from '../agents/parser';
import type { Project } from '../projects';
import type { Problem } from '../../core/results';
import { checkAgent, tellReached, type Reached } from './agents';
import { placeOf, type Place } from './place';
import { Report } from './report';
import { WorkflowChecker } from './workflows';

// The manifests whose rows name files of the install; the agent manifest is read with the install.
const FILE_MANIFESTS = ['workflow-manifest.csv', 'task-manifest.csv', 'tool-manifest.csv'];

async function configFolder(installRoot: string): Promise<string | null> {
  for (const name of ['_config', '_cfg']) {
    const dir = path.join(/*turbopackIgnore: true*/ installRoot, name);
    if (await fs.stat(dir).then((s) => s.isDirectory(), () => false)) return dir;
  }
  return null;
}

/** The install's other manifests: each CSV must parse, and the files the file lists name must exist. */
async function checkManifests(project: Project, place: Place, report: Report): Promise<void> {
  const dir = await configFolder(project.install.root);
  if (!dir) return;
  const manifest = await fs.readFile(path.join(/*turbopackIgnore: true*/ dir, 'manifest.yaml'), 'utf8').catch(() => null);
  if (manifest !== null) {
    try {
      yaml.load(manifest, { schema: yaml.CORE_SCHEMA });
    } catch (e) {
      const reason = e instanceof yaml.YAMLException ? `${e.reason} (line ${e.mark.line + 1})` : 'unreadable YAML';
      report.add({ file: place.relative(path.join(/*turbopackIgnore: true*/ dir, 'manifest.yaml')), severity: 'warning', reason: `not valid YAML: ${reason}; the install's version and modules are guessed from its folders` });
    }
  }
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.csv') || entry.name === 'agent-manifest.csv') continue;
    const file = place.relative(path.join(/*turbopackIgnore: true*/ dir, entry.name));
    const text = await fs.readFile(path.join(/*turbopackIgnore: true*/ dir, entry.name), 'utf8').catch(() => null);
    if (text === null) continue;
    let rows: Array<Record<string, string>>;
    try {
      rows = parseCsv(text, { columns: true, skip_empty_lines: true, relax_column_count: true, bom: true }) as Array<Record<string, string>>;
    } catch (e) {
      report.add({ file, severity: 'error', reason: `not valid CSV (${(e as Error).message.split('\n')[0]})` });
      continue;
    }
    if (!FILE_MANIFESTS.includes(entry.name)) continue;
    const listed = rows.filter((r) => typeof r.path === 'string' && r.path.trim() && !/\{(?!project[-_]root\})/.test(r.path));
    const present = await Promise.all(
      listed.map((r) => fs.stat(path.resolve(/*turbopackIgnore: true*/ project.root, r.path.trim().replace(/^\{project[-_]root\}\/?/, ''))).then(() => true, () => false)),
    );
    listed.forEach((row, i) => {
      if (!present[i]) report.add({ file, severity: 'warning', reason: `${row.name || 'a row'}: ${row.path.trim()} not found` });
    });
  }
}

/**
 * Everything the doctor checks in a BMAD project: the install (manifests, module configs, the
 * settings file), then each agent the install lists, as a conversation in the project would run it.
 */
export async function diagnoseProject(project: Project): Promise<Problem[]> {
  const install = project.install;
  const place = placeOf(project.root, {
    bundleRoot: install.root,
    coreRoot: path.join(/*turbopackIgnore: true*/ install.root, 'core'),
    projectRoot: project.root,
    outputRoot: install.outputRoot,
    project: { writable: project.writable },
  });
  const report = new Report();
  for (const problem of project.problems) report.add(problem);
  await checkManifests(project, place, report);

  const checker = new WorkflowChecker();
  // Agents are checked side by side (their workflows are loaded once, whoever asks first); what
  // they reach is told in the install's agent order, so the first menu item a line names is stable.
  const reached = await Promise.all(
    install.agents.map(async (agent): Promise<Reached[]> => {
      // An agent skill is no compiled agent file: the catalog reads and checks it (the project's problems).
      if (agent.skill) return [];
      const text = await fs.readFile(agent.file, 'utf8').catch(() => null);
      if (text === null) {
        report.add({ file: agent.relFile, severity: 'error', reason: 'could not be read', agent: agent.id });
        return [];
      }
      return checkAgent({ id: agent.id, file: agent.file, def: parseAgentFile(text) }, place, checker, report);
    }),
  );
  tellReached(reached.flat(), checker, report);
  return report.problems();
}

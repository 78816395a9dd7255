import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { parse as parseCsv } from 'csv-parse/sync';
import { DEFAULT_LIMITS } from '../lib/core/config';
import { parseAgentFile } from '../lib/content/agents';
import type { ToolContext } from '../lib/engine/tools/types';

/** The folder a BMAD install keeps its method in: `_bmad` from 6.0 on, `bmad` in the alphas. */
export async function methodFolder(project: string): Promise<string> {
  for (const name of ['_bmad', 'bmad']) {
    if (await fs.stat(path.join(project, name, 'core')).then((s) => s.isDirectory(), () => false)) return path.join(project, name);
  }
  throw new Error(`${project} has no BMAD install`);
}

async function readYaml(file: string): Promise<Record<string, unknown>> {
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  const data = yaml.load(text, { schema: yaml.CORE_SCHEMA });
  return data && typeof data === 'object' ? (data as Record<string, unknown>) : {};
}

/**
 * A conversation in a BMAD project as the app sets it up: the method folder read-only, the
 * config's output folder as `{output_folder}`, the rest of the project readable. Variables are
 * what an agent's activation loads from its module config.
 */
export async function projectContext(project: string, options: { module?: string; variables?: Record<string, string> } = {}): Promise<ToolContext> {
  const bundleRoot = await methodFolder(project);
  const config = await readYaml(path.join(bundleRoot, options.module ?? 'bmm', 'config.yaml'));
  const written = typeof config.output_folder === 'string' ? config.output_folder : '_bmad-output';
  const outputRoot = path.join(project, written.replace(/^\{project-root\}\/?/, ''));
  await fs.mkdir(outputRoot, { recursive: true });
  const variables: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') variables[k] = String(v);
  return {
    conversationId: 'conv-project',
    agentId: 'pm',
    bundleRoot,
    coreRoot: path.join(bundleRoot, 'core'),
    projectRoot: project,
    outputRoot,
    project: { writable: [] },
    variables: options.variables ?? variables,
    limits: { ...DEFAULT_LIMITS },
    auditDir: path.join(os.tmpdir(), 'bmad-project-audit'),
  };
}

export interface MenuTarget {
  agent: string;
  cmd: string;
  /** The attribute that named the target: workflow, exec, validate-workflow. */
  attribute: string;
  target: string;
  /** The same item's `data=`, if any. */
  data?: string;
}

/** Every `workflow=`, `exec=` and `validate-workflow=` target of every agent the install's manifest lists. */
export async function menuTargets(project: string): Promise<MenuTarget[]> {
  const bundleRoot = await methodFolder(project);
  let manifest = '';
  for (const folder of ['_config', '_cfg']) {
    manifest = await fs.readFile(path.join(bundleRoot, folder, 'agent-manifest.csv'), 'utf8').catch(() => '');
    if (manifest) break;
  }
  const rows = parseCsv(manifest, { columns: true, skip_empty_lines: true }) as Array<Record<string, string>>;
  const out: MenuTarget[] = [];
  for (const row of rows) {
    const rel = row.path.replace(/^\{project-root\}\//, '');
    const agent = parseAgentFile(await fs.readFile(path.join(project, rel), 'utf8'));
    for (const c of agent.commands) {
      for (const attribute of ['workflow', 'exec', 'validate-workflow']) {
        const target = c.attrs[attribute];
        if (!target || target.trim().toLowerCase() === 'todo') continue;
        out.push({ agent: row.name, cmd: c.cmd, attribute, target, ...(c.attrs.data ? { data: c.attrs.data } : {}) });
      }
    }
  }
  return out;
}

import { parseConfig } from '../bmad-config';
import { expandVariables, MOUNT_TOKENS, type PathContext } from '../../core/paths';
import { fail, isFailure, type ToolFailure } from '../../core/results';
import { loadNamedConfig } from './config';
import { dirnameVirtual, readText, withContext, type LoadedFile } from './files';
import type { WorkflowResult } from './types';
import { Unresolved } from './unresolved';
import { baseScope, resolveMap, type VariableSources } from './variables';

const ENGINE_CANDIDATES = ['{core-root}/tasks/workflow.md', '{core-root}/tasks/workflow.xml'];

export interface Shared {
  agent: Record<string, unknown>;
  date: string;
}

/** The config map as the model sees it: values expanded, `output_folder` the conversation's. */
export function resolvedConfig(sources: VariableSources): Record<string, unknown> {
  return resolveMap(sources.config, sources, new Unresolved(), { baseDir: sources.installedPath, checkPaths: false }).values;
}

async function optionalFile(value: unknown, ctx: PathContext, what: string): Promise<LoadedFile | undefined | ToolFailure> {
  if (typeof value !== 'string' || value.trim() === '' || value === 'false') return undefined;
  const loaded = await readText(value, ctx);
  if (isFailure(loaded)) return withContext(loaded, what);
  return { path: loaded.path, content: loaded.content };
}

/**
 * A workflow.yaml with its config, instructions, template and the core engine, every variable
 * expanded to virtual paths or values. `{output_folder}` always means the conversation's output
 * folder, whatever the workflow or its config says.
 */
export async function loadYamlWorkflow(file: LoadedFile, ctx: PathContext, shared: Shared): Promise<WorkflowResult | ToolFailure> {
  const raw = parseConfig(file.content, file.path);
  if (isFailure(raw)) return raw;

  const installedPath = dirnameVirtual(file.path);
  const unresolved = new Unresolved();
  const warnings: string[] = [];
  const sources: VariableSources = { ctx, agent: shared.agent, config: {}, date: shared.date, installedPath };

  // The config file first: workflow values refer to it through {config_source}:key.
  if (typeof raw.config_source === 'string' && raw.config_source.trim() !== '') {
    const where = expandVariables(raw.config_source, baseScope(sources, shared.agent));
    const loaded = await loadNamedConfig(where.text, ctx);
    if (isFailure(loaded)) return loaded;
    warnings.push(...loaded.warnings);
    sources.config = loaded.data;
    sources.configSource = loaded.path;
  }

  const { values: workflow } = resolveMap(raw, sources, unresolved, { baseDir: installedPath });
  workflow.output_folder = MOUNT_TOKENS.output_folder;
  workflow.installed_path = installedPath;
  if (sources.configSource) workflow.config_source = sources.configSource;
  if (raw.date === undefined || raw.date === 'system-generated') workflow.date = shared.date;

  // Instructions: named in the workflow, else the usual file next to it.
  let instructions: LoadedFile | undefined;
  if (typeof workflow.instructions === 'string' && workflow.instructions.trim() !== '') {
    const loaded = await optionalFile(workflow.instructions, ctx, 'instructions');
    if (isFailure(loaded)) return loaded;
    instructions = loaded;
  } else {
    for (const name of ['instructions.md', 'instructions.xml']) {
      const loaded = await readText(`${installedPath}/${name}`, ctx);
      if (!isFailure(loaded)) {
        instructions = { path: loaded.path, content: loaded.content };
        break;
      }
      if (loaded.error.code !== 'ENOENT') return withContext(loaded, 'instructions');
    }
  }
  if (!instructions) {
    return fail('ENOENT', `instructions: ${file.path} names no instructions file and ${installedPath}/instructions.md does not exist`, {
      path: `${installedPath}/instructions.md`,
    });
  }

  const template = await optionalFile(workflow.template, ctx, 'template');
  if (isFailure(template)) return template;

  let engine: LoadedFile | undefined;
  for (const candidate of ENGINE_CANDIDATES) {
    const loaded = await readText(candidate, ctx);
    if (!isFailure(loaded)) {
      engine = { path: loaded.path, content: loaded.content };
      break;
    }
  }

  const result: WorkflowResult = {
    ok: true,
    kind: 'yaml',
    path: file.path,
    workflow,
    instructions,
    config: resolvedConfig(sources),
    unresolved: unresolved.list(),
  };
  if (template) result.template = template;
  if (engine) result.engine = engine;
  if (warnings.length) result.warnings = warnings;
  return result;
}

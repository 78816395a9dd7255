import { loadConfigFile, parseConfig } from '../agents/config';
import {
  expandDeep,
  expandVariables,
  isReservedVariable,
  MOUNT_TOKENS,
  withoutReserved,
  readResolved,
  resolvePath,
  today,
  type PathContext,
  type ResolvedPath,
  type VariableScope,
} from '../paths';
import { fail, isFailure, type ToolFailure, type ToolResult } from '../results';

/** Workflow files are small; anything bigger is a mistake, not a workflow. */
const MAX_WORKFLOW_FILE_BYTES = 1_000_000;
const ENGINE_CANDIDATES = ['{core-root}/tasks/workflow.md', '{core-root}/tasks/workflow.xml'];

export interface LoadedFile {
  path: string;
  content: string;
}

export interface WorkflowResult {
  ok: true;
  path: string;
  workflow: Record<string, unknown>;
  instructions: LoadedFile;
  template?: LoadedFile;
  engine?: LoadedFile;
  config: Record<string, unknown>;
  unresolved: string[];
  user_input?: unknown;
  warnings?: string[];
}

export interface LoadWorkflowOptions {
  userInput?: unknown;
}

async function readText(input: string, ctx: PathContext): Promise<(LoadedFile & { target: ResolvedPath }) | ToolFailure> {
  const target = await resolvePath(input, ctx, 'read');
  if (!target.ok) return target;
  if (target.kind === 'directory') return fail('EISDIR', `${target.virtual} is a folder, not a file`, { path: target.virtual });
  const buf = await readResolved(target, MAX_WORKFLOW_FILE_BYTES);
  if (isFailure(buf)) return buf;
  return { path: target.virtual, content: buf.toString('utf8'), target };
}

function dirnameVirtual(virtualPath: string): string {
  const i = virtualPath.lastIndexOf('/');
  return i === -1 ? virtualPath : virtualPath.slice(0, i);
}

function withContext(failure: ToolFailure, what: string): ToolFailure {
  return { ...failure, error: { ...failure.error, message: `${what}: ${failure.error.message}` } };
}

/**
 * Loads a workflow.yaml with its config, instructions, template and the core engine, with every
 * variable expanded to virtual paths or values. `{output_folder}` always means the conversation's
 * output folder, whatever the workflow or its config says.
 */
export async function loadWorkflow(workflowPath: string, ctx: PathContext, options: LoadWorkflowOptions = {}): Promise<ToolResult> {
  let file = await readText(workflowPath, ctx);
  if (isFailure(file) && file.error.code === 'EISDIR') {
    const inFolder = await readText(`${file.path}/workflow.yaml`, ctx);
    if (!isFailure(inFolder)) file = inFolder;
  }
  if (isFailure(file)) return file;
  const raw = parseConfig(file.content, file.path);
  if (isFailure(raw)) return raw;

  const warnings: string[] = [];
  const installedPath = dirnameVirtual(file.path);
  const date = typeof ctx.variables?.date === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(ctx.variables.date) ? ctx.variables.date : today();
  const agentVars: Record<string, unknown> = withoutReserved(ctx.variables);
  const baseScope: VariableScope = { roots: ctx, variables: agentVars, installedPath, date };

  // The config file first: workflow values refer to it through {config_source}:key.
  let configRaw: Record<string, unknown> = {};
  let configSource: string | undefined;
  if (typeof raw.config_source === 'string' && raw.config_source.trim() !== '') {
    const where = expandVariables(raw.config_source, baseScope);
    const loaded = await loadConfigFile(where.text, (p) => readText(p, ctx));
    if (isFailure(loaded)) {
      if (loaded.error.code !== 'ENOENT') return withContext(loaded, 'config_source');
      warnings.push(`config_source ${loaded.path ?? where.text} was not found; {config_source}:key values fall back to the agent's config`);
    } else {
      if (loaded.replaced) warnings.push(`config_source was not found; used ${loaded.path} instead`);
      configRaw = loaded.data;
      configSource = loaded.path;
    }
  }

  const unresolved = new Set<string>();
  const recursive = new Set<string>();
  const sink = { unresolved, recursive };

  // Workflow keys may refer to each other ({project_name} defined as {config_source}:project_name).
  const workflowVars: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!isReservedVariable(k) && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) workflowVars[k] = v;
  }
  const configScalars = withoutReserved(configRaw);

  const configScope: VariableScope = { ...baseScope, variables: { ...agentVars, ...configScalars }, configSource };
  const config = expandDeep(configRaw, configScope, sink) as Record<string, unknown>;
  if ('output_folder' in config) config.output_folder = MOUNT_TOKENS.output_folder;

  const scope: VariableScope = {
    ...baseScope,
    variables: { ...agentVars, ...configScalars, ...workflowVars },
    config: configRaw,
    configSource,
  };
  const workflow = expandDeep(raw, scope, sink) as Record<string, unknown>;
  workflow.output_folder = MOUNT_TOKENS.output_folder;
  workflow.installed_path = installedPath;
  if (configSource) workflow.config_source = configSource;
  if (raw.date === undefined || raw.date === 'system-generated') workflow.date = date;

  if (recursive.size) {
    return fail('E_UNRESOLVED_VARIABLE', `Variable(s) in ${file.path} refer to themselves: ${[...recursive].map((n) => `{${n}}`).join(', ')}`, {
      path: file.path,
      details: { variables: [...recursive] },
    });
  }

  // Instructions: named in the workflow, else the usual file next to it.
  let instructions: LoadedFile;
  if (typeof workflow.instructions === 'string' && workflow.instructions.trim() !== '') {
    const loaded = await readText(workflow.instructions, ctx);
    if (isFailure(loaded)) return withContext(loaded, 'instructions');
    instructions = { path: loaded.path, content: loaded.content };
  } else {
    let found: LoadedFile | null = null;
    for (const name of ['instructions.md', 'instructions.xml']) {
      const loaded = await readText(`${installedPath}/${name}`, ctx);
      if (!isFailure(loaded)) {
        found = { path: loaded.path, content: loaded.content };
        break;
      }
      if (loaded.error.code !== 'ENOENT') return withContext(loaded, 'instructions');
    }
    if (!found) {
      return fail('ENOENT', `instructions: ${file.path} names no instructions file and ${installedPath}/instructions.md does not exist`, {
        path: `${installedPath}/instructions.md`,
      });
    }
    instructions = found;
  }

  let template: LoadedFile | undefined;
  const templateValue = workflow.template;
  if (typeof templateValue === 'string' && templateValue.trim() !== '' && templateValue !== 'false') {
    const loaded = await readText(templateValue, ctx);
    if (isFailure(loaded)) return withContext(loaded, 'template');
    template = { path: loaded.path, content: loaded.content };
  }

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
    path: file.path,
    workflow,
    instructions,
    config,
    unresolved: [...unresolved],
  };
  if (template) result.template = template;
  if (engine) result.engine = engine;
  if (options.userInput !== undefined) result.user_input = options.userInput;
  if (warnings.length) result.warnings = warnings;
  return result as unknown as ToolResult;
}

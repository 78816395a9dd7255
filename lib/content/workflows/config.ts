import { loadConfigFile } from '../bmad-config';
import type { PathContext } from '../../core/paths';
import { isFailure, type ToolFailure } from '../../core/results';
import { dirnameVirtual, fileExists, readText, withContext } from './files';

export interface WorkflowConfig {
  data: Record<string, unknown>;
  /** Virtual path of the config actually read. */
  path?: string;
  warnings: string[];
}

const read = (ctx: PathContext) => (p: string) => readText(p, ctx);

/**
 * The config a workflow names (`config_source`, already expanded). A missing file is a warning
 * (its keys then come from the agent's config); one the sandbox refuses is a failure, since
 * the workflow asked for exactly that file.
 */
export async function loadNamedConfig(where: string, ctx: PathContext): Promise<WorkflowConfig | ToolFailure> {
  const loaded = await loadConfigFile(where, read(ctx));
  if (isFailure(loaded)) {
    if (loaded.error.code !== 'ENOENT') return withContext(loaded, 'config_source');
    return { data: {}, warnings: [`config_source ${loaded.path ?? where} was not found; {config_source}:key values fall back to the agent's config`] };
  }
  const warnings = loaded.replaced ? [`config_source was not found; used ${loaded.path} instead`] : [];
  return { data: loaded.data, path: loaded.path, warnings };
}

/** The module config next to a file: the nearest folder above it, up to its mount, with a config.yaml. */
export async function nearestConfig(fileDir: string, ctx: PathContext): Promise<string | null> {
  let dir = fileDir;
  for (let depth = 0; depth < 12; depth++) {
    const candidate = `${dir}/config.yaml`;
    if (await fileExists(candidate, ctx)) return candidate;
    if (!dir.includes('/')) break;
    dir = dirnameVirtual(dir);
  }
  return null;
}

/**
 * A markdown workflow's config: the one its frontmatter names (as strict as `config_source`), else
 * the one its text loads, else its module's; those two are read without failing.
 */
export async function findMarkdownConfig(
  named: { frontmatter: string | null; text: string | null },
  fileDir: string,
  ctx: PathContext,
): Promise<WorkflowConfig | ToolFailure> {
  if (named.frontmatter) return loadNamedConfig(named.frontmatter, ctx);
  if (named.text) {
    const loaded = await loadNamedConfig(named.text, ctx);
    if (!isFailure(loaded) && loaded.path) return loaded;
  }
  const nearest = await nearestConfig(fileDir, ctx);
  if (!nearest) return { data: {}, warnings: [] };
  const loaded = await loadNamedConfig(nearest, ctx);
  return isFailure(loaded) ? { data: {}, warnings: [`${nearest} could not be read: ${loaded.error.message}`] } : loaded;
}

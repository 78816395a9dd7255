import yaml from 'js-yaml';
import { MOUNT_TOKENS, withoutReserved } from '../../core/paths';
import { fail, isFailure, type ToolFailure } from '../../core/results';
import { configVariables as tableVariables } from './customize';
import { isTable, parseToml } from './toml';

/**
 * An agent's config file → variables. Critical actions, greetings and workflows'
 * `config_source` all read configs; this is the one place that knows how.
 */

/** What a reader returns: the virtual path actually read and its text. */
export interface ConfigText {
  path: string;
  content: string;
}

/** Reads one virtual path (through the sandbox, audited or not: the caller's choice). */
export type ConfigReader = (virtualPath: string) => Promise<ConfigText | ToolFailure>;

export interface LoadedConfig extends ConfigText {
  /** The parsed top-level map. */
  data: Record<string, unknown>;
  /** Its scalar values as strings, without the names the app owns (`output_folder`, ...). */
  variables: Record<string, string>;
  /** The path that was asked for, when the bundle's own config.yaml stood in for it. */
  replaced?: string;
}

const BUNDLE_CONFIG = `${MOUNT_TOKENS['bundle-root']}/config.yaml`;

/** `.../config.yaml` outside the bundle: a module config as an IDE install lays it out. */
function isModuleConfigPath(requested: string): boolean {
  return /(^|\/)config\.ya?ml$/i.test(requested) && !requested.startsWith(`${MOUNT_TOKENS['bundle-root']}/`);
}

/** A YAML map, or E_INVALID_YAML naming the file and the line. Dates stay strings. */
export function parseConfig(text: string, virtualPath: string): Record<string, unknown> | ToolFailure {
  let parsed: unknown;
  try {
    parsed = yaml.load(text, { schema: yaml.CORE_SCHEMA });
  } catch (e) {
    const reason = e instanceof yaml.YAMLException ? `${e.reason} (line ${e.mark.line + 1})` : 'unreadable YAML';
    return fail('E_INVALID_YAML', `${virtualPath} is not valid YAML: ${reason}`, { path: virtualPath });
  }
  if (parsed === undefined || parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    return fail('E_INVALID_YAML', `${virtualPath} must be a YAML map of keys`, { path: virtualPath });
  }
  return parsed as Record<string, unknown>;
}

/** Scalar values as strings; nested maps and lists are not variables. */
function configVariables(data: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(withoutReserved(data))) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
  }
  return out;
}

function loaded(file: ConfigText, replaced?: string): LoadedConfig | ToolFailure {
  const data = parseConfig(file.content, file.path);
  if (isFailure(data)) return data;
  return { ...file, data, variables: configVariables(data), ...(replaced ? { replaced } : {}) };
}

/**
 * Loads a config file. One that is missing (or a module config out of reach) falls back to the bundle's own
 * config.yaml: agents and workflows written for an IDE install name
 * `{project-root}/bmad/<module>/config.yaml`, which in a bundle is the bundle's config.
 * Without a fallback the first failure is returned.
 */
export async function loadConfigFile(requested: string, read: ConfigReader): Promise<LoadedConfig | ToolFailure> {
  const first = await read(requested);
  if (!isFailure(first)) return loaded(first);
  // Out of reach only counts for a module config: `{project-root}/.env` named as a config is refused.
  const missing = first.error.code === 'ENOENT' || (first.error.code === 'E_SANDBOX_VIOLATION' && isModuleConfigPath(requested));
  if (!missing || requested === BUNDLE_CONFIG) return first;
  const fallback = await read(BUNDLE_CONFIG);
  return isFailure(fallback) ? first : loaded(fallback, first.path ?? requested);
}

/**
 * A YAML file an agent loads at activation: module configs with the fallback above, any other
 * YAML file as it is.
 */
export async function loadAgentYaml(requested: string, read: ConfigReader): Promise<LoadedConfig | ToolFailure> {
  if (isModuleConfigPath(requested)) return loadConfigFile(requested, read);
  const file = await read(requested);
  return isFailure(file) ? file : loaded(file);
}

/**
 * A TOML config layer (BMAD 6.12's `_bmad/config.toml` and its overrides): the scalars of the
 * named tables (`core`, `modules.bmm`) become variables, or the top-level ones without tables.
 */
export async function loadAgentToml(requested: string, read: ConfigReader, tables?: string[]): Promise<LoadedConfig | ToolFailure> {
  const file = await read(requested);
  if (isFailure(file)) return file;
  const parsed = parseToml(file.content);
  if (!parsed.ok) return fail('E_INVALID_YAML', `${file.path} is not valid TOML: ${parsed.reason}`, { path: file.path });
  const variables = tables?.length
    ? tableVariables(parsed.data, tables)
    : tableVariables({ top: Object.fromEntries(Object.entries(parsed.data).filter(([, v]) => !isTable(v) && !Array.isArray(v))) }, ['top']);
  return { ...file, data: parsed.data, variables: withoutReserved(variables) };
}

/** A config an agent loads at activation, by its extension: YAML (module configs) or TOML (central config layers). */
export function loadAgentConfig(requested: string, read: ConfigReader, tables?: string[]): Promise<LoadedConfig | ToolFailure> {
  return /\.toml$/i.test(requested) ? loadAgentToml(requested, read, tables) : loadAgentYaml(requested, read);
}

export function isConfigPath(requested: string): boolean {
  return /\.(ya?ml|toml)$/i.test(requested);
}

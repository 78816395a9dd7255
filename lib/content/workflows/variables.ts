import { expandVariables, isDocumentFolderKey, isReservedVariable, MOUNT_TOKENS, projectFolderValue, withoutReserved, type PathContext, type VariableScope } from '../../core/paths';
import { pathAccess, isOutputKey } from './access';
import { isRelativeRef, joinVirtual, leadingVirtualPath } from './files';
import type { Unresolved } from './unresolved';

/** Everything a workflow's `{name}` and `{config_source}:key` references may draw on. */
export interface VariableSources {
  ctx: PathContext;
  /** The agent's loaded config, without the names the app owns. */
  agent: Record<string, unknown>;
  /** The workflow's config file as parsed. */
  config: Record<string, unknown>;
  /** Virtual path of that config file. */
  configSource?: string;
  date: string;
  /** Virtual path of the workflow's folder: `{installed_path}` always means it. */
  installedPath: string;
}

export interface ResolvedMap {
  /** The map with every string expanded and every relative path made a full virtual path. */
  values: Record<string, unknown>;
  /** Scalar `{name}` lookups for text that follows: the agent's, the config's, then this map's own. */
  variables: Record<string, unknown>;
}

const CONFIG_REF = /\{config_source\}:([A-Za-z0-9_]+)/g;
const WHOLE_CONFIG_REF = /^\{config_source\}:([A-Za-z0-9_]+)$/;

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

export function scalarsOf(map: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(withoutReserved(map))) if (isScalar(v)) out[k] = v;
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

export function baseScope(sources: VariableSources, variables: Record<string, unknown>): VariableScope {
  return {
    roots: sources.ctx,
    variables,
    config: {},
    installedPath: sources.installedPath,
    configSource: sources.configSource,
    date: sources.date,
  };
}

/**
 * `{config_source}:key` first, from the config and then the agent's config. A key neither has is
 * reported once, and the reference stays as written: looking it up among the workflow's own keys
 * would find the very line that asks for it (`user_name: "{config_source}:user_name"`).
 */
function substituteConfig(value: unknown, sources: VariableSources, missing: Set<string>): unknown {
  const lookup = (key: string): unknown => {
    if (key === 'output_folder') return MOUNT_TOKENS.output_folder;
    const found = sources.config[key] ?? sources.agent[key];
    // A project's document folder written without `{project-root}` is still the project's.
    return sources.ctx.project && typeof found === 'string' && isDocumentFolderKey(key) ? projectFolderValue(found) : found;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = WHOLE_CONFIG_REF.exec(v);
      if (whole && !isReservedVariable(whole[1])) {
        const found = lookup(whole[1]);
        if (found !== undefined && found !== null && typeof found === 'object') return walk(found);
      }
      return v.replace(CONFIG_REF, (match, key: string) => {
        if (isReservedVariable(key) && key !== 'output_folder') return match;
        const found = lookup(key);
        if (isScalar(found)) return String(found);
        missing.add(key);
        return match;
      });
    }
    if (Array.isArray(v)) return v.map(walk);
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, val] of Object.entries(v)) out[k] = walk(val);
      return out;
    }
    return v;
  };
  return walk(value);
}

/** A value that is a relative path, or a virtual path with `.`/`..` segments, as a clean full virtual path. */
function fullPath(text: string, baseDir: string, ctx: PathContext): { text: string } | { reason: string } {
  const trimmed = text.trim();
  if (isRelativeRef(trimmed)) {
    const joined = joinVirtual(baseDir, trimmed, ctx);
    return joined.ok ? { text: joined.path } : { reason: joined.reason };
  }
  const lead = leadingVirtualPath(text);
  if (!lead || !/(^|\/)\.\.?(\/|$)/.test(lead)) return { text };
  const joined = joinVirtual(baseDir, lead, ctx);
  return joined.ok ? { text: joined.path + trimmed.slice(lead.length) } : { reason: joined.reason };
}

/** Why a path value is no use where it points: outside every mount, or an output the conversation cannot write. */
function pathProblem(text: string, key: string, ctx: PathContext): string | null {
  const lead = leadingVirtualPath(text);
  // A path still waiting on a variable is reported under that variable's name.
  if (!lead || /\{[^{}]*\}/.test(lead.replace(/^\{[^}]*\}/, '').replace(/\{\{[^}]*\}\}/g, ''))) return null;
  const access = pathAccess(lead, ctx);
  if (!access.readable) return `resolves to ${lead}, outside every mount`;
  if (isOutputKey(key) && !access.writable) return `resolves to ${lead}, where this conversation may not write; save into {output_folder} instead`;
  return null;
}

export interface ResolveOptions {
  /** Folder that `./` and `../` values are relative to: the file's own. */
  baseDir: string;
  /** Lookups a parent already resolved (a workflow's, for its first step); the map's own win. */
  inherited?: Record<string, unknown>;
  /** Prefix of key paths in `unresolved` entries, e.g. `step.`. */
  keyPrefix?: string;
  /** Whether path values are checked against the mounts (not for configs: they are not the workflow's word). */
  checkPaths?: boolean;
}

/**
 * Resolves a workflow's map (workflow.yaml, or a markdown file's frontmatter): config references,
 * `{name}` references among the map's keys, a nested `variables:` map, then relative paths. What
 * cannot be resolved stays as written and is reported with its reason; nothing here fails.
 */
export function resolveMap(raw: Record<string, unknown>, sources: VariableSources, unresolved: Unresolved, options: ResolveOptions): ResolvedMap {
  const missing = new Set<string>();
  // The loader pins these to the file's folder and the conversation's output folder: whatever the
  // file wrote there is never used, so it is never reported either.
  const rest = Object.fromEntries(Object.entries(raw).filter(([k]) => k !== 'installed_path' && k !== 'output_folder'));
  const own = substituteConfig(rest, sources, missing) as Record<string, unknown>;
  for (const key of missing) {
    const where = sources.configSource ? `is not set in ${sources.configSource}` : 'has no config file to come from';
    unresolved.add(key, `{config_source}:${key} ${where}, nor in the agent's config`);
  }

  // A key whose value still waits on a missing config key is left out, so `{key}` elsewhere falls
  // back to the agent's value or is reported by its own name, never looping on itself.
  const usable = (m: Record<string, unknown>) => {
    const out = scalarsOf(m);
    for (const [k, v] of Object.entries(out)) if (typeof v === 'string' && v.includes('{config_source}:')) delete out[k];
    return out;
  };
  const nested = isPlainObject(own.variables) ? usable(own.variables) : {};
  const lookups = { ...sources.agent, ...scalarsOf(sources.config), ...(options.inherited ?? {}), ...nested, ...usable(own) };
  const scope = baseScope(sources, lookups);
  const prefix = options.keyPrefix ?? '';

  const finish = (text: string, keyPath: string, key: string): string => {
    const r = expandVariables(text, scope);
    for (const name of r.recursive) unresolved.add(name, `{${name}} refers to itself`);
    for (const name of r.unresolved) {
      if (!missing.has(name)) unresolved.add(name, `{${name}} is not defined by the workflow, its config or the agent's config`);
    }
    const made = fullPath(r.text, options.baseDir, sources.ctx);
    if ('reason' in made) {
      unresolved.add(prefix + keyPath, made.reason);
      return r.text;
    }
    const problem = options.checkPaths === false || keyPath === 'config_source' ? null : pathProblem(made.text, key, sources.ctx);
    if (problem) unresolved.add(prefix + keyPath, problem);
    return made.text;
  };

  const walk = (v: unknown, keyPath: string, key: string): unknown => {
    if (typeof v === 'string') return finish(v, keyPath, key);
    if (Array.isArray(v)) return v.map((item, i) => walk(item, `${keyPath}.${i}`, key));
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, val] of Object.entries(v)) out[k] = walk(val, keyPath ? `${keyPath}.${k}` : k, k);
      return out;
    }
    return v;
  };
  const values = walk(own, '', '') as Record<string, unknown>;
  if ('installed_path' in raw) values.installed_path = sources.installedPath;
  if ('output_folder' in raw) values.output_folder = MOUNT_TOKENS.output_folder;

  const resolvedNested = isPlainObject(values.variables) ? scalarsOf(values.variables) : {};
  const variables = { ...lookups, ...resolvedNested, ...scalarsOf(values) };
  for (const [k, v] of Object.entries(variables)) if (typeof v === 'string' && v.includes('{config_source}:')) delete variables[k];
  return { values, variables };
}

/**
 * Expands the variables a file's text uses where that is safe: names the workflow, its config or
 * the agent define. Any other `{name}` is the workflow's own runtime state (`{baseline_commit}`)
 * and `{{name}}` belongs to templates; both stay as written.
 */
export function expandText(text: string, sources: VariableSources, variables: Record<string, unknown>): string {
  return expandVariables(text, baseScope(sources, variables)).text;
}

import path from 'node:path';

export type MountName = 'bundle-root' | 'core-root' | 'output_folder';

/** The temp folder of a workspace's commands (their /tmp), readable by the file tools. */
export const TMP_TOKEN = '{tmp}';

export const MOUNT_TOKENS: Record<MountName, string> = {
  'bundle-root': '{bundle-root}',
  'core-root': '{core-root}',
  output_folder: '{output_folder}',
};

/** Absolute roots; only needed to rewrite `{project-root}/...` into a mount's virtual path. */
export interface MountRoots {
  bundleRoot: string;
  coreRoot: string;
  outputRoot: string;
  projectRoot: string;
  /**
   * Set in a BMAD project: the folders its config names for documents (`planning_artifacts:
   * docs/planning`) are then folders of the project, as BMAD means them.
   */
  project?: unknown;
}

export interface VariableScope {
  roots?: MountRoots;
  /** Plain `{name}` lookups: workflow keys, config keys, the agent's loaded config. */
  variables?: Record<string, unknown>;
  /** `{config_source}:key` lookups. */
  config?: Record<string, unknown>;
  /** Virtual path of the workflow's folder. */
  installedPath?: string;
  /** Virtual path of the workflow's config file. */
  configSource?: string;
  /** ISO date (YYYY-MM-DD); today when absent. */
  date?: string;
  maxDepth?: number;
}

export interface Expansion {
  text: string;
  /** Names nobody defines, as written (`user_name`, or the key of `{config_source}:key`). */
  unresolved: string[];
  /** Names whose values refer back to themselves (or nest deeper than the depth limit). */
  recursive: string[];
}

/**
 * Names the app owns. Config files often set `output_folder` (or even `bundle-root`), but the
 * sandbox decides where those point, so such keys are never looked up in user data.
 */
const RESERVED = new Set([
  'bundle-root', 'core-root', 'output_folder', 'project-root', 'project_root', 'installed_path', 'config_source', 'date',
]);

const DEFAULT_DEPTH = 12;

// `{{mustache}}` placeholders belong to templates and are left for the model to fill.
const TOKEN = /\{config_source\}:([A-Za-z0-9_]+)|(?<!\{)\{([A-Za-z_][A-Za-z0-9_-]*)\}(?!\})/g;
const PROJECT_ROOT = /\{project[-_]root\}(\/[^\s"'`<>|{}()[\],;]*)?/g;

/**
 * Config keys that name folders of the project's documents: those BMAD's modules (core and bmm,
 * 6.0 to 6.12) define with `result: "{project-root}/{value}"`, and the `*_artifacts` / `*_folder`
 * keys later modules add the same way.
 */
const DOCUMENT_FOLDER_KEYS = new Set(['output_folder', 'planning_artifacts', 'implementation_artifacts', 'project_knowledge']);

export function isDocumentFolderKey(name: string): boolean {
  return DOCUMENT_FOLDER_KEYS.has(name) || /^[a-z][a-z0-9_]*_(artifacts|folder)$/.test(name);
}

/**
 * A document folder as a config writes it, as BMAD means it: relative to the project root when
 * it starts with no variable (`docs/planning`, `./docs`; BMAD's installer writes `--set` answers
 * so). Anything else stays as written: `{project-root}/...` and `{output_folder}/...` already say
 * where they are, and an absolute or `..` path is left for the sandbox to refuse.
 */
export function projectFolderValue(value: string): string {
  const v = value.trim();
  if (!v || v.startsWith('{') || v.startsWith('/') || v.startsWith('\\') || v.startsWith('~') || /^[A-Za-z]:/.test(v)) return value;
  const rel = v.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
  return rel && rel !== '.' ? `{project-root}/${rel}` : '{project-root}';
}

function inProject(scope: VariableScope): boolean {
  return !!scope.roots?.project;
}

export function today(now: Date = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

export function isReservedVariable(name: string): boolean {
  return RESERVED.has(name);
}

/** A copy without the names the app owns: user data never redefines a mount or a path variable. */
export function withoutReserved<T>(values: Record<string, T> | undefined): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [k, v] of Object.entries(values ?? {})) if (!RESERVED.has(k)) out[k] = v;
  return out;
}

type Lookup = { literal: string } | { expand: string } | undefined;

function scalar(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function lookupName(name: string, scope: VariableScope): Lookup {
  switch (name) {
    case 'bundle-root':
    case 'core-root':
    case 'output_folder':
      return { literal: `{${name}}` };
    case 'project-root':
    case 'project_root':
      return { literal: '{project-root}' };
    case 'tmp':
      // A workspace's command temp folder, a mount of its own (see PathContext.tmpRoot).
      return { literal: TMP_TOKEN };
    case 'installed_path':
      return scope.installedPath === undefined ? undefined : { expand: scope.installedPath };
    case 'config_source':
      return scope.configSource === undefined ? undefined : { expand: scope.configSource };
    case 'date':
      return { literal: scope.date ?? today() };
  }
  const value = scalar(scope.variables?.[name]);
  if (value === undefined) return undefined;
  return { expand: inProject(scope) && isDocumentFolderKey(name) ? projectFolderValue(value) : value };
}

function lookupConfig(key: string, scope: VariableScope): Lookup {
  if (key === 'output_folder') return { literal: '{output_folder}' };
  if (RESERVED.has(key)) return lookupName(key, scope);
  const value = scalar(scope.config?.[key]) ?? scalar(scope.variables?.[key]);
  if (value === undefined) return undefined;
  return { expand: inProject(scope) && isDocumentFolderKey(key) ? projectFolderValue(value) : value };
}

interface Acc {
  unresolved: Set<string>;
  recursive: Set<string>;
}

function expandInner(text: string, scope: VariableScope, stack: string[], acc: Acc, depth: number): string {
  if (!text.includes('{')) return text;
  return text.replace(TOKEN, (match, configKey: string | undefined, name: string | undefined) => {
    const id = configKey !== undefined ? `{config_source}:${configKey}` : `{${name}}`;
    const reported = (configKey ?? name) as string;
    const found = configKey !== undefined ? lookupConfig(configKey, scope) : lookupName(name as string, scope);
    if (found === undefined) {
      acc.unresolved.add(reported);
      return match;
    }
    if ('literal' in found) return found.literal;
    if (stack.includes(id) || stack.length >= depth) {
      acc.recursive.add(reported);
      return match;
    }
    return expandInner(found.expand, scope, [...stack, id], acc, depth);
  });
}

function posixRelative(from: string, to: string): string | null {
  const rel = path.relative(from, to);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return null;
  return rel.split(path.sep).join('/');
}

/**
 * `{project-root}/<mount's folder>/...` becomes `{mount}/...`; anything else keeps the
 * `{project-root}` token so the sandbox can refuse it.
 */
export function rewriteProjectRoot(text: string, roots: MountRoots | undefined): string {
  if (!text.includes('root}')) return text;
  const mounts = roots
    ? ([
        ['output_folder', roots.outputRoot],
        ['bundle-root', roots.bundleRoot],
        ['core-root', roots.coreRoot],
      ] as const)
        .map(([name, root]) => ({ token: MOUNT_TOKENS[name], rel: posixRelative(roots.projectRoot, root) }))
        .filter((m): m is { token: string; rel: string } => m.rel !== null)
        .sort((a, b) => b.rel.length - a.rel.length)
    : [];
  return text.replace(PROJECT_ROOT, (_match, rest: string | undefined) => {
    const tail = rest ?? '';
    for (const m of mounts) {
      const prefix = `/${m.rel}`;
      if (tail === prefix || tail.startsWith(`${prefix}/`)) return m.token + tail.slice(prefix.length);
    }
    return `{project-root}${tail}`;
  });
}

/**
 * Expands variables until stable. Mount variables stay as virtual tokens, so the result is safe
 * to show the model; unknown names are kept in the text and reported.
 */
export function expandVariables(text: string, scope: VariableScope = {}): Expansion {
  const acc: Acc = { unresolved: new Set(), recursive: new Set() };
  const expanded = expandInner(text, scope, [], acc, scope.maxDepth ?? DEFAULT_DEPTH);
  return {
    text: rewriteProjectRoot(expanded, scope.roots),
    unresolved: [...acc.unresolved].filter((n) => !acc.recursive.has(n)),
    recursive: [...acc.recursive],
  };
}

/** Expands every string inside a parsed YAML value; a string that is exactly one reference keeps the referenced value's type. */
export function expandDeep(value: unknown, scope: VariableScope, acc?: { unresolved: Set<string>; recursive: Set<string> }): unknown {
  const sink = acc ?? { unresolved: new Set<string>(), recursive: new Set<string>() };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = /^\{config_source\}:([A-Za-z0-9_]+)$/.exec(v);
      if (whole && whole[1] !== 'output_folder' && !RESERVED.has(whole[1])) {
        const raw = scope.config?.[whole[1]] ?? scope.variables?.[whole[1]];
        if (raw !== undefined && typeof raw === 'object' && raw !== null) return walk(raw);
      }
      const r = expandVariables(v, scope);
      r.unresolved.forEach((n) => sink.unresolved.add(n));
      r.recursive.forEach((n) => sink.recursive.add(n));
      return r.text;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object' && !(v instanceof Date)) {
      const out: Record<string, unknown> = {};
      for (const [k, val] of Object.entries(v)) out[k] = walk(val);
      return out;
    }
    return v;
  };
  return walk(value);
}

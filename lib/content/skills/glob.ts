import { expandVariables, resolvePath, walkFolder, withoutReserved, type PathContext } from '../../core/paths';
import { fail, type ToolFailure } from '../../core/results';

const MAX_DEPTH = 24;
const GLOB_CHAR = /[*?[]/;

export interface GlobOptions {
  /** Files returned at most (sorted, the first ones). */
  maxFiles?: number;
  /** Entries walked at most: a glob over a huge project stops there and says so. */
  maxEntries?: number;
  signal?: AbortSignal;
}

export interface GlobMatch {
  /** Virtual paths of the matching files, sorted. */
  files: string[];
  /** More files matched than were returned, or the walk stopped early. */
  truncated: boolean;
}

function segmentRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) out += '\\[';
      else {
        out += `[${glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return out;
}

/** A glob's path below its fixed folder as a regex over `/`-separated relative paths; `**` spans folders. */
function globRegex(rest: string[]): RegExp {
  const parts = rest.map((seg, i) => {
    if (seg === '**') return i === rest.length - 1 ? '.*' : '(?:[^/]+/)*';
    return segmentRegex(seg) + (i === rest.length - 1 ? '' : '/');
  });
  return new RegExp(`^${parts.join('')}$`);
}

/**
 * The files a glob names (`{project-root}/**\/project-context.md`, `{planning_artifacts}/*.md`):
 * variables expanded as for any path, the part before the first wildcard resolved through the
 * sandbox, the rest matched over the one folder walker (hidden entries and links never match).
 * A path without wildcards is returned as it is. Nothing here reads a file.
 */
export async function globFiles(pattern: string, ctx: PathContext, options: GlobOptions = {}): Promise<GlobMatch | ToolFailure> {
  const expanded = expandVariables(pattern.trim(), { roots: ctx, variables: withoutReserved(ctx.variables) });
  if (expanded.unresolved.length) return fail('E_UNRESOLVED_VARIABLE', `${pattern}: unknown variable(s) ${expanded.unresolved.map((n) => `{${n}}`).join(', ')}`);
  const segments = expanded.text.split('/');
  const first = segments.findIndex((s) => GLOB_CHAR.test(s));
  if (first < 0) {
    const one = await resolvePath(expanded.text, ctx, 'read');
    if (!one.ok) return one;
    return { files: one.kind === 'file' ? [one.virtual] : [], truncated: false };
  }
  if (first === 0) return fail('E_INVALID_ARGS', `${pattern}: a glob must start with a folder, e.g. {project-root}/docs/*.md`);
  const base = await resolvePath(segments.slice(0, first).join('/'), ctx, 'read');
  if (!base.ok) return base;
  if (base.kind !== 'directory') return { files: [], truncated: false };
  const rest = segments.slice(first).filter((s) => s !== '');
  const re = globRegex(rest);
  const deep = rest.includes('**');
  const maxFiles = options.maxFiles ?? 50;
  const files: string[] = [];
  const walk = walkFolder(base.abs, {
    recursive: deep || rest.length > 1,
    maxDepth: deep ? MAX_DEPTH : rest.length - 1,
    maxEntries: options.maxEntries ?? 20_000,
    onUnreadable: 'skip',
    signal: options.signal,
  });
  try {
    for await (const e of walk) if (e.type === 'file' && re.test(e.path)) files.push(`${base.virtual}/${e.path}`);
  } catch {
    return fail('E_ABORTED', 'Stopped');
  }
  files.sort();
  return { files: files.slice(0, maxFiles), truncated: files.length > maxFiles || walk.truncated };
}

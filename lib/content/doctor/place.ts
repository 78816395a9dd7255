import path from 'node:path';
import type { ConfigReader } from '../bmad-config';
import { readResolved, resolvePath, type PathContext } from '../../core/paths';
import { fail, isFailure, type ToolFailure } from '../../core/results';

/** Agent and workflow files are small; the doctor reads no more of one than the loader would. */
const MAX_READ_BYTES = 1_000_000;

export type Mounts = Omit<PathContext, 'variables'>;

/**
 * Where the doctor looks: the folder it was given (lines name files relative to it) and the
 * mounts an agent of it works with, as a conversation would see them. Nothing is ever written:
 * only reads go through the sandbox, and reads create no folder.
 */
export interface Place {
  folder: string;
  mounts: Mounts;
  /** The mounts with an agent's loaded config as variables. */
  context(variables: Record<string, string>): PathContext;
  /** A virtual path as a file relative to the folder; one outside it stays virtual. */
  show(virtualPath: string): string;
  /** An absolute path relative to the folder. */
  relative(abs: string): string;
  /** Text with every server path of the mounts replaced (by a relative path or a mount token). */
  clean(text: string): string;
}

const VIRTUAL = /^\{(bundle-root|core-root|output_folder|project-root)\}(?:\/(.*))?$/;

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

export function placeOf(folder: string, mounts: Mounts): Place {
  const posix = (p: string) => p.split(path.sep).join('/');
  const relative = (abs: string) => posix(path.relative(folder, abs)) || '.';
  const roots: Record<string, string> = {
    'bundle-root': mounts.bundleRoot,
    'core-root': mounts.coreRoot,
    output_folder: mounts.outputRoot,
    'project-root': mounts.projectRoot,
  };
  const replacements = [
    ...Object.entries(roots).map(([token, root]) => ({ root, by: isInside(folder, root) ? relative(root) : `{${token}}` })),
    { root: folder, by: '.' },
  ].sort((a, b) => b.root.length - a.root.length);

  return {
    folder,
    mounts,
    context: (variables) => ({ ...mounts, variables }),
    show(virtualPath) {
      const m = VIRTUAL.exec(virtualPath);
      if (!m) return virtualPath;
      const abs = path.join(/*turbopackIgnore: true*/ roots[m[1]], ...(m[2] ?? '').split('/').filter(Boolean));
      return isInside(folder, abs) ? relative(abs) : virtualPath;
    },
    relative,
    clean(text) {
      let out = text;
      for (const { root, by } of replacements) {
        if (!root || root === path.sep) continue;
        out = out.split(`${root}${path.sep}`).join(by === '.' ? '' : `${by}/`).split(root).join(by);
      }
      return out;
    },
  };
}

/** Reads a virtual path through the sandbox, as read_file would (no audit: nothing runs). */
export function sandboxReader(ctx: PathContext): ConfigReader {
  return async (virtualPath) => {
    const target = await resolvePath(virtualPath, ctx, 'read');
    if (!target.ok) return target;
    if (target.kind === 'directory') return fail('EISDIR', `${target.virtual} is a folder, not a file`, { path: target.virtual });
    const buf = await readResolved(target, MAX_READ_BYTES);
    if (isFailure(buf)) return buf;
    return { path: target.virtual, content: buf.toString('utf8') };
  };
}

/** Whether a virtual path names something that exists; the sandbox's refusal when it may not be read. */
export async function lookUp(virtualPath: string, ctx: PathContext): Promise<{ exists: boolean; virtual?: string; refused?: ToolFailure }> {
  const target = await resolvePath(virtualPath, ctx, 'read');
  if (target.ok) return { exists: true, virtual: target.virtual };
  if (target.error.code === 'ENOENT') return { exists: false, virtual: target.path };
  return { exists: false, refused: target };
}

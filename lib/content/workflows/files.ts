import path from 'node:path';
import {
  expandVariables,
  MOUNT_TOKENS,
  readResolved,
  resolvePath,
  walkFolder,
  type PathContext,
  type ResolvedPath,
} from '../../core/paths';
import { fail, isFailure, type ToolFailure } from '../../core/results';

/** Workflow files are small; anything bigger is a mistake, not a workflow. */
export const MAX_WORKFLOW_FILE_BYTES = 1_000_000;

export interface LoadedFile {
  path: string;
  content: string;
}

export async function readText(input: string, ctx: PathContext): Promise<(LoadedFile & { target: ResolvedPath }) | ToolFailure> {
  const target = await resolvePath(input, ctx, 'read');
  if (!target.ok) return target;
  if (target.kind === 'directory') return fail('EISDIR', `${target.virtual} is a folder, not a file`, { path: target.virtual });
  const buf = await readResolved(target, MAX_WORKFLOW_FILE_BYTES);
  if (isFailure(buf)) return buf;
  return { path: target.virtual, content: buf.toString('utf8'), target };
}

/** Whether a virtual path names an existing file (never a folder), without reading it. */
export async function fileExists(input: string, ctx: PathContext): Promise<boolean> {
  const target = await resolvePath(input, ctx, 'read');
  return target.ok && target.kind === 'file';
}

/** The names of a folder's files and subfolders, sorted as numbered step files expect. */
export async function listFolder(input: string, ctx: PathContext): Promise<Array<{ name: string; type: 'file' | 'directory' }> | null> {
  const target = await resolvePath(input, ctx, 'read');
  if (!target.ok || target.kind !== 'directory') return null;
  const out: Array<{ name: string; type: 'file' | 'directory' }> = [];
  try {
    for await (const e of walkFolder(target.abs, { recursive: false, maxEntries: 500 })) out.push({ name: e.name, type: e.type });
  } catch {
    return null;
  }
  return out.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
}

export function dirnameVirtual(virtualPath: string): string {
  const i = virtualPath.lastIndexOf('/');
  return i === -1 ? virtualPath : virtualPath.slice(0, i);
}

export function basenameVirtual(virtualPath: string): string {
  return virtualPath.slice(virtualPath.lastIndexOf('/') + 1);
}

export function withContext(failure: ToolFailure, what: string): ToolFailure {
  return { ...failure, error: { ...failure.error, message: `${what}: ${failure.error.message}` } };
}

const MOUNT_START = /^\{(bundle-root|core-root|output_folder|project-root)\}(?=\/|$)/;

/** Mount roots as `{project-root}/...` prefixes, so `..` may walk from `{core-root}` up into `{bundle-root}`. */
function projectPrefix(token: string, ctx: PathContext): string[] | null {
  if (token === '{project-root}') return [];
  const root = token === MOUNT_TOKENS['bundle-root'] ? ctx.bundleRoot : token === MOUNT_TOKENS['core-root'] ? ctx.coreRoot : ctx.outputRoot;
  const rel = path.relative(ctx.projectRoot, root);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return null;
  return rel.split(path.sep);
}

export type Joined = { ok: true; path: string } | { ok: false; reason: string };

/**
 * A path written relative to a file (`./steps/step-01.md`, `../data/x.csv`) or a virtual path with
 * `.`/`..` segments, as one clean virtual path. Mounts inside the project are walked as project
 * folders, so `{core-root}/..` is `{bundle-root}`; leaving the project (or a mount outside it) is
 * refused with the reason.
 */
export function joinVirtual(baseDir: string, relative: string, ctx: PathContext): Joined {
  const absolute = MOUNT_START.test(relative);
  const start = absolute ? relative : `${baseDir}/${relative}`;
  const m = MOUNT_START.exec(start);
  if (!m) return { ok: false, reason: `${relative} is not inside any mount` };
  const token = `{${m[1]}}`;
  const rest = start.slice(m[0].length).split('/');
  const prefix = projectPrefix(token, ctx);
  const names = prefix ? [...prefix] : [];
  for (const seg of rest) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (names.length === 0) {
        const where = prefix ? 'the project' : token;
        return { ok: false, reason: `${relative} leaves ${where}, outside every mount` };
      }
      names.pop();
      continue;
    }
    names.push(seg);
  }
  if (!prefix) return { ok: true, path: names.length ? `${token}/${names.join('/')}` : token };
  const inProject = names.length ? `{project-root}/${names.join('/')}` : '{project-root}';
  const rewritten = expandVariables(inProject, { roots: ctx }).text;
  if (rewritten.startsWith('{project-root}') && !ctx.project) {
    return { ok: false, reason: `${relative} resolves to ${rewritten}, outside every mount` };
  }
  return { ok: true, path: rewritten };
}

/** A value written as a path relative to its file: `./x`, `../x`. */
export function isRelativeRef(value: string): boolean {
  return value.startsWith('./') || value.startsWith('../');
}

/** A value that is a virtual path, possibly followed by prose (`{output_folder}/a.md or b.md`). */
export function leadingVirtualPath(value: string): string | null {
  const m = /^\{(bundle-root|core-root|output_folder|project-root)\}(\/[^\s]*)?/.exec(value.trim());
  return m ? m[0] : null;
}

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fail, type ToolFailure } from '../results';
import { expandVariables, MOUNT_TOKENS, type MountName, TMP_TOKEN, today, withoutReserved } from './variables';
import { WalkError } from './walk';

export type Access = 'read' | 'write';

/** The mounts a path may land in, as absolute server paths, and the variables paths may use. */
export interface PathContext {
  bundleRoot: string;
  coreRoot: string;
  /** The conversation's output folder: OUTPUT_PATH/<conversationId>. */
  outputRoot: string;
  projectRoot: string;
  /** Variables from the agent's loaded config (user_name, ...), plus date. */
  variables: Record<string, string>;
  /**
   * Set in a BMAD project: `{project-root}` is then a mount of its own, readable but for secrets
   * and machinery, writable only in these folders (relative, e.g. `docs`) besides the output
   * folder. Without it `{project-root}` paths must land in another mount.
   */
  project?: ProjectAccess;
  /**
   * In a workspace: the folder its commands see as /tmp (kept between commands), readable as
   * `{tmp}/...` so a file a command left there (a diff, a report) can be read back. Never writable
   * by the file tools.
   */
  tmpRoot?: string;
  /**
   * In a workspace: the checkout's top folder, which commands see as `/workspace`. The method's
   * scripts write absolute paths of their sandbox into what they render (bmad-build's workflow.md
   * names its step files as `/workspace/_bmad/render/...`), so such a path is read as that file.
   */
  checkoutRoot?: string;
}

export interface ProjectAccess {
  writable: string[];
  /**
   * A workspace's checkout: every file is writable but the installed method (`_bmad/`, `bmad/`),
   * and what stays unreachable everywhere (`.git`, secrets).
   */
  everywhere?: boolean;
}

/** Top folders of a checkout the file tools never write (the installed method). */
const METHOD_FOLDERS = new Set(['_bmad', 'bmad']);

export const PROJECT_TOKEN = '{project-root}';

/**
 * Names no tool may reach inside a project, at any depth: secrets (`.env`, `.env.local`, ...)
 * and machinery whose contents are not the project's documents.
 */
const DENIED_IN_PROJECT = /^(\.env(\..*)?|\.git|\.hg|\.svn|node_modules|\.npmrc|\.netrc|\.ssh|\.aws|\.docker|\.pypirc)$/i;

/** One name (at any depth) no tool may reach in a project; the script sandbox hides the same ones. */
export function isDeniedProjectName(name: string): boolean {
  return DENIED_IN_PROJECT.test(name.normalize('NFKC').trim());
}

function deniedInProject(names: string[]): string | null {
  const hit = names.find(isDeniedProjectName);
  return hit ? `${hit} is a secret or machinery folder of the project and is never readable` : null;
}

/**
 * A path the sandbox accepted. `abs` and `root` are real (symlink-free) server paths: they must
 * never be shown to the model; `virtual` is what results carry.
 */
export interface ResolvedPath {
  ok: true;
  abs: string;
  root: string;
  virtual: string;
  /** Mount token, e.g. `{output_folder}`. */
  mount: string;
  writable: boolean;
  exists: boolean;
  kind?: 'file' | 'directory';
  size?: number;
}

const MAX_PATH_CHARS = 1024;
const MAX_NAME_BYTES = 255;

export function violation(mount: string, reason: string, virtualPath?: string): ToolFailure {
  const where = mount === 'none' ? 'outside every mount' : `mount ${mount}`;
  return fail('E_SANDBOX_VIOLATION', `Access denied (${where}): ${reason}.`, {
    path: virtualPath,
    details: { mount, reason, ...(virtualPath ? { virtual: virtualPath } : {}) },
  });
}

/** Containment by path segments, so `/out-evil` is never inside `/out`. */
export function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

function errno(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null ? ((e as NodeJS.ErrnoException).code ?? undefined) : undefined;
}

/** Maps a filesystem error to a tool failure without echoing the server path Node puts in messages. */
export function fsFailure(e: unknown, mount: string, virtualPath: string): ToolFailure {
  switch (errno(e)) {
    case 'ENOENT':
      return fail('ENOENT', `Not found: ${virtualPath}`, { path: virtualPath });
    case 'EISDIR':
      return fail('EISDIR', `${virtualPath} is a folder, not a file`, { path: virtualPath });
    case 'ENOTDIR':
      return fail('ENOTDIR', `A part of ${virtualPath} is a file, not a folder`, { path: virtualPath });
    case 'ELOOP':
      return violation(mount, 'symlink loop or symlink where a real file was expected', virtualPath);
    case 'ENAMETOOLONG':
      return fail('E_INVALID_ARGS', `Path too long: ${virtualPath}`, { path: virtualPath });
    case 'EACCES':
    case 'EPERM':
      return fail('E_INTERNAL', `Permission denied by the server for ${virtualPath}`, { path: virtualPath });
    case 'ENOSPC':
      return fail('E_INTERNAL', 'The server is out of disk space', { path: virtualPath });
    default:
      return fail('E_INTERNAL', `File system error (${errno(e) ?? 'unknown'}) on ${virtualPath}`, { path: virtualPath });
  }
}

/** A walk's error as a tool failure naming the folder by its virtual path, like fsFailure; other errors are rethrown. */
export function walkFailure(e: unknown, target: ResolvedPath): ToolFailure {
  if (!(e instanceof WalkError)) throw e;
  if (e.reason === 'aborted') return fail('E_ABORTED', 'Stopped');
  return fsFailure(e.cause, target.mount, e.path ? `${target.virtual}/${e.path}` : target.virtual);
}

/** Trims what models and copy-paste add around a path: whitespace and one pair of matching quotes. */
function normaliseInput(input: string): string {
  let s = input.trim();
  const q = s[0];
  if (s.length >= 2 && (q === '"' || q === "'" || q === '`') && s[s.length - 1] === q) s = s.slice(1, -1).trim();
  return s;
}

function checkName(name: string): string | null {
  if (name.includes('\\')) return 'Windows path separators (\\) are not allowed';
  if (name.includes(':')) return 'colons are not allowed (drive letters and alternate data streams)';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'control characters are not allowed in names';
  if (/[<>"|?*]/.test(name)) return 'characters < > " | ? * are not allowed in names';
  const folded = name.normalize('NFKC').trim();
  if (/^\.{2,}$/.test(folded)) return '".." segments are not allowed';
  if (name !== name.trim()) return 'names may not start or end with whitespace';
  if (name.endsWith('.')) return 'names may not end with a dot';
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return 'a name is longer than 255 bytes';
  return null;
}

/** Splits a mount-relative path into checked names; '' and '.' segments are dropped. */
function splitRelative(rel: string, mount: string): string[] | ToolFailure {
  const names: string[] = [];
  for (const seg of rel.split('/')) {
    if (seg === '' || seg === '.') continue;
    const reason = checkName(seg);
    if (reason) return violation(mount, reason);
    names.push(seg);
  }
  return names;
}

function virtualOf(mountToken: string, names: string[]): string {
  return names.length ? `${mountToken}/${names.join('/')}` : mountToken;
}

async function realRoot(root: string, create: boolean): Promise<string | null> {
  try {
    return await fs.realpath(root);
  } catch (e) {
    if (errno(e) !== 'ENOENT' || !create) return null;
    await fs.mkdir(root, { recursive: true });
    return fs.realpath(root);
  }
}

/**
 * Resolves names under one root with symlinks followed: the real target (or, for a new file, the
 * real nearest existing parent) must stay inside the real root.
 */
async function resolveUnder(
  rootAbs: string,
  mountToken: string,
  names: string[],
  access: Access,
  writable: boolean,
): Promise<ResolvedPath | ToolFailure> {
  const virtualPath = virtualOf(mountToken, names);
  const lexical = path.join(rootAbs, ...names);
  if (!isInside(rootAbs, lexical)) return violation(mountToken, 'path leaves the mount', virtualPath);

  // A conversation's folder is made by the server; one replaced by a link would move the whole
  // mount (another conversation, the data folder), so it must be a real folder.
  if (mountToken === MOUNT_TOKENS.output_folder) {
    const st = await fs.lstat(rootAbs).catch(() => null);
    if (st && !st.isDirectory()) return violation(mountToken, 'the output folder is not a real folder', virtualPath);
  }

  let root: string | null;
  try {
    root = await realRoot(rootAbs, access === 'write' && writable);
  } catch (e) {
    return fsFailure(e, mountToken, virtualPath);
  }
  if (!root) return fail('ENOENT', `Not found: ${virtualPath}`, { path: virtualPath });

  // Paths here come from requests at run time: nothing for the build to trace.
  const target = path.join(/*turbopackIgnore: true*/ root, ...names);
  const tail: string[] = [];
  let current = target;
  for (;;) {
    let real: string;
    try {
      real = await fs.realpath(current);
    } catch (e) {
      const code = errno(e);
      if (code === 'ELOOP') return violation(mountToken, 'symlink loop', virtualPath);
      if (code === 'ENOTDIR') return fsFailure(e, mountToken, virtualPath);
      if (code !== 'ENOENT') return fsFailure(e, mountToken, virtualPath);
      // An entry that exists but cannot be resolved is a dangling symlink: following it on write could land anywhere.
      const exists = await fs.lstat(current).then(() => true, () => false);
      if (exists) return violation(mountToken, 'dangling symlink', virtualPath);
      if (current === root) return fail('ENOENT', `Not found: ${virtualPath}`, { path: virtualPath });
      tail.unshift(path.basename(current));
      current = path.dirname(current);
      continue;
    }
    if (!isInside(root, real)) return violation(mountToken, 'symlink points outside the mount', virtualPath);
    const abs = tail.length ? path.join(real, ...tail) : real;
    if (tail.length) {
      if (access === 'read') return fail('ENOENT', `Not found: ${virtualPath}`, { path: virtualPath });
      return { ok: true, abs, root, virtual: virtualPath, mount: mountToken, writable, exists: false };
    }
    let st;
    try {
      st = await fs.stat(real);
    } catch (e) {
      return fsFailure(e, mountToken, virtualPath);
    }
    if (!st.isFile() && !st.isDirectory()) {
      return violation(mountToken, 'not a regular file or folder (FIFO, socket or device)', virtualPath);
    }
    return {
      ok: true,
      abs,
      root,
      virtual: virtualPath,
      mount: mountToken,
      writable,
      exists: true,
      kind: st.isFile() ? 'file' : 'directory',
      size: st.isFile() ? st.size : undefined,
    };
  }
}

function mountRoot(ctx: PathContext, mount: MountName): string {
  return mount === 'bundle-root' ? ctx.bundleRoot : mount === 'core-root' ? ctx.coreRoot : ctx.outputRoot;
}


function contextDate(ctx: PathContext): string {
  const d = ctx.variables?.date;
  return typeof d === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(d) ? d : today();
}

const TMP_PREFIX = /^\{tmp\}(.*)$/s;
const MOUNT_PREFIX = /^\{(bundle-root|core-root|output_folder)\}(.*)$/s;
const PROJECT_PREFIX = /^\{project-root\}(.*)$/s;

/** The project's own files: `names` is relative to the project root. */
async function resolveInProject(names: string[], ctx: PathContext & { project: ProjectAccess }, access: Access): Promise<ResolvedPath | ToolFailure> {
  const virtualPath = virtualOf(PROJECT_TOKEN, names);
  const denied = deniedInProject(names);
  if (denied) return violation(PROJECT_TOKEN, denied, virtualPath);
  // The project's real folder was resolved when it was found: a link in its place now moves the
  // whole mount somewhere else.
  const st = await fs.lstat(ctx.projectRoot).catch(() => null);
  if (!st || !st.isDirectory()) return violation(PROJECT_TOKEN, 'the project folder is not a real folder', virtualPath);
  let target: ResolvedPath | ToolFailure;
  if (access === 'write' && ctx.project.everywhere) {
    if (names.length && METHOD_FOLDERS.has(names[0]!.normalize('NFKC').trim().toLowerCase())) {
      return fail('E_READ_ONLY', `${virtualPath} is part of the installed method, which is read-only.`, { path: virtualPath, details: { mount: PROJECT_TOKEN } });
    }
    target = await resolveUnder(ctx.projectRoot, PROJECT_TOKEN, names, 'write', true);
  } else if (access === 'write') {
    const folder = ctx.project.writable.find((w) => {
      const parts = w.split('/');
      return parts.length < names.length && parts.every((p, i) => p === names[i]);
    });
    if (!folder) {
      const allowed = ctx.project.writable.length ? ` or the project folders ${ctx.project.writable.map((w) => `${PROJECT_TOKEN}/${w}`).join(', ')}` : '';
      return fail('E_READ_ONLY', `${virtualPath} is read-only; save documents into {output_folder}${allowed}.`, { path: virtualPath, details: { mount: PROJECT_TOKEN } });
    }
    const depth = folder.split('/').length;
    // The writable folder is a mount of its own: a link inside it cannot leave it.
    target = await resolveUnder(path.join(ctx.projectRoot, ...names.slice(0, depth)), `${PROJECT_TOKEN}/${folder}`, names.slice(depth), 'write', true);
  } else {
    target = await resolveUnder(ctx.projectRoot, PROJECT_TOKEN, names, 'read', false);
  }
  if (!target.ok) return target;
  const realProject = await fs.realpath(ctx.projectRoot).catch(() => null);
  if (!realProject || !isInside(realProject, target.abs)) return violation(PROJECT_TOKEN, 'path leaves the project', virtualPath);
  // A link inside the project may still point at a secret or at the installed method.
  const realNames = path.relative(realProject, target.abs).split(path.sep).filter(Boolean);
  const deniedReal = deniedInProject(realNames);
  if (deniedReal) return violation(PROJECT_TOKEN, deniedReal, virtualPath);
  if (access === 'write' && ctx.project.everywhere && realNames.length && METHOD_FOLDERS.has(realNames[0]!.toLowerCase())) {
    return fail('E_READ_ONLY', `${virtualPath} is part of the installed method, which is read-only.`, { path: virtualPath });
  }
  if (access === 'write') {
    for (const machinery of [ctx.bundleRoot, ctx.coreRoot]) {
      const real = await fs.realpath(machinery).catch(() => null);
      if (real && isInside(real, target.abs)) return fail('E_READ_ONLY', `${virtualPath} is part of the installed method, which is read-only.`, { path: virtualPath });
    }
  }
  return target;
}

/**
 * Turns a path as the model wrote it into a checked server path. Reads of a missing file fail
 * with ENOENT; writes report `exists` instead. Writes land only in `{output_folder}`.
 */
/** Where the command sandbox and the script sandbox show the checkout, the project and the temp folder. */
const SANDBOX_CHECKOUT = '/workspace';
const SANDBOX_PROJECT = '/project';
const SANDBOX_TMP = '/tmp';

function under(text: string, at: string): string | null {
  if (text === at) return '';
  return text.startsWith(`${at}/`) ? text.slice(at.length + 1) : null;
}

/**
 * A path as a sandbox of this project shows it (`/workspace/...` of a command, `/project/...` of
 * a script, `/tmp/...` of a workspace's commands), as the file tools name the same file; null for
 * any other path. The result is resolved like any other path, with every check.
 */
function sandboxAlias(text: string, ctx: PathContext): string | null {
  const inCheckout = ctx.checkoutRoot ? under(text, SANDBOX_CHECKOUT) : null;
  if (inCheckout !== null && ctx.project) {
    const rel = path.relative(ctx.projectRoot, path.join(ctx.checkoutRoot as string, path.posix.normalize(`/${inCheckout}`)));
    if (rel === '') return PROJECT_TOKEN;
    return rel.startsWith('..') || path.isAbsolute(rel) ? null : `${PROJECT_TOKEN}/${rel.split(path.sep).join('/')}`;
  }
  const inProject = ctx.project ? under(text, SANDBOX_PROJECT) : null;
  if (inProject !== null) return inProject ? `${PROJECT_TOKEN}/${inProject}` : PROJECT_TOKEN;
  const inTmp = ctx.tmpRoot ? under(text, SANDBOX_TMP) : null;
  if (inTmp !== null) return inTmp ? `${TMP_TOKEN}/${inTmp}` : TMP_TOKEN;
  return null;
}

export async function resolvePath(
  input: string,
  ctx: PathContext,
  access: Access,
): Promise<ResolvedPath | ToolFailure> {
  if (typeof input !== 'string') return fail('E_INVALID_ARGS', 'A path must be a string');
  if (input.includes('\0')) return violation('none', 'NUL bytes are not allowed in paths');
  if (input.length > MAX_PATH_CHARS) return fail('E_INVALID_ARGS', `Path is longer than ${MAX_PATH_CHARS} characters`);

  const expansion = expandVariables(normaliseInput(input), {
    roots: ctx,
    variables: withoutReserved(ctx.variables),
    date: contextDate(ctx),
  });
  if (expansion.recursive.length) {
    return fail('E_UNRESOLVED_VARIABLE', `Variable(s) refer to themselves: ${expansion.recursive.map((n) => `{${n}}`).join(', ')}`, {
      details: { variables: expansion.recursive },
    });
  }
  if (expansion.unresolved.length) {
    return fail(
      'E_UNRESOLVED_VARIABLE',
      `Unknown variable(s): ${expansion.unresolved.map((n) => `{${n}}`).join(', ')}. Paths may start with {output_folder}, {bundle-root} or {core-root}.`,
      { details: { variables: expansion.unresolved } },
    );
  }
  const text = expansion.text;
  if (text.includes('\0')) return violation('none', 'NUL bytes are not allowed in paths');
  if (text.length > MAX_PATH_CHARS) return fail('E_INVALID_ARGS', `Path is longer than ${MAX_PATH_CHARS} characters`);

  const m = MOUNT_PREFIX.exec(text);
  if (m) {
    const mount = m[1] as MountName;
    const token = MOUNT_TOKENS[mount];
    const rest = m[2];
    if (rest !== '' && !rest.startsWith('/')) return violation(token, `${token} must be followed by "/"`);
    const names = splitRelative(rest, token);
    if (!Array.isArray(names)) return names;
    if (access === 'write' && mount !== 'output_folder') {
      return fail('E_READ_ONLY', `${token} is read-only; save files into {output_folder}.`, {
        path: virtualOf(token, names),
        details: { mount: token },
      });
    }
    if (ctx.project) {
      // In a project every mount is a folder of the project: one swapped for a link to elsewhere is refused.
      const [realMount, realProject] = await Promise.all([fs.realpath(mountRoot(ctx, mount)).catch(() => null), fs.realpath(ctx.projectRoot).catch(() => null)]);
      if (realMount && realProject && !isInside(realProject, realMount)) return violation(token, 'the mount is not inside the project', virtualOf(token, names));
    }
    return resolveUnder(mountRoot(ctx, mount), token, names, access, mount === 'output_folder');
  }

  const tm = TMP_PREFIX.exec(text);
  if (tm) {
    if (!ctx.tmpRoot) return violation('none', `${TMP_TOKEN} exists only in a workspace, for files its commands leave in /tmp`);
    if (tm[1] !== '' && !tm[1].startsWith('/')) return violation(TMP_TOKEN, `${TMP_TOKEN} must be followed by "/"`);
    const names = splitRelative(tm[1], TMP_TOKEN);
    if (!Array.isArray(names)) return names;
    if (access === 'write') return fail('E_READ_ONLY', `${TMP_TOKEN} is read-only for the file tools; only commands write there.`, { path: virtualOf(TMP_TOKEN, names), details: { mount: TMP_TOKEN } });
    return resolveUnder(ctx.tmpRoot, TMP_TOKEN, names, 'read', false);
  }

  const pm = PROJECT_PREFIX.exec(text);
  if (pm && ctx.project) {
    if (pm[1] !== '' && !pm[1].startsWith('/')) return violation(PROJECT_TOKEN, `${PROJECT_TOKEN} must be followed by "/"`);
    const names = splitRelative(pm[1], PROJECT_TOKEN);
    if (!Array.isArray(names)) return names;
    return resolveInProject(names, { ...ctx, project: ctx.project }, access);
  }
  if (text.includes('{project-root}')) {
    return violation('none', ctx.project ? 'a mount variable must start the path' : '{project-root} paths are allowed only inside {bundle-root}, {core-root} or {output_folder}');
  }
  if (/\{(bundle-root|core-root|output_folder)\}/.test(text)) {
    return violation('none', 'a mount variable must start the path');
  }
  const seen = sandboxAlias(text, ctx);
  if (seen) return resolvePath(seen, { ...ctx, checkoutRoot: undefined }, access);
  if (text.startsWith('/') || text.startsWith('\\')) {
    return violation('none', 'absolute paths are not allowed; start with {output_folder}/, {bundle-root}/ or {core-root}/');
  }
  if (/^[A-Za-z]:/.test(text)) return violation('none', 'Windows drive letters are not allowed');
  if (text.startsWith('~')) return violation('none', 'home-folder paths (~) are not allowed');

  const outToken = MOUNT_TOKENS.output_folder;
  const names = splitRelative(text, outToken);
  if (!Array.isArray(names)) return names;

  if (access === 'write') return resolveUnder(ctx.outputRoot, outToken, names, 'write', true);
  if (names.length === 0) return resolveUnder(ctx.bundleRoot, MOUNT_TOKENS['bundle-root'], names, 'read', false);
  const inOutput = await resolveUnder(ctx.outputRoot, outToken, names, 'read', true);
  if (inOutput.ok || inOutput.error.code !== 'ENOENT') return inOutput;
  const inBundle = await resolveUnder(ctx.bundleRoot, MOUNT_TOKENS['bundle-root'], names, 'read', false);
  if (inBundle.ok || inBundle.error.code !== 'ENOENT') return inBundle;
  if (ctx.project) {
    const inProject = await resolveInProject(names, { ...ctx, project: ctx.project }, 'read');
    if (inProject.ok || inProject.error.code !== 'ENOENT') return inProject;
  }
  const rel = names.join('/');
  const looked = ctx.project ? '{output_folder}, {bundle-root} and {project-root}' : '{output_folder} and {bundle-root}';
  return fail('ENOENT', `Not found: ${rel} (looked in ${looked})`, { path: virtualOf(outToken, names) });
}

/**
 * The same checks for one root without variables: serves a conversation's output files over
 * REST. `relativePath` is relative to `rootAbs`; `label` is what messages call the root.
 */
export async function resolveInRoot(
  rootAbs: string,
  relativePath: string,
  access: Access,
  label = MOUNT_TOKENS.output_folder,
): Promise<ResolvedPath | ToolFailure> {
  if (typeof relativePath !== 'string') return fail('E_INVALID_ARGS', 'A path must be a string');
  if (relativePath.includes('\0')) return violation(label, 'NUL bytes are not allowed in paths');
  if (relativePath.length > MAX_PATH_CHARS) return fail('E_INVALID_ARGS', `Path is longer than ${MAX_PATH_CHARS} characters`);
  if (relativePath.startsWith('/') || relativePath.startsWith('\\')) return violation(label, 'absolute paths are not allowed');
  if (/^[A-Za-z]:/.test(relativePath)) return violation(label, 'Windows drive letters are not allowed');
  const names = splitRelative(relativePath, label);
  if (!Array.isArray(names)) return names;
  return resolveUnder(rootAbs, label, names, access, access === 'write');
}

/** The virtual path of a server path inside a mount, or null when it is in none. */
export function toVirtual(abs: string, ctx: Pick<PathContext, 'bundleRoot' | 'coreRoot' | 'outputRoot' | 'projectRoot' | 'project' | 'tmpRoot'>): string | null {
  const mounts: Array<[string, string]> = [
    ...(ctx.tmpRoot ? [[TMP_TOKEN, ctx.tmpRoot] as [string, string]] : []),
    [MOUNT_TOKENS.output_folder, ctx.outputRoot],
    [MOUNT_TOKENS['bundle-root'], ctx.bundleRoot],
    [MOUNT_TOKENS['core-root'], ctx.coreRoot],
    ...(ctx.project ? [[PROJECT_TOKEN, ctx.projectRoot] as [string, string]] : []),
  ];
  mounts.sort((a, b) => b[1].length - a[1].length);
  for (const [token, root] of mounts) {
    if (!isInside(root, abs)) continue;
    const rel = path.relative(root, abs);
    return rel ? `${token}/${rel.split(path.sep).join('/')}` : token;
  }
  return null;
}

/** Replaces any mount root (or the project root) in free text with its token: a last guard for messages. */
export function redactPaths(text: string, ctx: Pick<PathContext, 'bundleRoot' | 'coreRoot' | 'outputRoot' | 'projectRoot' | 'tmpRoot'>): string {
  const pairs: Array<[string, string]> = [
    ...(ctx.tmpRoot ? [[ctx.tmpRoot, TMP_TOKEN] as [string, string]] : []),
    [ctx.outputRoot, MOUNT_TOKENS.output_folder],
    [ctx.bundleRoot, MOUNT_TOKENS['bundle-root']],
    [ctx.coreRoot, MOUNT_TOKENS['core-root']],
    [ctx.projectRoot, '{project-root}'],
  ];
  pairs.sort((a, b) => b[0].length - a[0].length);
  let out = text;
  for (const [abs, token] of pairs) if (abs && abs.length > 1) out = out.split(abs).join(token);
  return out;
}

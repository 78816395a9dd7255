import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isDeniedProjectName, isInside } from '../../core/paths';
import { fail, type ToolFailure } from '../../core/results';
import { clearSetIdNoFollow, type Mount } from '../sandbox';

/** Where the project appears inside the sandbox, with its own layout below. */
export const PROJECT_AT = '/project';

/** Entries of the project walked at most to find what to hide; past that a script is not run. */
export const MAX_SCAN_ENTRIES = 100_000;

export interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

/** A folder the script may change, as the host and the script see it. */
export interface WritableArea {
  host: string;
  at: string;
}

export interface MountPlan {
  projectReal: string;
  mounts: Mount[];
  writable: WritableArea[];
  /** Files of the writable folders before the run (real path → stamp), to tell what changed. */
  before: Map<string, FileStamp>;
}

/** The folders and files a run may use, in the server's terms. */
export interface MountRequest {
  projectRoot: string;
  outputRoot: string;
  /** Project-relative folders the conversation may write besides the output folder. */
  writable: string[];
  /** The installed method: `_bmad/` and the skill folders. Never writable, even inside a writable folder. */
  method: string[];
  /** Folders of the installed method its scripts write (BMAD's `_bmad/render/`); made when missing. */
  methodWritable?: string[];
}

function toSandbox(projectReal: string, real: string): string {
  const rel = path.relative(projectReal, real).split(path.sep).join('/');
  return rel ? `${PROJECT_AT}/${rel}` : PROJECT_AT;
}

async function realDir(p: string): Promise<string | null> {
  const st = await fs.lstat(p).catch(() => null);
  if (!st || !st.isDirectory()) return null;
  return fs.realpath(p).catch(() => null);
}

interface Scan {
  hide: Mount[];
  before: Map<string, FileStamp>;
  tooMany: boolean;
}

/**
 * Walks the project without following links: secrets and machinery (`.env*`, `.git`,
 * `node_modules`, ... at any depth) and special files (sockets a host process listens on, FIFOs,
 * devices) are hidden; files in writable folders are stamped.
 */
export async function scanProject(projectReal: string, writable: string[]): Promise<Scan> {
  const hide: Mount[] = [];
  const before = new Map<string, FileStamp>();
  const stack = [projectReal];
  let seen = 0;
  while (stack.length) {
    const dir = stack.pop() as string;
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    seen += entries.length;
    if (seen > MAX_SCAN_ENTRIES) return { hide, before, tooMany: true };
    const inWritable = writable.some((w) => isInside(w, dir));
    for (const e of entries) {
      const abs = path.join(dir, e.name);
      const at = toSandbox(projectReal, abs);
      if (isDeniedProjectName(e.name)) {
        if (e.isDirectory()) hide.push({ kind: 'hide-dir', at });
        else if (!e.isSymbolicLink()) hide.push({ kind: 'hide-file', at });
        continue;
      }
      if (e.isDirectory()) stack.push(abs);
      else if (e.isSocket() || e.isFIFO() || e.isCharacterDevice() || e.isBlockDevice()) hide.push({ kind: 'hide-file', at });
      else if (e.isFile() && (inWritable || writable.some((w) => isInside(w, abs)))) {
        const st = await fs.lstat(abs).catch(() => null);
        if (st) before.set(abs, { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
      }
    }
  }
  return { hide, before, tooMany: false };
}

/**
 * What the sandbox of one run shows: the project read-only at /project, the conversation's
 * writable folders writable at their place in it, the installed method read-only again wherever
 * a writable folder would hold it, then every secret and special file covered.
 */
export async function planMounts(req: MountRequest): Promise<MountPlan | ToolFailure> {
  const projectReal = await realDir(req.projectRoot);
  if (!projectReal) return fail('E_SANDBOX_VIOLATION', 'Access denied (mount {project-root}): the project folder is not a real folder.');
  const writable: WritableArea[] = [];
  await fs.mkdir(req.outputRoot, { recursive: true }).catch(() => undefined);
  const output = await realDir(req.outputRoot);
  if (!output || !isInside(projectReal, output) || output === projectReal) {
    return fail('E_SANDBOX_VIOLATION', 'Access denied (mount {output_folder}): the output folder is not a folder inside the project, so scripts cannot be given it.');
  }
  writable.push({ host: output, at: toSandbox(projectReal, output) });
  for (const rel of req.writable) {
    if (rel.split('/').some((n) => n === '..' || isDeniedProjectName(n))) continue;
    const real = await realDir(path.join(projectReal, rel));
    if (!real || real === projectReal || !isInside(projectReal, real)) continue;
    writable.push({ host: real, at: toSandbox(projectReal, real) });
  }
  const reopened: WritableArea[] = [];
  for (const dir of req.methodWritable ?? []) {
    await fs.mkdir(dir, { recursive: true }).catch(() => undefined);
    const real = await realDir(dir);
    if (!real || real === projectReal || !isInside(projectReal, real)) continue;
    reopened.push({ host: real, at: toSandbox(projectReal, real) });
  }
  writable.push(...reopened);
  writable.sort((a, b) => a.at.length - b.at.length);
  const scan = await scanProject(projectReal, writable.map((w) => w.host));
  if (scan.tooMany) {
    return fail('E_UNAVAILABLE', `The project holds more than ${MAX_SCAN_ENTRIES.toLocaleString('en')} files and folders (besides .git and node_modules), too many to check for secrets before a script runs; follow the skill's instructions for running without the script.`);
  }
  const mounts: Mount[] = [{ kind: 'ro', host: projectReal, at: PROJECT_AT }];
  for (const w of writable) mounts.push({ kind: 'rw', host: w.host, at: w.at });
  for (const m of req.method) {
    const real = await fs.realpath(m).catch(() => null);
    if (real && isInside(projectReal, real) && writable.some((w) => isInside(w.host, real))) mounts.push({ kind: 'ro', host: real, at: toSandbox(projectReal, real) });
  }
  for (const w of reopened) mounts.push({ kind: 'rw', host: w.host, at: w.at });
  mounts.push(...scan.hide);
  return { projectReal, mounts, writable, before: scan.before };
}

export function sandboxPathOf(plan: Pick<MountPlan, 'projectReal'>, real: string): string {
  return toSandbox(plan.projectReal, real);
}

export interface Changes {
  written: string[];
  removed: string[];
  /** Files whose set-user-ID or set-group-ID bit was cleared. */
  defused: string[];
}

const SETID = 0o6000;

/**
 * What the run changed in the writable folders. A script runs as the server's user: when that is
 * root, a file it marks set-user-ID would be a root program on the host, so such bits are cleared.
 */
export async function collectChanges(plan: MountPlan): Promise<Changes> {
  const written: string[] = [];
  const defused: string[] = [];
  const still = new Set<string>();
  const stack = plan.writable.map((w) => w.host);
  const roots = [...stack];
  const visited = new Set<string>();
  let seen = 0;
  while (stack.length && seen <= MAX_SCAN_ENTRIES) {
    const dir = stack.pop() as string;
    if (visited.has(dir)) continue;
    visited.add(dir);
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    seen += entries.length;
    for (const e of entries) {
      const abs = path.join(dir, e.name);
      if (e.isSymbolicLink()) continue;
      const st = await fs.lstat(abs).catch(() => null);
      if (!st) continue;
      // Changed through its own descriptor: a parallel call swapping a link in meanwhile changes nothing outside.
      if (st.mode & SETID && (st.isFile() || st.isDirectory()) && (await clearSetIdNoFollow(abs, roots))) defused.push(abs);
      if (st.isDirectory()) {
        stack.push(abs);
        continue;
      }
      if (!st.isFile()) continue;
      still.add(abs);
      const was = plan.before.get(abs);
      if (!was || was.size !== st.size || was.mtimeMs !== st.mtimeMs || was.ino !== st.ino) written.push(abs);
    }
  }
  const removed = [...plan.before.keys()].filter((abs) => !still.has(abs));
  return { written: written.sort(), removed: removed.sort(), defused };
}

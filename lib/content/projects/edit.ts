import path from 'node:path';
import { AppError } from '../../core/errors';
import { readResolved, resolvePath, withFileLock, writeFileAtomic, type PathContext, type ResolvedPath } from '../../core/paths';
import { isFailure, sha256, type ToolFailure } from '../../core/results';
import type { Project } from './catalog';
import type { DocumentVersion } from './documents';
import { projectVersions } from './versions';

/** What a person's save answers: the document's new content hash and the version it made. */
export interface SavedDocument {
  /** Relative to the project root, posix. */
  path: string;
  created: boolean;
  sha256: string;
  version: DocumentVersion;
}

export interface DocumentEdit {
  /** Relative to the project root (`_bmad-output/planning-artifacts/prd.md`). */
  path: string;
  content: string;
  /** The sha256 of the content the person edited; required when the file exists. */
  ifMatchSha256?: string;
  /** Who saves it, as the versions name them (`authorOf(caller)`). */
  author: string;
  /** The largest document accepted, in bytes. */
  maxBytes: number;
}

/** A version store author needs a conversation; a person's save through the API has none. */
export const EDITOR_CONVERSATION = 'api';
const MAX_RETRIES = 3;

/** The mounts a project's agents write through: a person's save reaches exactly what they may. */
function projectPaths(project: Project): PathContext {
  return {
    bundleRoot: project.install.root,
    coreRoot: path.join(/*turbopackIgnore: true*/ project.install.root, 'core'),
    projectRoot: project.root,
    outputRoot: project.install.outputRoot,
    project: { writable: project.writable },
    variables: {},
  };
}

function refused(f: ToolFailure, rel: string): never {
  switch (f.error.code) {
    case 'E_READ_ONLY':
      throw new AppError('E_FORBIDDEN', `"${rel}" cannot be changed here: documents are saved in the project's output folder${f.error.message.includes('installed method') ? ' (the installed method is read-only)' : ' or a folder its settings make writable'}.`);
    case 'E_SANDBOX_VIOLATION':
    case 'ENOENT':
    case 'ENOTDIR':
      throw new AppError('E_FILE_NOT_FOUND', `No document "${rel}" in this project.`);
    case 'EISDIR':
      throw new AppError('E_VALIDATION', `"${rel}" is a folder, not a document.`, { field: 'path' });
    case 'E_INVALID_ARGS':
    case 'E_UNRESOLVED_VARIABLE':
      throw new AppError('E_VALIDATION', `Invalid path "${rel}".`, { field: 'path' });
    default:
      throw new AppError('E_INTERNAL', `"${rel}" could not be saved.`);
  }
}

/**
 * A person saves a document of a project: through the sandbox's own write rules (the output
 * folder and the settings' writable folders; never the installed method, secrets or machinery),
 * under the same per-file lock the agents' write tools take, and kept as a version naming them.
 * A document that exists is replaced only when `ifMatchSha256` names its current content, so an
 * edit never silently overwrites a change made meanwhile (409 with the current sha).
 */
export async function saveDocument(dataDir: string, project: Project, edit: DocumentEdit): Promise<SavedDocument> {
  const rel = edit.path.split('/').filter((s) => s && s !== '.').join('/');
  if (!rel || rel.includes('{') || rel.includes('\\') || rel.includes('\0') || rel.split('/').includes('..')) {
    throw new AppError('E_VALIDATION', `Invalid path "${edit.path.slice(0, 200)}".`, { field: 'path' });
  }
  const data = Buffer.from(edit.content, 'utf8');
  if (data.length > edit.maxBytes) throw new AppError('E_TOO_LARGE', `The document is ${data.length} bytes; at most ${edit.maxBytes} can be saved.`);
  const ctx = projectPaths(project);
  const virtual = `{project-root}/${rel}`;
  for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
    const first = await resolvePath(virtual, ctx, 'write');
    if (!first.ok) refused(first, rel);
    const done = await withFileLock(first.abs, async (): Promise<SavedDocument | 'moved'> => {
      const target = await resolvePath(virtual, ctx, 'write');
      if (!target.ok) refused(target, rel);
      if (target.abs !== first.abs) return 'moved';
      return replace(dataDir, project, rel, target, data, edit);
    });
    if (done !== 'moved') return done;
  }
  throw new AppError('E_CONFLICT', `"${rel}" kept moving while it was being saved; try again.`);
}

/** Who made the change a save collided with, as a conflict names it. */
export interface LastChange {
  /** ISO time of the newest recorded version. */
  at: string;
  /** The person who saved, restored, or whose turn the agent wrote it in; null when unknown. */
  person: string | null;
  /** The agent that wrote it, when one did. */
  agentId: string | null;
}

/**
 * The newest recorded version of the document, when it is the content now on disk (a change made
 * outside the tools has no author to name). One read of the file's version list, only on a conflict.
 */
async function lastChangeOf(dataDir: string, project: Project, target: ResolvedPath, rel: string, current: string | null): Promise<LastChange | null> {
  try {
    const store = await projectVersions(dataDir, project);
    const newest = (await store.list(store.relativePath(target.abs) ?? rel))[0];
    if (!newest || (current !== null && newest.sha256 !== current)) return null;
    // A person's editor save is stored as the agent field with the editor's conversation marker.
    if (newest.conversationId === EDITOR_CONVERSATION && newest.agentId) return { at: newest.at, person: newest.agentId, agentId: null };
    if (!newest.agentId) return { at: newest.at, person: newest.by ?? null, agentId: null };
    return { at: newest.at, person: newest.by ?? null, agentId: newest.agentId };
  } catch {
    return null;
  }
}

async function replace(dataDir: string, project: Project, rel: string, target: ResolvedPath, data: Buffer, edit: DocumentEdit): Promise<SavedDocument> {
  if (target.exists && target.kind === 'directory') throw new AppError('E_VALIDATION', `"${rel}" is a folder, not a document.`, { field: 'path' });
  let previous: Buffer | null = null;
  if (target.exists) {
    const read = await readResolved(target, Math.max(edit.maxBytes * 4, 64 * 1024 * 1024));
    if (isFailure(read)) {
      if (read.error.code !== 'ENOENT') refused(read, rel);
    } else previous = read;
  }
  const current = previous ? sha256(previous) : null;
  const wanted = edit.ifMatchSha256?.toLowerCase();
  if (current !== null && wanted !== current) {
    const lastChange = await lastChangeOf(dataDir, project, target, rel, current);
    throw new AppError('E_CONFLICT', wanted ? `"${rel}" changed since it was opened (its sha256 is now ${current}); reload it, then save again.` : `"${rel}" exists: send ifMatchSha256 with the sha256 of the content you edited.`, { response: { currentSha256: current, lastChange } });
  }
  if (current === null && wanted) {
    const lastChange = await lastChangeOf(dataDir, project, target, rel, null);
    throw new AppError('E_CONFLICT', `"${rel}" no longer exists; save it without ifMatchSha256 to create it again.`, { response: { currentSha256: null, lastChange } });
  }
  const written = await writeFileAtomic(target, data);
  if (isFailure(written)) refused(written, rel);
  const store = await projectVersions(dataDir, project);
  const key = store.relativePath(target.abs) ?? rel;
  const version = await store.record({ path: key, content: data, author: { agentId: edit.author, conversationId: EDITOR_CONVERSATION }, previous, tool: 'editor' });
  const info = (await store.list(key)).find((v) => v.version === version);
  return {
    path: rel,
    created: previous === null,
    sha256: written.sha256,
    version: {
      version,
      at: info?.at ?? new Date().toISOString(),
      agentId: edit.author,
      conversationId: EDITOR_CONVERSATION,
      size: data.length,
      kind: info?.kind ?? 'write',
    },
  };
}

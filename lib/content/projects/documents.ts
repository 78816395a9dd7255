import { promises as fs } from 'node:fs';
import path from 'node:path';
import { AppError } from '../../core/errors';
import { isDeniedProjectName, isInside } from '../../core/paths';
import { contentTypeOf, listOutputTree, readOutputFile, type OutputEntry } from '../outputs';
import { isVersionError, type VersionInfo, type VersionKind, type VersionStore } from '../versions';
import { documentFoldersBeyondOutput, type Project } from './catalog';
import { projectVersions } from './versions';

/**
 * Who made a document's current content: an agent (with its conversation), or a person's restore
 * (`person`, no agent).
 */
export interface DocumentWriter {
  agentId: string | null;
  /** null when there is none the caller can open. */
  conversationId: string | null;
  at: string;
  person?: string;
}

/** A document of a project, by its path in the output folder (or in the project, beyond it). */
export interface DocumentFile {
  path: string;
  name: string;
  size: number;
  modifiedAt: string;
  /** Absent for files nobody wrote through the app. */
  lastWriter?: DocumentWriter;
}

/** One kept version of a document, its author as people are shown it. */
export interface DocumentVersion {
  version: string;
  at: string;
  /** null for content found on disk that no agent wrote, and for a person's restore. */
  agentId: string | null;
  /** null when there is none the caller can open. */
  conversationId: string | null;
  /** Who restored it, for a restore a person made. */
  person?: string;
  size: number;
  kind: VersionKind;
  restoredFrom?: string;
  /** The person (or token) whose turn or restore made it. */
  by?: string;
}

/**
 * A project's documents for the API: the files of its shared output folder and of the other
 * folders its config names for documents (`planning_artifacts: docs/planning`), with who last
 * wrote each and every version kept. Paths are relative to the output folder, or to the project
 * for a document in one of those other folders (`docs/planning/prd.md`); the version store keys
 * them relative to the project.
 */
export interface ProjectDocuments {
  list(): Promise<DocumentFile[]>;
  read(relPath: string): Promise<{ name: string; content: Buffer; contentType: string }>;
  versions(relPath: string): Promise<DocumentVersion[]>;
  readVersion(relPath: string, version: string): Promise<{ name: string; content: Buffer; contentType: string }>;
  diff(relPath: string, version: string): Promise<string>;
  /** Writes a version back; `person` is who asked for it (e.g. `authorOf(caller)`), credited on the new version. */
  restore(relPath: string, version: string, person: string): Promise<{ path: string; version: string }>;
}

export interface ProjectDocumentsOptions {
  /**
   * Whether the caller can open a conversation (it exists and they may read it). A version or a
   * last writer naming one they cannot open shows no conversation: a link to it would open nothing.
   */
  canOpenConversation?: (conversationId: string) => Promise<boolean>;
}

/** Restores made before restores named their person were stored with these placeholders. */
const LEGACY_RESTORE = { agentId: 'user', conversationId: 'api' };

/** The author fields as the API shows them: a person (a version with no agent), or an agent and its conversation. */
function authorFields(v: { agentId: string | null; conversationId: string | null; by?: string }): { agentId: string | null; conversationId: string | null; person?: string } {
  if (!v.agentId && v.by) return { agentId: null, conversationId: null, person: v.by };
  if (v.agentId === LEGACY_RESTORE.agentId && v.conversationId === LEGACY_RESTORE.conversationId) return { agentId: null, conversationId: null, person: 'someone' };
  return { agentId: v.agentId, conversationId: v.conversationId };
}

/** Keeps only the conversation ids the caller can open (each asked once). */
async function openable(ids: Array<string | null>, can: ProjectDocumentsOptions['canOpenConversation']): Promise<Set<string>> {
  const distinct = [...new Set(ids.filter((id): id is string => !!id))];
  if (!can) return new Set(distinct);
  const ok = await Promise.all(distinct.map((id) => can(id).catch(() => false)));
  return new Set(distinct.filter((_, i) => ok[i]));
}

function flatten(entries: OutputEntry[]): OutputEntry[] {
  return entries.flatMap((e) => (e.type === 'directory' ? flatten(e.children ?? []) : [e]));
}

function versionError(e: unknown, relPath: string): never {
  if (isVersionError(e)) {
    if (e.code === 'E_UNKNOWN_VERSION' || e.code === 'E_AMBIGUOUS_VERSION') throw new AppError('E_FILE_NOT_FOUND', `No such version of "${relPath}".`);
    if (e.code === 'E_INVALID_PATH') throw new AppError('E_VALIDATION', `Invalid path "${relPath}".`, { field: 'path' });
  }
  throw e;
}

const view = (v: VersionInfo, open: Set<string>): DocumentVersion => {
  const author = authorFields(v);
  return {
    version: v.version,
    at: v.at,
    ...author,
    conversationId: author.conversationId && open.has(author.conversationId) ? author.conversationId : null,
    size: v.size,
    kind: v.kind,
    ...(v.restoredFrom ? { restoredFrom: v.restoredFrom } : {}),
    // Who caused it: whose turn an agent wrote it in, or the person who made it (then also `person`).
    ...(v.by ? { by: v.by } : {}),
  };
};

/** The document folders beyond the output folder, outermost only (one walk covers those inside). */
function outerFolders(project: Project): string[] {
  const all = documentFoldersBeyondOutput(project.root, project.install).sort();
  return all.filter((f, i) => !all.slice(0, i).some((o) => f.startsWith(`${o}/`)));
}

export function projectDocuments(dataDir: string, project: Project, options: ProjectDocumentsOptions = {}): ProjectDocuments {
  const outputRoot = project.install.outputRoot;
  const outputRel = path.relative(project.root, outputRoot).split(path.sep).join('/');
  const folders = outerFolders(project);
  const store = (): Promise<VersionStore> => projectVersions(dataDir, project);
  const clean = (relPath: string): string[] => {
    const parts = relPath.split('/').filter((s) => s && s !== '.');
    if (parts.some((s) => s === '..' || s.includes('\\') || s.includes('\0'))) throw new AppError('E_VALIDATION', `Invalid path "${relPath}".`, { field: 'path' });
    return parts;
  };
  /** The document folder beyond the output folder a path is in, or null for a path in the output folder (or none at all). */
  const folderOf = (relPath: string): string | null => {
    const parts = relPath.split('/').filter((s) => s && s !== '.');
    if (parts.includes('..')) return null;
    return folders.find((f) => parts.join('/').startsWith(`${f}/`)) ?? null;
  };
  const storeKey = (relPath: string): string => {
    const parts = clean(relPath);
    return folderOf(relPath) ? parts.join('/') : `${outputRel}/${parts.join('/')}`;
  };
  /** The real folder, when it is one inside the project (a link to elsewhere is never read). */
  const realFolder = async (folder: string): Promise<string | null> => {
    const real = await fs.realpath(path.join(/*turbopackIgnore: true*/ project.root, folder)).catch(() => null);
    return real && isInside(project.root, real) && real !== project.root ? real : null;
  };
  const readDocument = async (relPath: string) => {
    const folder = folderOf(relPath);
    if (!folder) return readOutputFile(outputRoot, relPath);
    const parts = clean(relPath);
    const rest = parts.slice(folder.split('/').length);
    const real = await realFolder(folder);
    // Hidden, secret and machinery names are never documents, as in the listing and the sandbox.
    if (!real || rest.some((s) => s.startsWith('.') || isDeniedProjectName(s))) throw new AppError('E_FILE_NOT_FOUND', `No output file "${relPath}".`);
    return readOutputFile(real, rest.join('/'));
  };
  /** Every document: the output folder's by their path in it, then the other folders' by their path in the project. */
  const allFiles = async (): Promise<Array<OutputEntry & { key: string }>> => {
    const inOutput = flatten(await listOutputTree(outputRoot))
      // A path that names a folder beyond the output folder means that folder's document.
      .filter((f) => !folderOf(f.path))
      .map((f) => ({ ...f, key: `${outputRel}/${f.path}` }));
    const beyond: Array<OutputEntry & { key: string }> = [];
    for (const folder of folders) {
      const real = await realFolder(folder);
      if (!real) continue;
      for (const f of flatten(await listOutputTree(real).catch(() => []))) {
        const rel = `${folder}/${f.path}`;
        // The output folder's files are listed once, by their path in it.
        if (rel === outputRel || rel.startsWith(`${outputRel}/`) || rel.split('/').some((s) => isDeniedProjectName(s))) continue;
        beyond.push({ ...f, path: rel, key: rel });
      }
    }
    return [...inOutput, ...beyond];
  };

  return {
    async list() {
      const files = await allFiles();
      const writers = new Map((await (await store()).files()).map((f) => [f.path, f]));
      const open = await openable(files.map((f) => writers.get(f.key)?.conversationId ?? null), options.canOpenConversation);
      return files.map((f) => {
        const w = writers.get(f.key);
        const author = w ? authorFields(w) : null;
        const conversationId = author?.conversationId && open.has(author.conversationId) ? author.conversationId : null;
        return {
          path: f.path,
          name: f.name,
          size: f.size ?? 0,
          modifiedAt: f.modifiedAt,
          ...(w && author && (author.agentId || author.person)
            ? { lastWriter: { agentId: author.agentId, conversationId, at: w.at, ...(author.person ? { person: author.person } : {}) } }
            : {}),
        };
      });
    },
    read: readDocument,
    async versions(relPath) {
      const key = storeKey(relPath);
      const list = await (await store()).list(key).catch((e) => versionError(e, relPath));
      // A file no agent wrote yet has no versions; a path that is no file at all is a 404.
      if (!list.length) await readDocument(relPath);
      const open = await openable(list.map((v) => v.conversationId), options.canOpenConversation);
      return list.map((v) => view(v, open));
    },
    async readVersion(relPath, version) {
      const content = await (await store()).read(storeKey(relPath), version).catch((e) => versionError(e, relPath));
      const name = path.posix.basename(relPath);
      return { name, content, contentType: contentTypeOf(name) };
    },
    async diff(relPath, version) {
      return (await store()).diff(storeKey(relPath), version).catch((e) => versionError(e, relPath));
    },
    async restore(relPath, version, person) {
      const key = storeKey(relPath);
      const s = await store();
      // A person restored it, through the UI or the API: credited to them, with no agent and no conversation.
      const restored = await s.restore(key, version, { person }).catch((e) => versionError(e, relPath));
      return { path: relPath, version: restored };
    },
  };
}

import path from 'node:path';
import { AppError } from '../errors';
import { contentTypeOf, listOutputTree, readOutputFile } from '../outputs';
import { VersionError, type VersionInfo, type VersionStore } from '../versions';
import type { OutputFileEntry, ProjectDocument, ProjectDocumentVersion } from '../../types/api';
import type { Project } from './catalog';
import { projectVersions } from './versions';

/**
 * A project's documents for the API: the files of its shared output folder, with who last wrote
 * each and every version kept. Paths are relative to the output folder; the version store keys
 * them relative to the project.
 */
export interface ProjectDocuments {
  list(): Promise<ProjectDocument[]>;
  read(relPath: string): Promise<{ name: string; content: Buffer; contentType: string }>;
  versions(relPath: string): Promise<ProjectDocumentVersion[]>;
  readVersion(relPath: string, version: string): Promise<{ name: string; content: Buffer; contentType: string }>;
  diff(relPath: string, version: string): Promise<string>;
  /** `by`: who restored it (with accounts). */
  restore(relPath: string, version: string, by?: string): Promise<{ path: string; version: string }>;
}

function flatten(entries: OutputFileEntry[]): OutputFileEntry[] {
  return entries.flatMap((e) => (e.type === 'directory' ? flatten(e.children ?? []) : [e]));
}

function versionError(e: unknown, relPath: string): never {
  if (e instanceof VersionError) {
    if (e.code === 'E_UNKNOWN_VERSION' || e.code === 'E_AMBIGUOUS_VERSION') throw new AppError('E_FILE_NOT_FOUND', `No such version of "${relPath}".`);
    if (e.code === 'E_INVALID_PATH') throw new AppError('E_VALIDATION', `Invalid path "${relPath}".`, { field: 'path' });
  }
  throw e;
}

const view = (v: VersionInfo): ProjectDocumentVersion => ({
  version: v.version,
  at: v.at,
  agentId: v.agentId,
  conversationId: v.conversationId,
  size: v.size,
  kind: v.kind,
  ...(v.restoredFrom ? { restoredFrom: v.restoredFrom } : {}),
  ...(v.by ? { by: v.by } : {}),
});

export function projectDocuments(dataDir: string, project: Project): ProjectDocuments {
  const outputRoot = project.install.outputRoot;
  const outputRel = path.relative(project.root, outputRoot).split(path.sep).join('/');
  const store = (): Promise<VersionStore> => projectVersions(dataDir, project);
  const storeKey = (relPath: string): string => {
    const clean = relPath.split('/').filter((s) => s && s !== '.');
    if (clean.some((s) => s === '..' || s.includes('\\') || s.includes('\0'))) throw new AppError('E_VALIDATION', `Invalid path "${relPath}".`, { field: 'path' });
    return `${outputRel}/${clean.join('/')}`;
  };

  return {
    async list() {
      const files = flatten(await listOutputTree(outputRoot));
      const writers = new Map((await (await store()).files()).map((f) => [f.path, f]));
      return files.map((f) => {
        const w = writers.get(`${outputRel}/${f.path}`);
        return {
          path: f.path,
          name: f.name,
          size: f.size ?? 0,
          modifiedAt: f.modifiedAt,
          ...(w && w.agentId ? { lastWriter: { agentId: w.agentId, conversationId: w.conversationId ?? null, at: w.at } } : {}),
        };
      });
    },
    read: (relPath) => readOutputFile(outputRoot, relPath),
    async versions(relPath) {
      const key = storeKey(relPath);
      const list = await (await store()).list(key).catch((e) => versionError(e, relPath));
      // A file no agent wrote yet has no versions; a path that is no file at all is a 404.
      if (!list.length) await readOutputFile(outputRoot, relPath);
      return list.map(view);
    },
    async readVersion(relPath, version) {
      const content = await (await store()).read(storeKey(relPath), version).catch((e) => versionError(e, relPath));
      const name = path.posix.basename(relPath);
      return { name, content, contentType: contentTypeOf(name) };
    },
    async diff(relPath, version) {
      return (await store()).diff(storeKey(relPath), version).catch((e) => versionError(e, relPath));
    },
    async restore(relPath, version, by) {
      const key = storeKey(relPath);
      const s = await store();
      // A person restored it, through the API: no agent, no conversation.
      const restored = await s.restore(key, version, { agentId: 'user', conversationId: 'api', ...(by ? { by } : {}) }).catch((e) => versionError(e, relPath));
      return { path: relPath, version: restored };
    },
  };
}

/**
 * Versions of the files of one folder (a project's output folder, or the whole project), kept in a
 * bare git repository outside it. Wiring for a project conversation:
 *
 *   const store = await openVersionStore({ gitdir: path.join(DATA_DIR, 'versions', projectId), workRoot: outputRoot });
 *   ctx.recordWrite = recorderFor(store, { agentId, conversationId });
 *
 * Store paths are relative to the work root, posix; `store.relativePath(abs)` maps a tool's real
 * path. A hook must not write through the tools itself: it runs inside the file's write lock.
 */
export { openVersionStore, closeVersionStores, recorderFor, storePath, VersionError, isVersionError, type VersionStore, type VersionStoreOptions, type VersionAuthor, type RecordInput, type FileInfo, type VersionErrorCode } from './store';
export type { VersionInfo, VersionKind } from './metadata';

export { openVersionStore, recorderFor, storePath, VersionError, type VersionStore, type VersionStoreOptions, type VersionAuthor, type RecordInput, type FileInfo, type VersionErrorCode } from './store';
export type { VersionInfo, VersionKind } from './metadata';

import type { StoreDatabase } from '../../store/db/store-database';
import { MemoryWorkspaceStore } from './memory-store';
import { SqlWorkspaceStore } from './sql-store';
import type { WorkspaceStore } from './types';

export * from './types';
export { WorkspaceService, gitIdentityEnv, MAX_DIFF_BYTES, type ProjectRef, type Person, type WorkspaceServiceOptions, type DiffResult, type MergeResult, type MergeOptions, type SyncResult, type SyncRefusal, type Dropped } from './service';
export { mergeTrees, repoPathsOf, type TreeMerge } from './union-merge';
export { nameProblem, checkName, MAX_NAME } from './names';
export { MemoryWorkspaceStore } from './memory-store';
export { SqlWorkspaceStore } from './sql-store';

/** The workspaces' rows in the stores' database (as lib/engine/runs' openRunStore). */
export function openWorkspaceStore(database: StoreDatabase): WorkspaceStore {
  if (database.kind === 'memory') return new MemoryWorkspaceStore();
  return SqlWorkspaceStore.open(database, 2);
}

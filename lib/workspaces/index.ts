import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_FILE } from '../conversations';
import { MemoryWorkspaceStore } from './memory-store';
import { SqlWorkspaceStore } from './sql-store';
import type { WorkspaceStore } from './types';

export * from './types';
export { WorkspaceService, gitIdentityEnv, MAX_DIFF_BYTES, type ProjectRef, type Person, type WorkspaceServiceOptions, type DiffResult, type MergeResult, type SyncResult } from './service';
export { nameProblem, checkName, MAX_NAME } from './names';
export { MemoryWorkspaceStore } from './memory-store';
export { SqlWorkspaceStore } from './sql-store';

/** The workspaces' rows in the database the conversations use (as lib/runs' openRunStore). */
export function openWorkspaceStore(config: { store: 'sqlite' | 'memory' | 'postgres'; dataDir: string; databaseUrl?: string }): WorkspaceStore {
  if (config.store === 'memory') return new MemoryWorkspaceStore();
  if (config.store === 'postgres' && config.databaseUrl) return SqlWorkspaceStore.open({ url: config.databaseUrl, poolSize: 2 });
  fs.mkdirSync(config.dataDir, { recursive: true });
  return SqlWorkspaceStore.open({ file: path.join(config.dataDir, DATABASE_FILE) });
}

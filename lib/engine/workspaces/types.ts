export type WorkspaceStatus = 'open' | 'merged' | 'discarded' | 'closed';

/** What the workspace's setup line did (it runs in the command tool's sandbox; kept here). */
export interface SetupOutcome {
  status: 'running' | 'ok' | 'failed' | 'skipped';
  exitCode?: number | null;
  /** Its output, as kept by whoever ran it (already capped); while running, the output so far. */
  output?: string;
  durationMs?: number;
  /** When the setup started (ISO); absent on outcomes stored before it was kept. */
  startedAt?: string;
  /** When this outcome was stored. */
  at: string;
}

export interface Workspace {
  id: string;
  projectId: string;
  name: string;
  /** `bmad/<name>`, a branch of the project repository. */
  branch: string;
  /** The base branch it was made from and merges into. */
  base: string;
  baseCommit: string;
  status: WorkspaceStatus;
  createdBy: string;
  setup: SetupOutcome | null;
  /** The commit the merge made or fast-forwarded to. */
  mergedCommit?: string;
  /** The base branch it was merged into, when, and by whom (a person's name). */
  mergedInto?: string;
  mergedAt?: string;
  mergedBy?: string;
  /** The clone's branch commit the last sync carried (or refused) into the project repository. */
  syncedFrom?: string;
  /** Why that commit was not carried (over the quota...); absent when it was. */
  syncRefused?: string;
  /** The clone's commits whose changes to the method were left out of the branch (and said so). */
  syncDropped?: string[];
  createdAt: string;
  updatedAt: string;
}

export interface FileChange {
  path: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed' | 'copied' | 'typechange' | 'unmerged' | 'unknown';
  /** null for binary files. */
  additions: number | null;
  deletions: number | null;
}

export interface CommitInfo {
  sha: string;
  subject: string;
  author: string;
  date: string;
}

/** A workspace as a list shows it: ahead/behind its base (null when unknown: no branch, or past the list's bound). */
export interface WorkspaceSummary extends Workspace {
  ahead: number | null;
  behind: number | null;
}

export interface WorkspaceDetail extends Workspace {
  /** The branch's commit in the project repository (null if the branch is gone). */
  head: string | null;
  /** Commits on the branch not in the base, and the other way round. */
  ahead: number;
  behind: number;
  files: FileChange[];
  commits: CommitInfo[];
}

/** Build settings of one project. */
export interface BuildSettings {
  enabled: boolean;
  /** null: the branch the project folder has checked out. */
  baseBranch: string | null;
  /** One shell line run once in each new workspace; null for none. */
  setup: string | null;
  /** Non-secret variables for commands. */
  env: Record<string, string>;
  /** One shell line that runs the project's tests in the command sandbox (no network); null for none. */
  test: string | null;
  /** Project-relative files that parallel work only appends to: merged as the union of both sides' lines. */
  appendOnly: string[];
}

export const DEFAULT_BUILD: BuildSettings = { enabled: false, baseBranch: null, setup: null, env: {}, test: null, appendOnly: [] };

export interface NewWorkspace {
  id: string;
  projectId: string;
  name: string;
  branch: string;
  base: string;
  baseCommit: string;
  createdBy: string;
}

export type WorkspacePatch = Partial<Pick<Workspace, 'status' | 'setup' | 'mergedCommit' | 'mergedInto' | 'mergedAt' | 'mergedBy' | 'baseCommit' | 'syncedFrom' | 'syncDropped'>> & {
  /** null clears it. */
  syncRefused?: string | null;
};

/** Thrown by a store when a name is taken in the project (by a workspace not discarded). */
export class NameTakenError extends Error {
  constructor(name: string) {
    super(`A workspace named "${name}" exists.`);
    this.name = 'NameTakenError';
  }
}

/**
 * Build settings and workspace rows, in memory, the SQLite file or Postgres (same behaviour:
 * store-contract.test.ts). A name is unique among a project's workspaces that are not discarded;
 * two inserts of one name at once: one wins, the other throws NameTakenError.
 */
export interface WorkspaceStore {
  getBuild(projectId: string): Promise<BuildSettings | null>;
  /** Fields left out keep their values (or the defaults). */
  putBuild(projectId: string, patch: Partial<BuildSettings>): Promise<BuildSettings>;
  insert(ws: NewWorkspace): Promise<Workspace>;
  get(id: string): Promise<Workspace | null>;
  /** Newest first; discarded ones only with `includeDiscarded`. */
  list(projectId: string, opts?: { includeDiscarded?: boolean }): Promise<Workspace[]>;
  /** Changes a row; with `fromStatus`, only if it still has that status (null otherwise). */
  update(id: string, patch: WorkspacePatch, fromStatus?: WorkspaceStatus): Promise<Workspace | null>;
  /** Removes a row (a creation that failed half-way). */
  remove(id: string): Promise<void>;
  close(): Promise<void>;
}

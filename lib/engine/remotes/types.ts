/** How work reaches the remote: pull requests (the forge's review), or the server pushing its merges to the base. */
export type RemoteMode = 'pull-request' | 'push';
export const REMOTE_MODES: readonly RemoteMode[] = ['pull-request', 'push'];

/** The forge whose API a remote speaks (Forgejo speaks Gitea's); null: plain git, no API. */
export type ForgeKind = 'github' | 'gitlab' | 'gitea';
export const FORGES: readonly ForgeKind[] = ['github', 'gitlab', 'gitea'];

/** The branch the sprint status changes go to when the base refuses them as protected. */
export const STATUS_BRANCH = 'bmad/sprint-status';

/** What the last fetch did. */
export interface LastFetch {
  at: string;
  ok: boolean;
  /** The branch fetched. */
  branch: string;
  /** The remote's head of the branch (null: the remote has no such branch). */
  head?: string | null;
  /** When it failed: the error's code and words (never a token). */
  code?: string;
  message?: string;
}

/** A project's remote as stored: its secrets sealed (lib/store/secrets), never plain. */
export interface StoredRemote {
  projectId: string;
  url: string;
  forge: ForgeKind | null;
  apiUrl: string | null;
  mode: RemoteMode;
  /** The user name sent with the token (null: the forge's usual one). */
  username: string | null;
  /** Sealed token, or null. */
  token: string | null;
  /** Sealed webhook secret, or null. */
  webhookSecret: string | null;
  /** Where status changes go when the base is protected (STATUS_BRANCH), else null. */
  statusBranch: string | null;
  lastFetch: LastFetch | null;
  updatedBy: string | null;
  updatedAt: string;
}

export type RemotePatch = Partial<Pick<StoredRemote, 'url' | 'forge' | 'apiUrl' | 'mode' | 'username' | 'token' | 'webhookSecret' | 'statusBranch' | 'lastFetch'>>;

export type CloneStatus = 'running' | 'ready' | 'failed';

/** A project being made from a Git URL: visible from every instance (it is a row of the stores' database). */
export interface CloneState {
  projectId: string;
  /** The URL (never credentials). */
  url: string;
  branch: string | null;
  status: CloneStatus;
  /** git's own phase words (`receiving objects`), `connecting`, `checking out`... */
  phase: string | null;
  percent: number | null;
  /** When it failed: git's words, cleaned of the token and of server paths. */
  message: string | null;
  /** Once ready: whether the repository holds a BMAD install (else the create flow can give it one). */
  installed: boolean | null;
  createdBy: string | null;
  /** Renewed while the clone runs; a running clone whose heartbeat is old was interrupted. */
  heartbeatAt: string;
  createdAt: string;
  updatedAt: string;
}

export type ClonePatch = Partial<Pick<CloneState, 'status' | 'phase' | 'percent' | 'message' | 'installed' | 'branch' | 'heartbeatAt'>>;

/** A running clone whose heartbeat is older than this was interrupted (its process is gone). */
export const CLONE_STALE_MS = 60_000;

/**
 * Remotes and clones in memory, the SQLite file or Postgres (the same behaviour). Every change is
 * one statement; a clone is claimed by one conditional insert or update, so two claims of one id
 * (on any instances) cannot both win.
 */
export interface RemoteStore {
  get(projectId: string): Promise<StoredRemote | null>;
  /** Creates (with `url`) or changes a remote; fields left out keep their values. */
  put(projectId: string, patch: RemotePatch, by: string | null): Promise<StoredRemote>;
  remove(projectId: string): Promise<void>;
  list(): Promise<StoredRemote[]>;
  getClone(projectId: string): Promise<CloneState | null>;
  /**
   * Claims `projectId` for a clone: true when no clone of it exists, or the one that does failed
   * or was interrupted (heartbeat before `staleBefore`); false when one runs or is ready.
   */
  claimClone(row: Pick<CloneState, 'projectId' | 'url' | 'branch' | 'createdBy'>, staleBefore: string): Promise<boolean>;
  /** Changes a clone; with `fromStatus`, only while it has that status (null otherwise). */
  updateClone(projectId: string, patch: ClonePatch, fromStatus?: CloneStatus): Promise<CloneState | null>;
  removeClone(projectId: string): Promise<void>;
  close(): Promise<void>;
}

import type { AppDatabase } from '../../store/db/database';
import type { SqlStoreDatabase } from '../../store/db/store-database';
import type { ClonePatch, CloneState, CloneStatus, ForgeKind, LastFetch, RemoteMode, RemotePatch, RemoteStore, StoredRemote } from './types';

interface RemoteRow {
  project_id: string;
  url: string;
  forge: string | null;
  api_url: string | null;
  mode: string;
  username: string | null;
  token: string | null;
  webhook_secret: string | null;
  status_branch: string | null;
  last_fetch: string | null;
  updated_by: string | null;
  updated_at: string;
}

interface CloneRow {
  project_id: string;
  url: string;
  branch: string | null;
  status: CloneStatus;
  phase: string | null;
  percent: number | string | null;
  message: string | null;
  installed: number | string | null;
  created_by: string | null;
  heartbeat_at: string;
  created_at: string;
  updated_at: string;
}

function toRemote(r: RemoteRow): StoredRemote {
  return {
    projectId: r.project_id,
    url: r.url,
    forge: (r.forge as ForgeKind | null) ?? null,
    apiUrl: r.api_url,
    mode: r.mode as RemoteMode,
    username: r.username,
    token: r.token,
    webhookSecret: r.webhook_secret,
    statusBranch: r.status_branch,
    lastFetch: r.last_fetch ? (JSON.parse(r.last_fetch) as LastFetch) : null,
    updatedBy: r.updated_by,
    updatedAt: r.updated_at,
  };
}

function toClone(r: CloneRow): CloneState {
  return {
    projectId: r.project_id,
    url: r.url,
    branch: r.branch,
    status: r.status,
    phase: r.phase,
    percent: r.percent === null ? null : Number(r.percent),
    message: r.message,
    installed: r.installed === null ? null : Number(r.installed) === 1,
    createdBy: r.created_by,
    heartbeatAt: r.heartbeat_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const COLUMNS: Record<keyof RemotePatch, string> = {
  url: 'url',
  forge: 'forge',
  apiUrl: 'api_url',
  mode: 'mode',
  username: 'username',
  token: 'token',
  webhookSecret: 'webhook_secret',
  statusBranch: 'status_branch',
  lastFetch: 'last_fetch',
};

function columnsOf(patch: RemotePatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, col] of Object.entries(COLUMNS) as [keyof RemotePatch, string][]) {
    const v = patch[k];
    if (v === undefined) continue;
    out[col] = k === 'lastFetch' ? (v === null ? null : JSON.stringify(v)) : v;
  }
  return out;
}

function isUniqueViolation(e: unknown): boolean {
  const code = String((e as { code?: unknown })?.code ?? '');
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Remotes and clones in the stores' database (SQLite file or Postgres), one statement per change. */
export class SqlRemoteStore implements RemoteStore {
  private closed = false;

  constructor(private readonly database: AppDatabase) {}

  static open(database: SqlStoreDatabase, poolSize?: number): SqlRemoteStore {
    return new SqlRemoteStore(database.kind === 'postgres' ? database.open({ poolSize }) : database.open());
  }

  private async db() {
    await this.database.ready();
    return this.database.db;
  }

  async get(projectId: string): Promise<StoredRemote | null> {
    const row = await (await this.db()).selectFrom('project_remotes').selectAll().where('project_id', '=', projectId).executeTakeFirst();
    return row ? toRemote(row as RemoteRow) : null;
  }

  async put(projectId: string, patch: RemotePatch, by: string | null): Promise<StoredRemote> {
    const db = await this.db();
    const now = new Date().toISOString();
    const set = { ...columnsOf(patch), updated_by: by, updated_at: now };
    if (!patch.url) {
      // A change of an existing remote only: without a url there is nothing to create.
      const row = await db.updateTable('project_remotes').set(set).where('project_id', '=', projectId).returningAll().executeTakeFirst();
      if (!row) throw new Error('A new remote needs a url.');
      return toRemote(row as RemoteRow);
    }
    const row = await db
      .insertInto('project_remotes')
      .values({ project_id: projectId, mode: 'pull-request', ...set } as never)
      .onConflict((oc) => oc.column('project_id').doUpdateSet(set as never))
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRemote(row as RemoteRow);
  }

  async remove(projectId: string): Promise<void> {
    await (await this.db()).deleteFrom('project_remotes').where('project_id', '=', projectId).execute();
  }

  async list(): Promise<StoredRemote[]> {
    const rows = await (await this.db()).selectFrom('project_remotes').selectAll().orderBy('project_id').execute();
    return rows.map((r) => toRemote(r as RemoteRow));
  }

  async getClone(projectId: string): Promise<CloneState | null> {
    const row = await (await this.db()).selectFrom('project_clones').selectAll().where('project_id', '=', projectId).executeTakeFirst();
    return row ? toClone(row as CloneRow) : null;
  }

  async claimClone(row: Pick<CloneState, 'projectId' | 'url' | 'branch' | 'createdBy'>, staleBefore: string): Promise<boolean> {
    const db = await this.db();
    const now = new Date().toISOString();
    const values = { project_id: row.projectId, url: row.url, branch: row.branch, status: 'running', phase: 'connecting', percent: null, message: null, installed: null, created_by: row.createdBy, heartbeat_at: now, created_at: now, updated_at: now };
    try {
      await db.insertInto('project_clones').values(values as never).execute();
      return true;
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
    }
    // Taken over only from a clone that failed or whose process is gone: one conditional update.
    const { project_id: _id, ...rest } = values;
    const taken = await db
      .updateTable('project_clones')
      .set(rest as never)
      .where('project_id', '=', row.projectId)
      .where((eb) => eb.or([eb('status', '=', 'failed'), eb.and([eb('status', '=', 'running'), eb('heartbeat_at', '<', staleBefore)])]))
      .returning('project_id')
      .executeTakeFirst();
    return !!taken;
  }

  async updateClone(projectId: string, patch: ClonePatch, fromStatus?: CloneStatus): Promise<CloneState | null> {
    const set: Record<string, unknown> = { updated_at: new Date().toISOString() };
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.phase !== undefined) set.phase = patch.phase;
    if (patch.percent !== undefined) set.percent = patch.percent;
    if (patch.message !== undefined) set.message = patch.message;
    if (patch.installed !== undefined) set.installed = patch.installed === null ? null : patch.installed ? 1 : 0;
    if (patch.branch !== undefined) set.branch = patch.branch;
    if (patch.heartbeatAt !== undefined) set.heartbeat_at = patch.heartbeatAt;
    let q = (await this.db()).updateTable('project_clones').set(set as never).where('project_id', '=', projectId);
    if (fromStatus) q = q.where('status', '=', fromStatus);
    const row = await q.returningAll().executeTakeFirst();
    return row ? toClone(row as CloneRow) : null;
  }

  async removeClone(projectId: string): Promise<void> {
    await (await this.db()).deleteFrom('project_clones').where('project_id', '=', projectId).execute();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}

import type { AppDatabase } from '../../store/db/database';
import type { SqlStoreDatabase } from '../../store/db/store-database';
import { DEFAULT_BUILD, NameTakenError, type BuildSettings, type NewWorkspace, type SetupOutcome, type Workspace, type WorkspacePatch, type WorkspaceStatus, type WorkspaceStore } from './types';

interface WorkspaceRow {
  id: string;
  project_id: string;
  name: string;
  branch: string;
  base: string;
  base_commit: string;
  status: WorkspaceStatus;
  created_by: string;
  setup: string | null;
  merged_commit: string | null;
  merged_into?: string | null;
  merged_at?: string | null;
  merged_by?: string | null;
  synced_from?: string | null;
  sync_refused?: string | null;
  sync_dropped?: string | null;
  created_at: string;
  updated_at: string;
}

interface BuildRow {
  project_id: string;
  enabled: number | string;
  base_branch: string | null;
  setup: string | null;
  env: string;
  test?: string | null;
  append_only?: string | null;
}

function toWorkspace(r: WorkspaceRow): Workspace {
  return {
    id: r.id,
    projectId: r.project_id,
    name: r.name,
    branch: r.branch,
    base: r.base,
    baseCommit: r.base_commit,
    status: r.status,
    createdBy: r.created_by,
    setup: r.setup !== null ? (JSON.parse(r.setup) as SetupOutcome) : null,
    ...(r.merged_commit !== null ? { mergedCommit: r.merged_commit } : {}),
    ...(r.merged_into ? { mergedInto: r.merged_into } : {}),
    ...(r.merged_at ? { mergedAt: r.merged_at } : {}),
    ...(r.merged_by ? { mergedBy: r.merged_by } : {}),
    ...(r.synced_from ? { syncedFrom: r.synced_from } : {}),
    ...(r.sync_refused ? { syncRefused: r.sync_refused } : {}),
    ...(r.sync_dropped ? { syncDropped: r.sync_dropped.split(' ').filter(Boolean) } : {}),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toBuild(r: BuildRow): BuildSettings {
  return {
    enabled: Number(r.enabled) === 1,
    baseBranch: r.base_branch,
    setup: r.setup,
    env: JSON.parse(r.env) as Record<string, string>,
    test: r.test ?? null,
    appendOnly: r.append_only ? (JSON.parse(r.append_only) as string[]) : [],
  };
}

/** A unique index refused the row (Postgres 23505, SQLite's constraint codes). */
function isUniqueViolation(e: unknown): boolean {
  const code = String((e as { code?: unknown })?.code ?? '');
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Workspaces and build settings in the stores' database (SQLite file or Postgres), one statement per change. */
export class SqlWorkspaceStore implements WorkspaceStore {
  private closed = false;

  /** The store owns `database` and closes it. */
  constructor(private readonly database: AppDatabase) {}

  /** A store on its own handle of the stores' database (a pool of `poolSize` on Postgres). */
  static open(database: SqlStoreDatabase, poolSize?: number): SqlWorkspaceStore {
    return new SqlWorkspaceStore(database.kind === 'postgres' ? database.open({ poolSize }) : database.open());
  }

  private async db() {
    await this.database.ready();
    return this.database.db;
  }

  async getBuild(projectId: string): Promise<BuildSettings | null> {
    const row = await (await this.db()).selectFrom('build_settings').selectAll().where('project_id', '=', projectId).executeTakeFirst();
    return row ? toBuild(row as BuildRow) : null;
  }

  async putBuild(projectId: string, patch: Partial<BuildSettings>): Promise<BuildSettings> {
    const db = await this.db();
    const now = new Date().toISOString();
    const set: Record<string, unknown> = { updated_at: now };
    if (patch.enabled !== undefined) set.enabled = patch.enabled ? 1 : 0;
    if (patch.baseBranch !== undefined) set.base_branch = patch.baseBranch;
    if (patch.setup !== undefined) set.setup = patch.setup;
    if (patch.env !== undefined) set.env = JSON.stringify(patch.env);
    if (patch.test !== undefined) set.test = patch.test;
    if (patch.appendOnly !== undefined) set.append_only = JSON.stringify(patch.appendOnly);
    const first = { ...DEFAULT_BUILD, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) } as BuildSettings;
    // One statement: two writers of different fields at once both keep theirs.
    const row = await db
      .insertInto('build_settings')
      .values({ project_id: projectId, enabled: first.enabled ? 1 : 0, base_branch: first.baseBranch, setup: first.setup, env: JSON.stringify(first.env), test: first.test, append_only: JSON.stringify(first.appendOnly), updated_at: now })
      .onConflict((oc) => oc.column('project_id').doUpdateSet(set))
      .returningAll()
      .executeTakeFirstOrThrow();
    return toBuild(row as BuildRow);
  }

  async insert(ws: NewWorkspace): Promise<Workspace> {
    const now = new Date().toISOString();
    try {
      const row = await (await this.db())
        .insertInto('workspaces')
        .values({
          id: ws.id,
          project_id: ws.projectId,
          name: ws.name,
          branch: ws.branch,
          base: ws.base,
          base_commit: ws.baseCommit,
          status: 'open',
          created_by: ws.createdBy,
          setup: null,
          merged_commit: null,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toWorkspace(row as WorkspaceRow);
    } catch (e) {
      if (isUniqueViolation(e)) throw new NameTakenError(ws.name);
      throw e;
    }
  }

  async get(id: string): Promise<Workspace | null> {
    const row = await (await this.db()).selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toWorkspace(row as WorkspaceRow) : null;
  }

  async list(projectId: string, opts: { includeDiscarded?: boolean } = {}): Promise<Workspace[]> {
    let q = (await this.db()).selectFrom('workspaces').selectAll().where('project_id', '=', projectId);
    if (!opts.includeDiscarded) q = q.where('status', '<>', 'discarded');
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
    return rows.map((r) => toWorkspace(r as WorkspaceRow));
  }

  async update(id: string, patch: WorkspacePatch, fromStatus?: WorkspaceStatus): Promise<Workspace | null> {
    const set: Record<string, unknown> = { updated_at: new Date().toISOString() };
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.setup !== undefined) set.setup = patch.setup === null ? null : JSON.stringify(patch.setup);
    if (patch.mergedCommit !== undefined) set.merged_commit = patch.mergedCommit;
    if (patch.mergedInto !== undefined) set.merged_into = patch.mergedInto;
    if (patch.mergedAt !== undefined) set.merged_at = patch.mergedAt;
    if (patch.mergedBy !== undefined) set.merged_by = patch.mergedBy;
    if (patch.syncedFrom !== undefined) set.synced_from = patch.syncedFrom;
    if (patch.syncRefused !== undefined) set.sync_refused = patch.syncRefused;
    if (patch.syncDropped !== undefined) set.sync_dropped = patch.syncDropped.join(' ');
    if (patch.baseCommit !== undefined) set.base_commit = patch.baseCommit;
    let q = (await this.db()).updateTable('workspaces').set(set).where('id', '=', id);
    if (fromStatus) q = q.where('status', '=', fromStatus);
    const row = await q.returningAll().executeTakeFirst();
    return row ? toWorkspace(row as WorkspaceRow) : null;
  }

  async remove(id: string): Promise<void> {
    await (await this.db()).deleteFrom('workspaces').where('id', '=', id).execute();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}

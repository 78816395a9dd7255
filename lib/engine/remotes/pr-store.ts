import type { AppDatabase } from '../../store/db/database';
import type { SqlStoreDatabase, StoreDatabase } from '../../store/db/store-database';
import type { ChecksSummary, PullRequestState } from './forge';

/** A workspace's pull request (GitLab: merge request) as the server last knew it. */
export interface StoredPullRequest {
  workspaceId: string;
  projectId: string;
  /** `bmad/<name>`, pushed. */
  branch: string;
  base: string;
  number: number;
  url: string;
  state: PullRequestState;
  draft: boolean;
  /** The head commit the forge last reported (its checks are read for it). */
  headSha: string | null;
  /** The ETag of the last read, for a conditional one next. */
  etag: string | null;
  checks: ChecksSummary | null;
  /** Said to people about its last change (closed without a merge...). */
  note: string | null;
  /** The commit last pushed from here. */
  pushedHead: string | null;
  createdAt: string;
  updatedAt: string;
}

export type PullRequestPatch = Partial<Pick<StoredPullRequest, 'url' | 'state' | 'draft' | 'headSha' | 'etag' | 'checks' | 'note' | 'pushedHead' | 'number'>>;

/**
 * Pull requests per workspace, the webhook deliveries already acted on, and the poller's lease:
 * in memory, the SQLite file or Postgres, each change one statement. A state change is
 * conditional (`fromState`), so the same news twice — a delivery repeated, a webhook and a poll, two
 * instances — changes the board once.
 */
export interface PullRequestStore {
  get(workspaceId: string): Promise<StoredPullRequest | null>;
  byNumber(projectId: string, number: number): Promise<StoredPullRequest | null>;
  list(projectId: string): Promise<StoredPullRequest[]>;
  /** Every project's open ones (the poller's). */
  listOpen(): Promise<StoredPullRequest[]>;
  /** Creates or replaces the workspace's row. */
  put(row: Omit<StoredPullRequest, 'createdAt' | 'updatedAt'>): Promise<StoredPullRequest>;
  /** Changes a row; with `fromState`, only while it has that state (null otherwise). */
  update(workspaceId: string, patch: PullRequestPatch, fromState?: PullRequestState): Promise<StoredPullRequest | null>;
  /** True the first time a delivery id of the project is claimed; false ever after. */
  claimDelivery(projectId: string, deliveryId: string): Promise<boolean>;
  /** Forgets a claim whose delivery failed, so the forge's retry is acted on. */
  releaseDelivery(projectId: string, deliveryId: string): Promise<void>;
  /** Takes (or renews) the lease `name` for `holder` until now + ms, unless another holds it unexpired. */
  takeLease(name: string, holder: string, ms: number): Promise<boolean>;
  close(): Promise<void>;
}

const DELIVERY_KEEP_MS = 7 * 24 * 3600_000;

export class MemoryPullRequestStore implements PullRequestStore {
  private readonly rows = new Map<string, StoredPullRequest>();
  private readonly deliveries = new Map<string, number>();
  private readonly leases = new Map<string, { holder: string; until: number }>();

  async get(workspaceId: string) {
    const r = this.rows.get(workspaceId);
    return r ? structuredClone(r) : null;
  }
  async byNumber(projectId: string, number: number) {
    for (const r of this.rows.values()) if (r.projectId === projectId && r.number === number) return structuredClone(r);
    return null;
  }
  async list(projectId: string) {
    return [...this.rows.values()].filter((r) => r.projectId === projectId).map((r) => structuredClone(r));
  }
  async listOpen() {
    return [...this.rows.values()].filter((r) => r.state === 'open').map((r) => structuredClone(r));
  }
  async put(row: Omit<StoredPullRequest, 'createdAt' | 'updatedAt'>) {
    const now = new Date().toISOString();
    const next = { ...row, createdAt: this.rows.get(row.workspaceId)?.createdAt ?? now, updatedAt: now };
    this.rows.set(row.workspaceId, structuredClone(next));
    return next;
  }
  async update(workspaceId: string, patch: PullRequestPatch, fromState?: PullRequestState) {
    const old = this.rows.get(workspaceId);
    if (!old || (fromState && old.state !== fromState)) return null;
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    const next = { ...old, ...defined, updatedAt: new Date().toISOString() };
    this.rows.set(workspaceId, next);
    return structuredClone(next);
  }
  async claimDelivery(projectId: string, deliveryId: string) {
    const key = `${projectId}\0${deliveryId}`;
    if (this.deliveries.has(key)) return false;
    this.deliveries.set(key, Date.now());
    return true;
  }
  async releaseDelivery(projectId: string, deliveryId: string) {
    this.deliveries.delete(`${projectId}\0${deliveryId}`);
  }
  async takeLease(name: string, holder: string, ms: number) {
    const l = this.leases.get(name);
    if (l && l.holder !== holder && l.until > Date.now()) return false;
    this.leases.set(name, { holder, until: Date.now() + ms });
    return true;
  }
  async close() {}
}

interface Row {
  workspace_id: string;
  project_id: string;
  branch: string;
  base: string;
  number: number | string;
  url: string;
  state: PullRequestState;
  draft: number | string | null;
  head_sha: string | null;
  etag: string | null;
  checks: string | null;
  note: string | null;
  pushed_head: string | null;
  created_at: string;
  updated_at: string;
}

function toRow(r: Row): StoredPullRequest {
  return {
    workspaceId: r.workspace_id,
    projectId: r.project_id,
    branch: r.branch,
    base: r.base,
    number: Number(r.number),
    url: r.url,
    state: r.state,
    draft: Number(r.draft ?? 0) === 1,
    headSha: r.head_sha,
    etag: r.etag,
    checks: r.checks ? (JSON.parse(r.checks) as ChecksSummary) : null,
    note: r.note,
    pushedHead: r.pushed_head,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const COLUMNS: Record<keyof PullRequestPatch, string> = { url: 'url', state: 'state', draft: 'draft', headSha: 'head_sha', etag: 'etag', checks: 'checks', note: 'note', pushedHead: 'pushed_head', number: 'number' };

function columnsOf(patch: PullRequestPatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, col] of Object.entries(COLUMNS) as [keyof PullRequestPatch, string][]) {
    const v = patch[k];
    if (v === undefined) continue;
    out[col] = k === 'checks' ? (v === null ? null : JSON.stringify(v)) : k === 'draft' ? (v ? 1 : 0) : v;
  }
  return out;
}

function isUniqueViolation(e: unknown): boolean {
  const code = String((e as { code?: unknown })?.code ?? '');
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export class SqlPullRequestStore implements PullRequestStore {
  private closed = false;

  constructor(private readonly database: AppDatabase) {}

  static open(database: SqlStoreDatabase, poolSize?: number): SqlPullRequestStore {
    return new SqlPullRequestStore(database.kind === 'postgres' ? database.open({ poolSize }) : database.open());
  }

  private async db() {
    await this.database.ready();
    return this.database.db;
  }

  async get(workspaceId: string) {
    const row = await (await this.db()).selectFrom('workspace_pull_requests').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
    return row ? toRow(row as Row) : null;
  }

  async byNumber(projectId: string, number: number) {
    const row = await (await this.db()).selectFrom('workspace_pull_requests').selectAll().where('project_id', '=', projectId).where('number', '=', number).orderBy('updated_at', 'desc').executeTakeFirst();
    return row ? toRow(row as Row) : null;
  }

  async list(projectId: string) {
    const rows = await (await this.db()).selectFrom('workspace_pull_requests').selectAll().where('project_id', '=', projectId).execute();
    return rows.map((r) => toRow(r as Row));
  }

  async listOpen() {
    const rows = await (await this.db()).selectFrom('workspace_pull_requests').selectAll().where('state', '=', 'open').orderBy('updated_at').limit(1000).execute();
    return rows.map((r) => toRow(r as Row));
  }

  async put(row: Omit<StoredPullRequest, 'createdAt' | 'updatedAt'>) {
    const now = new Date().toISOString();
    const set = { project_id: row.projectId, branch: row.branch, base: row.base, ...columnsOf(row), updated_at: now };
    const out = await (await this.db())
      .insertInto('workspace_pull_requests')
      .values({ workspace_id: row.workspaceId, ...set, created_at: now } as never)
      .onConflict((oc) => oc.column('workspace_id').doUpdateSet(set as never))
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRow(out as Row);
  }

  async update(workspaceId: string, patch: PullRequestPatch, fromState?: PullRequestState) {
    let q = (await this.db())
      .updateTable('workspace_pull_requests')
      .set({ ...columnsOf(patch), updated_at: new Date().toISOString() } as never)
      .where('workspace_id', '=', workspaceId);
    if (fromState) q = q.where('state', '=', fromState);
    const row = await q.returningAll().executeTakeFirst();
    return row ? toRow(row as Row) : null;
  }

  async claimDelivery(projectId: string, deliveryId: string) {
    const db = await this.db();
    const now = Date.now();
    try {
      await db.insertInto('forge_deliveries').values({ project_id: projectId, delivery_id: deliveryId, received_at: new Date(now).toISOString() } as never).execute();
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
    // Forges redeliver within hours or days; older ids are forgotten.
    await db.deleteFrom('forge_deliveries').where('received_at', '<', new Date(now - DELIVERY_KEEP_MS).toISOString()).execute();
    return true;
  }

  async releaseDelivery(projectId: string, deliveryId: string) {
    await (await this.db()).deleteFrom('forge_deliveries').where('project_id', '=', projectId).where('delivery_id', '=', deliveryId).execute();
  }

  async takeLease(name: string, holder: string, ms: number) {
    const now = new Date().toISOString();
    const until = new Date(Date.now() + ms).toISOString();
    // One statement: taken when free, expired, or already this holder's.
    const row = await (await this.db())
      .insertInto('forge_leases')
      .values({ name, holder, expires_at: until } as never)
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ holder, expires_at: until } as never)
          .where((eb) => eb.or([eb('forge_leases.expires_at', '<', now), eb('forge_leases.holder', '=', holder)])),
      )
      .returning('name')
      .executeTakeFirst();
    return !!row;
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}

export function openPullRequestStore(database: StoreDatabase): PullRequestStore {
  if (database.kind === 'memory') return new MemoryPullRequestStore();
  return SqlPullRequestStore.open(database, 2);
}

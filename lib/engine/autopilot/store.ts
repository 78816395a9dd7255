import type { AppDatabase } from '../../store/db/database';
import type { SqlStoreDatabase, StoreDatabase } from '../../store/db/store-database';
import { DEFAULT_SETTINGS, type AutopilotSettings, type AutopilotState, type AutopilotStore, type DecisionRow, type PersonRef, type PipelinePatch, type PipelineRow } from './types';

interface StateRow {
  project_id: string;
  settings: string;
  enabled: number | string;
  enabled_by: string | null;
  paused: string | null;
  holder: string | null;
  lease_until: string | null;
  updated_at: string;
}

interface StoryRow {
  project_id: string;
  story_key: string;
  step: string;
  round: number | string;
  since: string;
  note: string | null;
  workspace_id: string | null;
  run_id: string | null;
  run_kind: string | null;
  skip_gate: number | string;
  version: number | string;
}

interface DecisionDbRow {
  id: string;
  project_id: string;
  story_key: string | null;
  kind: string;
  text: string;
  detail: string | null;
  run_id: string | null;
  actions: string;
  since: string;
  resolved_at: string | null;
}

function toState(r: StateRow): AutopilotState {
  return {
    projectId: r.project_id,
    settings: { ...DEFAULT_SETTINGS, ...(JSON.parse(r.settings) as Partial<AutopilotSettings>), enabled: Number(r.enabled) === 1 },
    enabledBy: r.enabled_by ? (JSON.parse(r.enabled_by) as PersonRef) : null,
    paused: r.paused ? (JSON.parse(r.paused) as AutopilotState['paused']) : null,
    updatedAt: r.updated_at,
  };
}

function toStory(r: StoryRow): PipelineRow {
  return {
    projectId: r.project_id,
    storyKey: r.story_key,
    step: r.step as PipelineRow['step'],
    round: Number(r.round),
    since: r.since,
    note: r.note,
    workspaceId: r.workspace_id,
    runId: r.run_id,
    runKind: r.run_kind as PipelineRow['runKind'],
    skipGate: Number(r.skip_gate) === 1,
    version: Number(r.version),
  };
}

function toDecision(r: DecisionDbRow): DecisionRow {
  return {
    id: r.id,
    projectId: r.project_id,
    storyKey: r.story_key,
    kind: r.kind as DecisionRow['kind'],
    text: r.text,
    detail: r.detail,
    runId: r.run_id,
    actions: JSON.parse(r.actions) as DecisionRow['actions'],
    since: r.since,
    resolvedAt: r.resolved_at,
  };
}

function storySet(patch: PipelinePatch, version: number, now: string): Record<string, unknown> {
  const set: Record<string, unknown> = { version: version + 1 };
  if (patch.step !== undefined) {
    set.step = patch.step;
    set.since = now;
  }
  if (patch.round !== undefined) set.round = patch.round;
  if (patch.note !== undefined) set.note = patch.note;
  if (patch.workspaceId !== undefined) set.workspace_id = patch.workspaceId;
  if (patch.runId !== undefined) set.run_id = patch.runId;
  if (patch.runKind !== undefined) set.run_kind = patch.runKind;
  if (patch.skipGate !== undefined) set.skip_gate = patch.skipGate ? 1 : 0;
  return set;
}

/** The autopilot in the stores' database (SQLite file or Postgres): one statement per change. */
export class SqlAutopilotStore implements AutopilotStore {
  private closed = false;

  constructor(private readonly database: AppDatabase) {}

  static open(database: SqlStoreDatabase, poolSize?: number): SqlAutopilotStore {
    return new SqlAutopilotStore(database.kind === 'postgres' ? database.open({ poolSize }) : database.open());
  }

  private async db() {
    await this.database.ready();
    return this.database.db;
  }

  async get(projectId: string): Promise<AutopilotState | null> {
    const row = await (await this.db()).selectFrom('autopilot_settings').selectAll().where('project_id', '=', projectId).executeTakeFirst();
    return row ? toState(row as StateRow) : null;
  }

  async projects(): Promise<string[]> {
    const db = await this.db();
    const on = await db.selectFrom('autopilot_settings').select('project_id').where('enabled', '=', 1).execute();
    const busy = await db.selectFrom('autopilot_stories').select('project_id').where('step', 'not in', ['merged', 'held', 'stopped']).distinct().execute();
    return [...new Set([...on, ...busy].map((r) => (r as { project_id: string }).project_id))];
  }

  async putSettings(projectId: string, settings: AutopilotSettings, enabledBy: PersonRef | null | undefined): Promise<AutopilotState> {
    const now = new Date().toISOString();
    const { enabled, ...rest } = settings;
    const set: Record<string, unknown> = { settings: JSON.stringify(rest), enabled: enabled ? 1 : 0, updated_at: now };
    if (enabledBy !== undefined) set.enabled_by = enabledBy ? JSON.stringify(enabledBy) : null;
    const row = await (await this.db())
      .insertInto('autopilot_settings')
      .values({ project_id: projectId, settings: JSON.stringify(rest), enabled: enabled ? 1 : 0, enabled_by: enabledBy ? JSON.stringify(enabledBy) : null, paused: null, holder: null, lease_until: null, updated_at: now })
      .onConflict((oc) => oc.column('project_id').doUpdateSet(set))
      .returningAll()
      .executeTakeFirstOrThrow();
    return toState(row as StateRow);
  }

  async setPaused(projectId: string, paused: AutopilotState['paused']): Promise<void> {
    await (await this.db())
      .updateTable('autopilot_settings')
      .set({ paused: paused ? JSON.stringify(paused) : null, updated_at: new Date().toISOString() })
      .where('project_id', '=', projectId)
      .execute();
  }

  async lease(projectId: string, holder: string, until: string, now: string, isGone: (holder: string) => boolean): Promise<boolean> {
    if (this.closed) return false;
    const db = await this.db();
    const seen = (await db.selectFrom('autopilot_settings').select(['holder', 'lease_until']).where('project_id', '=', projectId).executeTakeFirst()) as Pick<StateRow, 'holder' | 'lease_until'> | undefined;
    if (!seen) return false;
    const free = seen.holder === null || seen.holder === holder || (seen.lease_until ?? '') < now || isGone(seen.holder);
    if (!free) return false;
    // Taken only if the holder is still the one read: of several instances, one swaps it.
    const r = await db
      .updateTable('autopilot_settings')
      .set({ holder, lease_until: until })
      .where('project_id', '=', projectId)
      .where('holder', seen.holder === null ? 'is' : '=', seen.holder)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async release(projectId: string, holder: string): Promise<void> {
    if (this.closed) return;
    await (await this.db()).updateTable('autopilot_settings').set({ holder: null, lease_until: null }).where('project_id', '=', projectId).where('holder', '=', holder).execute();
  }

  async stories(projectId: string): Promise<PipelineRow[]> {
    const rows = await (await this.db()).selectFrom('autopilot_stories').selectAll().where('project_id', '=', projectId).orderBy('since').orderBy('story_key').execute();
    return rows.map((r) => toStory(r as StoryRow));
  }

  async insertStory(row: Omit<PipelineRow, 'version'>): Promise<boolean> {
    const r = await (await this.db())
      .insertInto('autopilot_stories')
      .values({
        project_id: row.projectId,
        story_key: row.storyKey,
        step: row.step,
        round: row.round,
        since: row.since,
        note: row.note,
        workspace_id: row.workspaceId,
        run_id: row.runId,
        run_kind: row.runKind,
        skip_gate: row.skipGate ? 1 : 0,
        version: 1,
      })
      .onConflict((oc) => oc.columns(['project_id', 'story_key']).doNothing())
      .executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async updateStory(projectId: string, storyKey: string, version: number, patch: PipelinePatch): Promise<PipelineRow | null> {
    const row = await (await this.db())
      .updateTable('autopilot_stories')
      .set(storySet(patch, version, new Date().toISOString()))
      .where('project_id', '=', projectId)
      .where('story_key', '=', storyKey)
      .where('version', '=', version)
      .returningAll()
      .executeTakeFirst();
    return row ? toStory(row as StoryRow) : null;
  }

  async removeStory(projectId: string, storyKey: string): Promise<void> {
    await (await this.db()).deleteFrom('autopilot_stories').where('project_id', '=', projectId).where('story_key', '=', storyKey).execute();
  }

  async decisions(projectId: string, opts: { open?: boolean } = {}): Promise<DecisionRow[]> {
    let q = (await this.db()).selectFrom('autopilot_decisions').selectAll().where('project_id', '=', projectId);
    if (opts.open) q = q.where('resolved_at', 'is', null);
    const rows = await q.orderBy('since', 'desc').orderBy('id').limit(200).execute();
    return rows.map((r) => toDecision(r as DecisionDbRow));
  }

  async addDecision(row: Omit<DecisionRow, 'resolvedAt'>): Promise<void> {
    await (await this.db())
      .insertInto('autopilot_decisions')
      .values({ id: row.id, project_id: row.projectId, story_key: row.storyKey, kind: row.kind, text: row.text, detail: row.detail, run_id: row.runId, actions: JSON.stringify(row.actions), since: row.since, resolved_at: null })
      .execute();
  }

  async resolveDecision(projectId: string, id: string, at: string): Promise<boolean> {
    const r = await (await this.db()).updateTable('autopilot_decisions').set({ resolved_at: at }).where('id', '=', id).where('project_id', '=', projectId).where('resolved_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}

/** The same in memory (a memory runtime; tests). */
export class MemoryAutopilotStore implements AutopilotStore {
  private readonly states = new Map<string, AutopilotState & { holder: string | null; leaseUntil: string | null }>();
  private readonly rows = new Map<string, PipelineRow>();
  private readonly notes = new Map<string, DecisionRow>();

  async get(projectId: string): Promise<AutopilotState | null> {
    const s = this.states.get(projectId);
    if (!s) return null;
    const { holder: _h, leaseUntil: _l, ...state } = s;
    void _h;
    void _l;
    return structuredClone(state);
  }

  async projects(): Promise<string[]> {
    const out = new Set<string>();
    for (const s of this.states.values()) if (s.settings.enabled) out.add(s.projectId);
    for (const r of this.rows.values()) if (!['merged', 'held', 'stopped'].includes(r.step)) out.add(r.projectId);
    return [...out];
  }

  async putSettings(projectId: string, settings: AutopilotSettings, enabledBy: PersonRef | null | undefined): Promise<AutopilotState> {
    const was = this.states.get(projectId);
    const next = { projectId, settings: structuredClone(settings), enabledBy: enabledBy === undefined ? (was?.enabledBy ?? null) : enabledBy, paused: was?.paused ?? null, updatedAt: new Date().toISOString(), holder: was?.holder ?? null, leaseUntil: was?.leaseUntil ?? null };
    this.states.set(projectId, next);
    return (await this.get(projectId))!;
  }

  async setPaused(projectId: string, paused: AutopilotState['paused']): Promise<void> {
    const s = this.states.get(projectId);
    if (s) s.paused = paused;
  }

  async lease(projectId: string, holder: string, until: string, now: string, isGone: (holder: string) => boolean): Promise<boolean> {
    const s = this.states.get(projectId);
    if (!s) return false;
    if (s.holder !== null && s.holder !== holder && (s.leaseUntil ?? '') >= now && !isGone(s.holder)) return false;
    s.holder = holder;
    s.leaseUntil = until;
    return true;
  }

  async release(projectId: string, holder: string): Promise<void> {
    const s = this.states.get(projectId);
    if (s?.holder === holder) {
      s.holder = null;
      s.leaseUntil = null;
    }
  }

  async stories(projectId: string): Promise<PipelineRow[]> {
    return [...this.rows.values()].filter((r) => r.projectId === projectId).map((r) => ({ ...r })).sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : a.storyKey < b.storyKey ? -1 : 1));
  }

  async insertStory(row: Omit<PipelineRow, 'version'>): Promise<boolean> {
    const k = `${row.projectId}\0${row.storyKey}`;
    if (this.rows.has(k)) return false;
    this.rows.set(k, { ...row, version: 1 });
    return true;
  }

  async updateStory(projectId: string, storyKey: string, version: number, patch: PipelinePatch): Promise<PipelineRow | null> {
    const k = `${projectId}\0${storyKey}`;
    const r = this.rows.get(k);
    if (!r || r.version !== version) return null;
    const next: PipelineRow = { ...r, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)), version: version + 1 };
    if (patch.step !== undefined) next.since = new Date().toISOString();
    this.rows.set(k, next);
    return { ...next };
  }

  async removeStory(projectId: string, storyKey: string): Promise<void> {
    this.rows.delete(`${projectId}\0${storyKey}`);
  }

  async decisions(projectId: string, opts: { open?: boolean } = {}): Promise<DecisionRow[]> {
    return [...this.notes.values()].filter((d) => d.projectId === projectId && (!opts.open || d.resolvedAt === null)).map((d) => ({ ...d })).sort((a, b) => (a.since < b.since ? 1 : a.since > b.since ? -1 : 0));
  }

  async addDecision(row: Omit<DecisionRow, 'resolvedAt'>): Promise<void> {
    this.notes.set(row.id, { ...row, resolvedAt: null });
  }

  async resolveDecision(projectId: string, id: string, at: string): Promise<boolean> {
    const d = this.notes.get(id);
    if (!d || d.projectId !== projectId || d.resolvedAt !== null) return false;
    d.resolvedAt = at;
    return true;
  }

  async close(): Promise<void> {}
}

export function openAutopilotStore(database: StoreDatabase): AutopilotStore {
  if (database.kind === 'memory') return new MemoryAutopilotStore();
  return SqlAutopilotStore.open(database, 2);
}

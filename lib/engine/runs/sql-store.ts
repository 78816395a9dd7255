import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { AppDatabase } from '../../store/db/database';
import type { SqlStoreDatabase } from '../../store/db/store-database';
import { text } from '../../store/db/text';
import {
  INTERRUPTED,
  TERMINAL,
  type HeadlessContract,
  type NewRun,
  type Run,
  type RunEnd,
  type RunLease,
  type RunResume,
  type RunStatus,
  type RunStore,
  type WebhookClaim,
  type WebhookOutcome,
} from './types';

/** A row as either dialect returns it: Postgres gives bigint columns as strings. */
export interface RunRow {
  id: string;
  project_id: string;
  owner_id: string;
  skill: string;
  agent_id: string;
  intent: string | null;
  message: string;
  model: string | null;
  contract: string;
  status: RunStatus;
  result: string | null;
  error: string | null;
  artifacts: string;
  conversation_id: string | null;
  workspace_id: string | null;
  story_key?: string | null;
  prompt_tokens: number | string;
  completion_tokens: number | string;
  cached_tokens: number | string;
  cost: number | string | null;
  answers: number | string;
  webhook: string | null;
  webhook_outcome: string | null;
  cancel_requested: number | string;
  lease_owner: string | null;
  lease_token: string | null;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  ended_at: string | null;
  budget?: string | null;
  resume?: string | null;
}

const MAX_LIST = 100;

/**
 * A delivery under way is kept in webhook_outcome until its outcome replaces it (both dialects'
 * schemas have no other column for it): who took it, until when, and a token that makes the
 * text unique, so a conditional UPDATE on the exact text is a compare-and-swap.
 */
interface Sending {
  sending: { holder: string; token: string; until: string };
}

function sendingOf(text: string | null): Sending['sending'] | null {
  if (text === null || !text.startsWith('{"sending":')) return null;
  try {
    return (JSON.parse(text) as Sending).sending;
  } catch {
    return null;
  }
}

export function toRun(row: RunRow): Run {
  const outcome = row.webhook_outcome !== null && !sendingOf(row.webhook_outcome) ? (JSON.parse(row.webhook_outcome) as WebhookOutcome) : null;
  return {
    id: row.id,
    projectId: row.project_id,
    ownerId: row.owner_id,
    skill: row.skill,
    agentId: row.agent_id,
    ...(row.intent !== null ? { intent: row.intent } : {}),
    message: row.message,
    ...(row.model !== null ? { model: row.model } : {}),
    contract: JSON.parse(row.contract) as HeadlessContract,
    status: row.status,
    result: row.result !== null ? (JSON.parse(row.result) as Record<string, unknown>) : null,
    ...(row.error !== null ? { error: JSON.parse(row.error) as Run['error'] } : {}),
    artifacts: JSON.parse(row.artifacts) as Run['artifacts'],
    ...(row.conversation_id !== null ? { conversationId: row.conversation_id } : {}),
    ...(row.workspace_id ? { workspaceId: row.workspace_id } : {}),
    ...(row.story_key ? { storyKey: row.story_key } : {}),
    usage: { promptTokens: Number(row.prompt_tokens), completionTokens: Number(row.completion_tokens), cachedTokens: Number(row.cached_tokens) },
    ...(row.cost !== null ? { cost: Number(row.cost) } : {}),
    answers: Number(row.answers),
    ...(row.webhook !== null ? { webhook: JSON.parse(row.webhook) as Run['webhook'] } : {}),
    ...(outcome ? { webhookOutcome: outcome } : {}),
    cancelRequested: Number(row.cancel_requested) === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.started_at !== null ? { startedAt: row.started_at } : {}),
    ...(row.ended_at !== null ? { endedAt: row.ended_at } : {}),
    ...(row.budget ? { budget: JSON.parse(row.budget) as Run['budget'] } : {}),
    ...(row.resume ? { resume: JSON.parse(row.resume) as Run['resume'] } : {}),
  };
}

const ENDED = [...TERMINAL];

/**
 * Runs in the stores' database, SQLite or Postgres, with one set of statements for both. Each
 * method is one statement (or a read, then one conditional write), so of several processes or
 * instances on the database one takes, ends or cancels a run.
 */
export class SqlRunStore implements RunStore {
  readonly spansHosts: boolean;
  private closed = false;

  /** The store owns `database` and closes it. */
  constructor(private readonly database: AppDatabase) {
    this.spansHosts = database.dialect === 'postgres';
  }

  /** A store on its own handle of the stores' database (a pool of `poolSize` on Postgres). */
  static open(database: SqlStoreDatabase, poolSize?: number): SqlRunStore {
    return new SqlRunStore(database.kind === 'postgres' ? database.open({ poolSize }) : database.open());
  }

  private async db() {
    await this.database.ready();
    return this.database.db;
  }

  async create(run: NewRun): Promise<Run> {
    const now = new Date().toISOString();
    const row = await (await this.db())
      .insertInto('runs')
      .values({
        id: run.id,
        project_id: run.projectId,
        owner_id: run.ownerId,
        skill: run.skill,
        agent_id: run.agentId,
        intent: run.intent === undefined ? null : text(run.intent),
        // Postgres text cannot hold NUL; a pasted binary in a run's inputs must not fail the submit.
        message: text(run.message),
        model: run.model ?? null,
        contract: JSON.stringify(run.contract),
        status: 'queued',
        webhook: run.webhook ? JSON.stringify(run.webhook) : null,
        workspace_id: run.workspaceId ?? null,
        story_key: run.storyKey ?? null,
        budget: run.budget ? JSON.stringify(run.budget) : null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRun(row as RunRow);
  }

  async get(id: string): Promise<Run | null> {
    const row = await (await this.db()).selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRun(row as RunRow) : null;
  }

  async unfinishedOf(ownerId: string): Promise<string[]> {
    const rows = await (await this.db()).selectFrom('runs').select('id').where('owner_id', '=', ownerId).where('status', 'in', ['queued', 'running']).execute();
    return rows.map((r) => r.id as string);
  }

  async storyRuns(projectId: string, limit = 1000): Promise<Run[]> {
    const rows = await (await this.db())
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('story_key', 'is not', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(Math.max(1, Math.min(10_000, Math.floor(limit))))
      .execute();
    return rows.map((r) => toRun(r as RunRow));
  }

  async list(options: { projectId: string; limit?: number }): Promise<Run[]> {
    const limit = Math.max(1, Math.min(MAX_LIST, Math.floor(options.limit ?? 50)));
    const rows = await (await this.db())
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', options.projectId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => toRun(r as RunRow));
  }

  async claim(holder: string, leaseUntil: string): Promise<{ run: Run; lease: RunLease } | null> {
    if (this.closed) return null;
    const db = await this.db();
    // A read first: the queue is polled, and an empty one should not take SQLite's write lock.
    const any = await db.selectFrom('runs').select(sql<number>`1`.as('one')).where('status', '=', 'queued').limit(1).executeTakeFirst();
    if (!any) return null;
    let oldest = db.selectFrom('runs').select('id').where('status', '=', 'queued').orderBy('created_at').orderBy('id').limit(1);
    // The one dialect switch. Both dialects are safe without it (SQLite runs one writer at a time;
    // on Postgres a second claimer of the same row waits for the first, re-checks status and takes
    // nothing), but on Postgres that loser would come back empty while other runs wait; SKIP
    // LOCKED makes it take the next queued row instead. SQLite has no row locks to name.
    if (this.database.dialect === 'postgres') oldest = oldest.forUpdate().skipLocked();
    const token = randomUUID();
    const now = new Date().toISOString();
    const row = await db
      .updateTable('runs')
      .set({ status: 'running', lease_owner: holder, lease_token: token, lease_until: leaseUntil, heartbeat_at: now, started_at: now, updated_at: now })
      .where('id', '=', oldest)
      .where('status', '=', 'queued')
      .returningAll()
      .executeTakeFirst();
    return row ? { run: toRun(row as RunRow), lease: { runId: (row as RunRow).id, token } } : null;
  }

  async heartbeat(lease: RunLease, leaseUntil: string): Promise<boolean> {
    const result = await (await this.db())
      .updateTable('runs')
      .set({ lease_until: leaseUntil, heartbeat_at: new Date().toISOString() })
      .where('id', '=', lease.runId)
      .where('lease_token', '=', lease.token)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async setConversation(lease: RunLease, conversationId: string): Promise<void> {
    await (await this.db())
      .updateTable('runs')
      .set({ conversation_id: conversationId, updated_at: new Date().toISOString() })
      .where('id', '=', lease.runId)
      .where('lease_token', '=', lease.token)
      .execute();
  }

  async addAnswer(lease: RunLease): Promise<void> {
    await (await this.db())
      .updateTable('runs')
      .set((eb) => ({ answers: eb('answers', '+', 1), updated_at: new Date().toISOString() }))
      .where('id', '=', lease.runId)
      .where('lease_token', '=', lease.token)
      .execute();
  }

  async finish(lease: RunLease, end: RunEnd): Promise<boolean> {
    if (this.closed) return false;
    const now = new Date().toISOString();
    const result = await (await this.db())
      .updateTable('runs')
      .set({
        status: end.status,
        result: end.result ? JSON.stringify(end.result) : null,
        error: end.error ? JSON.stringify(end.error) : null,
        artifacts: JSON.stringify(end.artifacts),
        ...(end.usage ? { prompt_tokens: end.usage.promptTokens, completion_tokens: end.usage.completionTokens, cached_tokens: end.usage.cachedTokens } : {}),
        ...(end.cost !== undefined ? { cost: end.cost } : {}),
        lease_owner: null,
        lease_token: null,
        lease_until: null,
        ended_at: now,
        updated_at: now,
      })
      .where('id', '=', lease.runId)
      .where('lease_token', '=', lease.token)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async recover(now: string, isGone: (holder: string | null) => boolean): Promise<Run[]> {
    const db = await this.db();
    const running = (await db.selectFrom('runs').selectAll().where('status', '=', 'running').execute()) as RunRow[];
    const out: Run[] = [];
    for (const row of running) {
      const expired = row.lease_until !== null && row.lease_until < now;
      if (!expired && !isGone(row.lease_owner)) continue;
      // Ended only while the lease seen above is still the one on the row (its holder may have
      // finished, or another instance recovered it, in between). `= NULL` matches nothing, so a
      // lease with no token is matched with IS NULL, a form both dialects read the same.
      const ended = await db
        .updateTable('runs')
        .set({ status: 'interrupted', error: JSON.stringify(INTERRUPTED), lease_owner: null, lease_token: null, lease_until: null, ended_at: now, updated_at: now })
        .where('id', '=', row.id)
        .where('status', '=', 'running')
        .where('lease_token', row.lease_token === null ? 'is' : '=', row.lease_token)
        .returningAll()
        .executeTakeFirst();
      if (ended) out.push(toRun(ended as RunRow));
    }
    return out;
  }

  async cancel(id: string): Promise<Run | null> {
    const db = await this.db();
    const now = new Date().toISOString();
    const row =
      (await db
        .updateTable('runs')
        .set({ status: 'cancelled', cancel_requested: 1, ended_at: now, updated_at: now })
        .where('id', '=', id)
        .where('status', '=', 'queued')
        .returningAll()
        .executeTakeFirst()) ??
      (await db.updateTable('runs').set({ cancel_requested: 1, updated_at: now }).where('id', '=', id).where('status', '=', 'running').returningAll().executeTakeFirst()) ??
      (await db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst());
    return row ? toRun(row as RunRow) : null;
  }

  async resume(id: string, answer: RunResume): Promise<Run | null> {
    if (this.closed) return null;
    const now = new Date().toISOString();
    const row = await (await this.db())
      .updateTable('runs')
      .set({ status: 'queued', resume: JSON.stringify(answer), result: null, error: null, ended_at: null, webhook_outcome: null, cancel_requested: 0, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', 'blocked')
      .returningAll()
      .executeTakeFirst();
    return row ? toRun(row as RunRow) : null;
  }

  async claimWebhook(id: string, holder: string, until: string, now: string, isGone: (holder: string) => boolean): Promise<{ run: Run; claim: WebhookClaim } | null> {
    if (this.closed) return null;
    const db = await this.db();
    const seen = (await db.selectFrom('runs').select(['status', 'webhook', 'webhook_outcome']).where('id', '=', id).executeTakeFirst()) as
      | Pick<RunRow, 'status' | 'webhook' | 'webhook_outcome'>
      | undefined;
    if (!seen || seen.webhook === null || !TERMINAL.has(seen.status)) return null;
    if (seen.webhook_outcome !== null) {
      const under = sendingOf(seen.webhook_outcome);
      if (!under || (under.until >= now && !isGone(under.holder))) return null;
    }
    const token = JSON.stringify({ sending: { holder, token: randomUUID(), until } } satisfies Sending);
    // Taken only if webhook_outcome is still what was read: of several instances, one swaps it.
    const row = await db
      .updateTable('runs')
      .set({ webhook_outcome: token })
      .where('id', '=', id)
      .where('webhook_outcome', seen.webhook_outcome === null ? 'is' : '=', seen.webhook_outcome)
      .returningAll()
      .executeTakeFirst();
    return row ? { run: toRun(row as RunRow), claim: { runId: id, token } } : null;
  }

  async awaitingWebhook(since: string): Promise<string[]> {
    const rows = await (await this.db())
      .selectFrom('runs')
      .select('id')
      .where('status', 'in', ENDED)
      .where('webhook', 'is not', null)
      .where('ended_at', '>', since)
      .where((eb) => eb.or([eb('webhook_outcome', 'is', null), eb('webhook_outcome', 'like', '{"sending":%')]))
      .orderBy('ended_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => r.id as string);
  }

  async setWebhookOutcome(claim: WebhookClaim, outcome: WebhookOutcome): Promise<void> {
    if (this.closed) return;
    await (await this.db())
      .updateTable('runs')
      .set({ webhook_outcome: JSON.stringify(outcome) })
      .where('id', '=', claim.runId)
      .where('webhook_outcome', '=', claim.token)
      .execute();
  }

  async releaseWebhook(claim: WebhookClaim): Promise<void> {
    if (this.closed) return;
    await (await this.db()).updateTable('runs').set({ webhook_outcome: null }).where('id', '=', claim.runId).where('webhook_outcome', '=', claim.token).execute();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}

import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { migrate } from '../conversations/migrations';
import type { HeadlessContract, NewRun, Run, RunEnd, RunLease, RunStatus, RunStore, WebhookOutcome } from './types';

interface RunRow {
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
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost: number | null;
  answers: number;
  webhook: string | null;
  webhook_outcome: string | null;
  cancel_requested: number;
  lease_owner: string | null;
  lease_token: string | null;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  ended_at: string | null;
}

const MAX_LIST = 100;

export function toRun(row: RunRow): Run {
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
    usage: { promptTokens: row.prompt_tokens, completionTokens: row.completion_tokens, cachedTokens: row.cached_tokens },
    ...(row.cost !== null ? { cost: row.cost } : {}),
    answers: row.answers,
    ...(row.webhook !== null ? { webhook: JSON.parse(row.webhook) as Run['webhook'] } : {}),
    ...(row.webhook_outcome !== null ? { webhookOutcome: JSON.parse(row.webhook_outcome) as WebhookOutcome } : {}),
    cancelRequested: row.cancel_requested === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.started_at !== null ? { startedAt: row.started_at } : {}),
    ...(row.ended_at !== null ? { endedAt: row.ended_at } : {}),
  };
}

function prepareStatements(db: Database.Database) {
return {
    insert: db.prepare(
      `INSERT INTO runs (id, project_id, owner_id, skill, agent_id, intent, message, model, contract, status, webhook, created_at, updated_at)
       VALUES (@id, @projectId, @ownerId, @skill, @agentId, @intent, @message, @model, @contract, 'queued', @webhook, @now, @now)
       RETURNING *`,
    ),
    get: db.prepare<[string], RunRow>('SELECT * FROM runs WHERE id = ?'),
    list: db.prepare<[string, number], RunRow>('SELECT * FROM runs WHERE project_id = ? ORDER BY created_at DESC, id DESC LIMIT ?'),
    // The queue's one atomic step: the oldest queued row becomes this holder's, or nothing does.
    claim: db.prepare<[Record<string, unknown>], RunRow>(
      `UPDATE runs SET status = 'running', lease_owner = @owner, lease_token = @token, lease_until = @until, heartbeat_at = @now,
         started_at = @now, updated_at = @now
       WHERE id = (SELECT id FROM runs WHERE status = 'queued' ORDER BY created_at, id LIMIT 1) AND status = 'queued'
       RETURNING *`,
    ),
    heartbeat: db.prepare<[Record<string, unknown>]>(
      `UPDATE runs SET lease_until = @until, heartbeat_at = @now WHERE id = @id AND lease_token = @token AND status = 'running'`,
    ),
    setConversation: db.prepare<[Record<string, unknown>]>(
      `UPDATE runs SET conversation_id = @conversationId, updated_at = @now WHERE id = @id AND lease_token = @token`,
    ),
    addAnswer: db.prepare<[Record<string, unknown>]>(`UPDATE runs SET answers = answers + 1, updated_at = @now WHERE id = @id AND lease_token = @token`),
    finish: db.prepare<[Record<string, unknown>]>(
      `UPDATE runs SET status = @status, result = @result, error = @error, artifacts = @artifacts,
         prompt_tokens = COALESCE(@prompt, prompt_tokens), completion_tokens = COALESCE(@completion, completion_tokens),
         cached_tokens = COALESCE(@cached, cached_tokens), cost = COALESCE(@cost, cost),
         lease_owner = NULL, lease_token = NULL, lease_until = NULL, ended_at = @now, updated_at = @now
       WHERE id = @id AND lease_token = @token AND status = 'running'`,
    ),
    running: db.prepare<[], RunRow>(`SELECT * FROM runs WHERE status = 'running'`),
    anyQueued: db.prepare<[], { one: number }>(`SELECT 1 AS one FROM runs WHERE status = 'queued' LIMIT 1`),
    interrupt: db.prepare<[Record<string, unknown>], RunRow>(
      `UPDATE runs SET status = 'interrupted', error = @error, lease_owner = NULL, lease_token = NULL, lease_until = NULL,
         ended_at = @now, updated_at = @now
       WHERE id = @id AND status = 'running' AND lease_token IS @token
       RETURNING *`,
    ),
    cancelQueued: db.prepare<[Record<string, unknown>], RunRow>(
      `UPDATE runs SET status = 'cancelled', cancel_requested = 1, ended_at = @now, updated_at = @now
       WHERE id = @id AND status = 'queued' RETURNING *`,
    ),
    cancelRunning: db.prepare<[Record<string, unknown>], RunRow>(
      `UPDATE runs SET cancel_requested = 1, updated_at = @now WHERE id = @id AND status = 'running' RETURNING *`,
    ),
    webhookOutcome: db.prepare<[string, string]>('UPDATE runs SET webhook_outcome = ? WHERE id = ?'),
  };
}

/**
 * Runs in the conversations' SQLite file (its own connection, the same migrations). Each method
 * is one statement or one short transaction, so two processes on the file never both take a run.
 */
export class SqliteRunStore implements RunStore {
  private readonly db: Database.Database;
  private closed = false;
  private readonly stmt: ReturnType<typeof prepareStatements>;

  constructor(file: string) {
    this.db = new Database(file, { timeout: 5000 });
    try {
      this.db.pragma('busy_timeout = 5000');
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      migrate(this.db);
    } catch (e) {
      this.db.close();
      throw e;
    }
    this.stmt = prepareStatements(this.db);
  }

  async create(run: NewRun): Promise<Run> {
    const row = this.stmt.insert.get({
      id: run.id,
      projectId: run.projectId,
      ownerId: run.ownerId,
      skill: run.skill,
      agentId: run.agentId,
      intent: run.intent ?? null,
      message: run.message,
      model: run.model ?? null,
      contract: JSON.stringify(run.contract),
      webhook: run.webhook ? JSON.stringify(run.webhook) : null,
      now: new Date().toISOString(),
    }) as RunRow;
    return toRun(row);
  }

  async get(id: string): Promise<Run | null> {
    const row = this.stmt.get.get(id);
    return row ? toRun(row) : null;
  }

  async list(options: { projectId: string; limit?: number }): Promise<Run[]> {
    const limit = Math.max(1, Math.min(MAX_LIST, Math.floor(options.limit ?? 50)));
    return this.stmt.list.all(options.projectId, limit).map(toRun);
  }

  async claim(holder: string, leaseUntil: string): Promise<{ run: Run; lease: RunLease } | null> {
    // A read first: the queue is polled, and an empty one should not take the write lock.
    if (this.closed || !this.stmt.anyQueued.get()) return null;
    const token = randomUUID();
    const row = this.stmt.claim.get({ owner: holder, token, until: leaseUntil, now: new Date().toISOString() });
    return row ? { run: toRun(row), lease: { runId: row.id, token } } : null;
  }

  async heartbeat(lease: RunLease, leaseUntil: string): Promise<boolean> {
    return this.stmt.heartbeat.run({ id: lease.runId, token: lease.token, until: leaseUntil, now: new Date().toISOString() }).changes === 1;
  }

  async setConversation(lease: RunLease, conversationId: string): Promise<void> {
    this.stmt.setConversation.run({ id: lease.runId, token: lease.token, conversationId, now: new Date().toISOString() });
  }

  async addAnswer(lease: RunLease): Promise<void> {
    this.stmt.addAnswer.run({ id: lease.runId, token: lease.token, now: new Date().toISOString() });
  }

  async finish(lease: RunLease, end: RunEnd): Promise<boolean> {
    if (this.closed) return false;
    return (
      this.stmt.finish.run({
        id: lease.runId,
        token: lease.token,
        status: end.status,
        result: end.result ? JSON.stringify(end.result) : null,
        error: end.error ? JSON.stringify(end.error) : null,
        artifacts: JSON.stringify(end.artifacts),
        prompt: end.usage?.promptTokens ?? null,
        completion: end.usage?.completionTokens ?? null,
        cached: end.usage?.cachedTokens ?? null,
        cost: end.cost ?? null,
        now: new Date().toISOString(),
      }).changes === 1
    );
  }

  async recover(now: string, isGone: (holder: string | null) => boolean): Promise<Run[]> {
    const out: Run[] = [];
    for (const row of this.stmt.running.all()) {
      const expired = row.lease_until !== null && row.lease_until < now;
      if (!expired && !isGone(row.lease_owner)) continue;
      const ended = this.stmt.interrupt.get({ id: row.id, token: row.lease_token, now, error: JSON.stringify(INTERRUPTED) });
      if (ended) out.push(toRun(ended));
    }
    return out;
  }

  async cancel(id: string): Promise<Run | null> {
    const now = new Date().toISOString();
    const row = this.stmt.cancelQueued.get({ id, now }) ?? this.stmt.cancelRunning.get({ id, now }) ?? this.stmt.get.get(id);
    return row ? toRun(row) : null;
  }

  async setWebhookOutcome(id: string, outcome: WebhookOutcome): Promise<void> {
    if (this.closed) return;
    this.stmt.webhookOutcome.run(JSON.stringify(outcome), id);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

export const INTERRUPTED = { code: 'E_INTERRUPTED', message: 'The server stopped while the run was running; start it again.' } as const;

import { randomUUID } from 'node:crypto';
import { INTERRUPTED, isTerminal, type NewRun, type Run, type RunEnd, type RunLease, type RunResume, type RunStore, type WebhookClaim, type WebhookOutcome } from './types';

interface Held {
  run: Run;
  holder: string | null;
  token: string | null;
  leaseUntil: string | null;
  /** A webhook delivery under way. */
  sending: { holder: string; token: string; until: string } | null;
}

/**
 * Runs in memory (CONVERSATION_STORE=memory, tests). Every method checks and changes a row with
 * no await in between, which is what keeps claim and finish atomic here.
 */
export class MemoryRunStore implements RunStore {
  readonly spansHosts = false;
  private readonly rows = new Map<string, Held>();
  private seq = 0;
  private readonly order = new Map<string, number>();

  async create(input: NewRun): Promise<Run> {
    const now = new Date().toISOString();
    const run: Run = {
      id: input.id,
      projectId: input.projectId,
      ownerId: input.ownerId,
      skill: input.skill,
      agentId: input.agentId,
      ...(input.intent !== undefined ? { intent: input.intent } : {}),
      message: input.message,
      ...(input.model !== undefined ? { model: input.model } : {}),
      ...(input.workspaceId !== undefined ? { workspaceId: input.workspaceId } : {}),
      ...(input.storyKey !== undefined ? { storyKey: input.storyKey } : {}),
      contract: input.contract,
      status: 'queued',
      result: null,
      artifacts: [],
      usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
      answers: 0,
      ...(input.webhook ? { webhook: input.webhook } : {}),
      ...(input.budget ? { budget: { ...input.budget } } : {}),
      cancelRequested: false,
      createdAt: now,
      updatedAt: now,
    };
    if (this.rows.has(run.id)) throw new TypeError(`A run with id "${run.id}" exists.`);
    this.rows.set(run.id, { run, holder: null, token: null, leaseUntil: null, sending: null });
    this.order.set(run.id, this.seq++);
    return structuredClone(run);
  }

  async get(id: string): Promise<Run | null> {
    const row = this.rows.get(id);
    return row ? structuredClone(row.run) : null;
  }

  async unfinishedOf(ownerId: string): Promise<string[]> {
    return [...this.rows.values()].filter((r) => r.run.ownerId === ownerId && (r.run.status === 'queued' || r.run.status === 'running')).map((r) => r.run.id);
  }

  async list(options: { projectId: string; limit?: number }): Promise<Run[]> {
    const limit = Math.max(1, Math.min(100, Math.floor(options.limit ?? 50)));
    return [...this.rows.values()]
      .filter((r) => r.run.projectId === options.projectId)
      .sort((a, b) => this.order.get(b.run.id)! - this.order.get(a.run.id)!)
      .slice(0, limit)
      .map((r) => structuredClone(r.run));
  }

  async storyRuns(projectId: string, limit = 1000): Promise<Run[]> {
    return [...this.rows.values()]
      .filter((r) => r.run.projectId === projectId && r.run.storyKey !== undefined)
      .sort((a, b) => this.order.get(b.run.id)! - this.order.get(a.run.id)!)
      .slice(0, Math.max(1, Math.min(10_000, Math.floor(limit))))
      .map((r) => structuredClone(r.run));
  }

  async claim(holder: string, leaseUntil: string): Promise<{ run: Run; lease: RunLease } | null> {
    const next = [...this.rows.values()].filter((r) => r.run.status === 'queued').sort((a, b) => this.order.get(a.run.id)! - this.order.get(b.run.id)!)[0];
    if (!next) return null;
    const now = new Date().toISOString();
    const token = randomUUID();
    Object.assign(next, { holder, token, leaseUntil });
    Object.assign(next.run, { status: 'running', startedAt: now, updatedAt: now });
    return { run: structuredClone(next.run), lease: { runId: next.run.id, token } };
  }

  private held(lease: RunLease): Held | null {
    const row = this.rows.get(lease.runId);
    return row && row.token === lease.token && row.run.status === 'running' ? row : null;
  }

  async heartbeat(lease: RunLease, leaseUntil: string): Promise<boolean> {
    const row = this.held(lease);
    if (row) row.leaseUntil = leaseUntil;
    return row !== null;
  }

  async setConversation(lease: RunLease, conversationId: string): Promise<void> {
    const row = this.held(lease);
    if (row) row.run.conversationId = conversationId;
  }

  async addAnswer(lease: RunLease): Promise<void> {
    const row = this.held(lease);
    if (row) row.run.answers += 1;
  }

  async finish(lease: RunLease, end: RunEnd): Promise<boolean> {
    const row = this.held(lease);
    if (!row) return false;
    const now = new Date().toISOString();
    const run = row.run;
    run.status = end.status;
    run.result = end.result;
    if (end.error) run.error = end.error;
    run.artifacts = end.artifacts;
    if (end.usage) run.usage = { ...end.usage };
    if (end.cost !== undefined) run.cost = end.cost;
    run.endedAt = now;
    run.updatedAt = now;
    Object.assign(row, { holder: null, token: null, leaseUntil: null });
    return true;
  }

  async recover(now: string, isGone: (holder: string | null) => boolean): Promise<Run[]> {
    const out: Run[] = [];
    for (const row of this.rows.values()) {
      if (row.run.status !== 'running') continue;
      const expired = row.leaseUntil !== null && row.leaseUntil < now;
      if (!expired && !isGone(row.holder)) continue;
      Object.assign(row.run, { status: 'interrupted', error: { ...INTERRUPTED }, endedAt: now, updatedAt: now });
      Object.assign(row, { holder: null, token: null, leaseUntil: null });
      out.push(structuredClone(row.run));
    }
    return out;
  }

  async cancel(id: string): Promise<Run | null> {
    const row = this.rows.get(id);
    if (!row) return null;
    const now = new Date().toISOString();
    if (row.run.status === 'queued') Object.assign(row.run, { status: 'cancelled', cancelRequested: true, endedAt: now, updatedAt: now });
    else if (row.run.status === 'running') Object.assign(row.run, { cancelRequested: true, updatedAt: now });
    return structuredClone(row.run);
  }

  async resume(id: string, answer: RunResume): Promise<Run | null> {
    const row = this.rows.get(id);
    if (!row || row.run.status !== 'blocked') return null;
    const run = row.run;
    delete run.error;
    delete run.endedAt;
    delete run.webhookOutcome;
    Object.assign(run, { status: 'queued', resume: structuredClone(answer), result: null, cancelRequested: false, updatedAt: new Date().toISOString() });
    row.sending = null;
    return structuredClone(run);
  }

  async claimWebhook(id: string, holder: string, until: string, now: string, isGone: (holder: string) => boolean): Promise<{ run: Run; claim: WebhookClaim } | null> {
    const row = this.rows.get(id);
    if (!row || !row.run.webhook || !isTerminal(row.run.status) || row.run.webhookOutcome) return null;
    if (row.sending && row.sending.until >= now && !isGone(row.sending.holder)) return null;
    row.sending = { holder, token: randomUUID(), until };
    return { run: structuredClone(row.run), claim: { runId: id, token: row.sending.token } };
  }

  async awaitingWebhook(since: string): Promise<string[]> {
    return [...this.rows.values()]
      .filter((r) => r.run.webhook && isTerminal(r.run.status) && !r.run.webhookOutcome && r.run.endedAt !== undefined && r.run.endedAt > since)
      .sort((a, b) => {
        const ka = `${a.run.endedAt}\u0000${a.run.id}`;
        const kb = `${b.run.endedAt}\u0000${b.run.id}`;
        return ka < kb ? -1 : ka > kb ? 1 : 0;
      })
      .map((r) => r.run.id);
  }

  async setWebhookOutcome(claim: WebhookClaim, outcome: WebhookOutcome): Promise<void> {
    const row = this.rows.get(claim.runId);
    if (!row || row.sending?.token !== claim.token) return;
    row.run.webhookOutcome = { ...outcome };
    row.sending = null;
  }

  async releaseWebhook(claim: WebhookClaim): Promise<void> {
    const row = this.rows.get(claim.runId);
    if (row?.sending?.token === claim.token) row.sending = null;
  }

  async close(): Promise<void> {}
}

import { emitProjectEvent } from '../events';
import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import { LOCAL_CALLER } from '../../core/access';
import { startTurn, SERVER_SHUTDOWN, type ChatDeps, type TurnHandle, type TurnWorkspace } from '../chat';
import { isHolderAlive, isHolderOnThisHost, registerHolder, type LeaseHolder } from '../../store/db/lease';
import { AppError, isAppError } from '../../core/errors';
import { log } from '../../core/log';
import { projectVersions } from '../../content/projects';
import { sprintProjectOf } from '../sprint';
import { BUILD_ANSWER_RULE, BUILD_SKILLS, buildMessage, buildTarget, isBuildRun, readBuildTurn, storyNamedIn, type BuildJudge, type BuildReading } from './build';
import { runBudgetProblem, runStop, type BudgetStop, type RunBudget } from '../../store/budgets';
import { readAnswer } from './result';
import { firstMessage, resolveTarget, type RunInputs, type RunTarget } from './target';
import { INTERRUPTED, runView, type Run, type RunEnd, type RunLease, type RunStore, type RunView } from './types';
import { deliverWebhook, newWebhookSecret, webhookProblem, type WebhookSettings } from './webhook';

type TurnEvent = TurnHandle['events'] extends AsyncGenerator<infer E> ? E : never;

export interface RunSettings {
  /** Runs one process drives at once (RUNS_CONCURRENCY, default 4: a run mostly waits on its model). */
  concurrency: number;
  /** Questions the server answers with the contract's rule before the run ends blocked (RUNS_MAX_ANSWERS, default 3). */
  maxAnswers: number;
  /** How long a taken run stays this process's without a heartbeat. */
  leaseMs: number;
  heartbeatMs: number;
  /** How often the queue is looked at for runs other instances queued. */
  pollMs: number;
  webhook: WebhookSettings;
  /** The token budget of a run that names none (RUNS_MAX_TOKENS); none when unset. */
  maxTokens?: number;
}

function positive(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value.trim() === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number of at least 1 (got "${value}").`);
  return n;
}

export function runSettings(env: Record<string, string | undefined> = process.env): RunSettings {
  const maxTokens = env.RUNS_MAX_TOKENS?.trim() ? positive(env.RUNS_MAX_TOKENS, 0, 'RUNS_MAX_TOKENS') : undefined;
  return {
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    concurrency: positive(env.RUNS_CONCURRENCY, 4, 'RUNS_CONCURRENCY'),
    maxAnswers: positive(env.RUNS_MAX_ANSWERS, 3, 'RUNS_MAX_ANSWERS'),
    leaseMs: 60_000,
    heartbeatMs: 10_000,
    pollMs: 2_000,
    webhook: {
      attempts: positive(env.RUNS_WEBHOOK_ATTEMPTS, 5, 'RUNS_WEBHOOK_ATTEMPTS'),
      backoffMs: positive(env.RUNS_WEBHOOK_BACKOFF_MS, 1000, 'RUNS_WEBHOOK_BACKOFF_MS'),
      timeoutMs: 10_000,
      allowPrivate: ['1', 'true', 'yes'].includes((env.RUNS_WEBHOOK_ALLOW_PRIVATE ?? '').trim().toLowerCase()),
    },
  };
}

/**
 * What the server answers a headless run's question with: the rule every headless contract
 * states (decide, record the assumption, do not ask), and the JSON the run still owes.
 */
export const ANSWER_RULE = [
  'Headless run: nobody is here to answer questions.',
  "As the skill's headless contract says: do not ask. Decide yourself with the most reasonable choice, record it in `assumptions[]` (or in `open_questions[]` when it needs a human decision), and carry on.",
  'End with the JSON status object the contract defines.',
].join(' ');

/** Progress of a run, as GET /api/runs/:id/events streams it. */
export type RunEvent =
  | { type: 'run'; run: RunView }
  | { type: 'turn'; turn: number }
  | { type: 'tool'; name: string; ok?: boolean }
  | { type: 'answered'; question: string; answers: number };

export interface SubmitInput {
  projectId: string;
  ownerId: string;
  skill: string;
  agentId?: string;
  intent?: string;
  inputs: RunInputs;
  model?: string;
  webhook?: { url: string; secret?: string };
  /** Run in this workspace of the project (checked by the caller). */
  workspaceId?: string;
  /**
   * A build run for a sprint story: the project's build skill (or `skill` when given) with the
   * story, its result read from the story's files. `inputs` (text) is appended to its first message.
   */
  story?: { key: string; file: string | null; artifacts: string };
  /** The run's own limit; RUNS_MAX_TOKENS's tokens when absent. */
  budget?: RunBudget;
}

const CANCELLED = Symbol('run cancelled');
/** The bus's channel for every run's changes (run ids are strings, so a symbol never collides). */
const ANY_RUN = Symbol('any run');
const BUDGET_SPENT = Symbol('run budget spent');
const LEASE_LOST = Symbol('run lease lost');
/** How far back a start looks for ended runs whose webhook was never delivered: older ends are not news to send. */
const WEBHOOK_RESUME_MS = 24 * 60 * 60 * 1000;

/** The longest one delivery can take: every attempt timing out, and the back-off between them. */
function deliveryMs(settings: WebhookSettings): number {
  const attempts = Math.max(1, settings.attempts);
  return attempts * settings.timeoutMs + settings.backoffMs * (2 ** (attempts - 1) - 1);
}

/**
 * The runs of one process: a queue in the store, driven `concurrency` at a time through the same
 * chat service as POST /api/chat, each run a conversation of its own with no person in it.
 */
export class RunService {
  private readonly chat: ChatDeps;
  private readonly openStore: () => RunStore;
  private opened: RunStore | null = null;
  private readonly settings: RunSettings;
  private readonly trackTurn: (c: AbortController) => () => void;
  private holder: LeaseHolder | null = null;
  private started = false;
  private closed = false;
  /** A shutdown signal stopped a run: this process takes no more (they wait for the next start). */
  private draining = false;
  private active = 0;
  private pumping = false;
  private pumpAgain = false;
  private poll: NodeJS.Timeout | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private sweeping = false;
  private readonly controllers = new Map<string, AbortController>();
  private readonly settled = new Set<Promise<void>>();
  private readonly deliveries = new AbortController();
  private readonly bus = new EventEmitter();

  /** `store`: the store, or how to open it on first use (a runtime that never runs opens nothing). */
  /**
   * `authorOf`: how versions and audit lines name a run's owner (with accounts); without it, or for
   * the single-user mode's owner, a run's turns are nobody's in particular, as the local person's are.
   */
  constructor(deps: {
    chat: ChatDeps;
    store: RunStore | (() => RunStore);
    settings?: RunSettings;
    trackTurn?: (c: AbortController) => () => void;
    authorOf?: (ownerId: string) => Promise<string | undefined>;
    /** Where a run in a workspace runs (its checkout, commands, commits by its owner). */
    placeOf?: (run: Run) => Promise<TurnWorkspace>;
    /** How a build run's end is read from its files (and its story moved); without it a build run fails. */
    judgeBuild?: BuildJudge;
    /**
     * The project's budget, when spent: refuses a new run (thrown, E_BUDGET) and stops a running
     * one between model calls (returned).
     */
    /** The project's budget, and that of the person the run is for (their own, and the server's). */
    projectBudget?: (projectId: string, personId?: string) => Promise<BudgetStop | null>;
  }) {
    this.judgeBuild = deps.judgeBuild;
    this.chat = deps.chat;
    this.authorOf = deps.authorOf;
    this.placeOf = deps.placeOf;
    this.projectBudget = deps.projectBudget;
    const store = deps.store;
    this.openStore = typeof store === 'function' ? store : () => store;
    this.settings = deps.settings ?? runSettings();
    this.trackTurn = deps.trackTurn ?? (() => () => undefined);
    this.bus.setMaxListeners(0);
  }

  private readonly authorOf?: (ownerId: string) => Promise<string | undefined>;
  private readonly placeOf?: (run: Run) => Promise<TurnWorkspace>;
  private readonly judgeBuild?: BuildJudge;
  private readonly projectBudget?: (projectId: string, personId?: string) => Promise<BudgetStop | null>;

  get store(): RunStore {
    this.opened ??= this.openStore();
    return this.opened;
  }

  /**
   * Starts the queue (idempotent): runs a dead process left running end interrupted, webhooks
   * no process delivered (these, and ends a stopped process could not send) are sent, then
   * queued runs are taken.
   */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.holder = registerHolder();
    this.sweep();
    this.poll = setInterval(() => this.pump(), this.settings.pollMs);
    this.poll.unref?.();
    // Again every lease length, not only at start: a holder on another host is gone only once its
    // lease ran out, which an instance that started before that would otherwise never look at.
    this.sweeper = setInterval(() => this.sweep(), this.settings.leaseMs);
    this.sweeper.unref?.();
  }

  /** Ends runs whose holder is gone as interrupted, then delivers the webhooks nobody delivered; one sweep at a time. */
  private sweep(): void {
    if (this.sweeping || this.closed) return;
    this.sweeping = true;
    const recovered = this.store
      .recover(new Date().toISOString(), (h) => this.holderGone(h))
      .then((runs) => {
        for (const run of runs) {
          log.warn('run.interrupted', { runId: run.id, projectId: run.projectId });
          this.emit(run);
        }
      })
      .catch((e) => log.error('run.recover_failed', { error: (e as Error)?.message?.slice(0, 200) }));
    // Kept with the runs' promises, so a close waits for it before it closes the store.
    const resumed: Promise<void> = recovered
      .then(() => this.resumeWebhooks())
      .catch((e) => log.error('run.webhook_resume_failed', { error: (e as Error)?.message?.slice(0, 200) }))
      .finally(() => {
        this.settled.delete(resumed);
        this.sweeping = false;
        this.pump();
      });
    this.settled.add(resumed);
  }

  async submit(input: SubmitInput): Promise<{ run: Run; webhookSecret?: string }> {
    const project = await this.chat.projects.get(input.projectId);
    if (!project) throw new AppError('E_PROJECT_NOT_FOUND', `No project with id "${input.projectId}". GET /api/projects lists the projects.`);
    if (input.model !== undefined && !this.chat.config.models.profiles.has(input.model)) {
      throw new AppError('E_VALIDATION', `Unknown model profile "${input.model}". GET /api/models lists them.`, { field: 'model' });
    }
    const budgetProblem = runBudgetProblem(input.budget);
    if (budgetProblem) throw new AppError('E_VALIDATION', budgetProblem.message, { field: budgetProblem.field });
    const budget: RunBudget = { ...(this.settings.maxTokens !== undefined ? { tokens: this.settings.maxTokens } : {}), ...input.budget };
    // Refused before anything is made: a project whose month is spent takes no new run.
    const projectSpent = this.projectBudget ? await this.projectBudget(project.id, input.ownerId) : null;
    if (projectSpent) throw new AppError('E_BUDGET', projectSpent.message, { budget: projectSpent.budget });
    if (input.webhook) {
      const problem = await webhookProblem(input.webhook.url, this.settings.webhook.allowPrivate);
      if (problem) throw new AppError('E_VALIDATION', problem, { field: 'webhook.url' });
    }
    // A build skill named through POST /api/runs builds the story its inputs name.
    let story = input.story;
    if (!story && BUILD_SKILLS.has(input.skill)) {
      const key = storyNamedIn(input.inputs);
      if (!key) throw new AppError('E_VALIDATION', `${input.skill} builds a sprint story: name its key (N-M-slug) in inputs, or start it from the board.`, { field: 'inputs' });
      story = { key, file: null, artifacts: sprintProjectOf(project, null).artifacts };
    }
    const target: RunTarget = story ? await buildTarget(this.chat.projects, project, input.skill || undefined) : await resolveTarget(this.chat.projects, project, input.skill, input.agentId);
    const agent = await this.chat.projects.getAgent(project.id, target.agentId);
    if (!agent) throw new AppError('E_NOT_FOUND', `Project "${project.id}" has no agent "${target.agentId}".`);
    const ws = agent.workspace;
    const message = story ? buildMessage(target, story, typeof input.inputs === 'string' ? input.inputs : JSON.stringify(input.inputs)) : await firstMessage(target, input.inputs, input.intent, {
      bundleRoot: ws.bundleRoot,
      coreRoot: ws.coreRoot,
      projectRoot: ws.projectRoot,
      outputRoot: ws.outputRoot('run'),
      variables: {},
      project: { writable: ws.writable ?? [] },
    });
    const generated = input.webhook && !input.webhook.secret ? newWebhookSecret() : undefined;
    const run = await this.store.create({
      id: `run_${crypto.randomUUID().replace(/-/g, '').slice(0, 24)}`,
      projectId: project.id,
      ownerId: input.ownerId,
      skill: target.skill,
      agentId: target.agentId,
      ...(input.intent ? { intent: input.intent } : {}),
      message,
      ...(input.model ? { model: input.model } : {}),
      contract: target.contract,
      ...(input.webhook ? { webhook: { url: input.webhook.url, secret: input.webhook.secret ?? generated! } } : {}),
      ...(input.workspaceId ? { workspaceId: input.workspaceId } : {}),
      ...(story ? { storyKey: story.key } : {}),
      ...(Object.keys(budget).length ? { budget } : {}),
    });
    log.info('run.queued', { runId: run.id, projectId: run.projectId, skill: run.skill, agent: run.agentId });
    this.start();
    this.pump();
    return { run, ...(generated ? { webhookSecret: generated } : {}) };
  }

  /** Cancels a queued or running run; null for an unknown id. */
  async cancel(id: string): Promise<Run | null> {
    const run = await this.store.cancel(id);
    if (!run) return null;
    if (run.status === 'cancelled' && !this.controllers.has(id)) {
      this.emit(run);
      if (run.webhook) this.notify(run.id);
    }
    this.controllers.get(id)?.abort(CANCELLED);
    return run;
  }

  /**
   * Cancels every queued and running run of a person: one deactivated or removed no longer has
   * work done on the server's keys in their name (nor webhooks of results sent for them).
   */
  async cancelByOwner(ownerId: string): Promise<number> {
    const ids = await this.store.unfinishedOf(ownerId);
    for (const id of ids) await this.cancel(id);
    return ids.length;
  }

  /** Listens to one run's progress; returns the unsubscribe. */
  subscribe(runId: string, listener: (event: RunEvent) => void): () => void {
    this.bus.on(runId, listener);
    return () => this.bus.off(runId, listener);
  }

  /**
   * Stops taking runs, ends the running ones as interrupted, stops webhook retries; resolves once
   * all of that is written (a claim under way included) and the store is closed.
   */
  async close(): Promise<void> {
    if (this.closed) return this.closing;
    this.closed = true;
    this.closing = (async () => {
      if (this.poll) clearInterval(this.poll);
      if (this.sweeper) clearInterval(this.sweeper);
      for (const c of this.controllers.values()) c.abort(SERVER_SHUTDOWN);
      this.deliveries.abort();
      // Again until empty: a claim that was under way may still start a run (which ends at once).
      while (this.settled.size) await Promise.allSettled([...this.settled]);
      this.holder?.release();
      await this.opened?.close();
    })();
    return this.closing;
  }

  private closing: Promise<void> = Promise.resolve();

  /**
   * Whether a lease's holder is gone. A holder on another host sharing the store (Postgres)
   * cannot be looked up from here: it is gone only once its lease's time has passed.
   */
  private holderGone(tag: string | null): boolean {
    if (tag !== null && this.store.spansHosts && !isHolderOnThisHost(tag)) return false;
    return !isHolderAlive(tag);
  }

  /** Delivers the webhooks of ended runs that have no outcome and no live delivery. */
  private async resumeWebhooks(): Promise<void> {
    const ids = await this.store.awaitingWebhook(new Date(Date.now() - WEBHOOK_RESUME_MS).toISOString());
    for (const id of ids) this.notify(id);
  }

  private emit(run: Run): void {
    this.bus.emit(run.id, { type: 'run', run: runView(run) } satisfies RunEvent);
    // The project's subscribers (the board) hear that a run changed, on every instance.
    emitProjectEvent(run.projectId, { type: 'run', runId: run.id, storyKey: run.storyKey ?? null, workspaceId: run.workspaceId ?? null });
    this.bus.emit(ANY_RUN, run);
  }

  /** Listens to every run's changes of status in this process (the autopilot's nudge); returns the unsubscribe. */
  onChange(listener: (run: Run) => void): () => void {
    this.bus.on(ANY_RUN, listener);
    return () => this.bus.off(ANY_RUN, listener);
  }

  private leaseUntil(): string {
    return new Date(Date.now() + this.settings.leaseMs).toISOString();
  }

  private pump(): void {
    if (this.closed || this.draining || !this.started || !this.holder) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    // Kept with the runs' promises: a close waits for a claim under way.
    const pumped: Promise<void> = (async () => {
      try {
        do {
          this.pumpAgain = false;
          while (!this.closed && !this.draining && this.active < this.settings.concurrency) {
            const taken = await this.store.claim(this.holder!.tag, this.leaseUntil());
            if (!taken) break;
            this.active++;
            const done = this.execute(taken.run, taken.lease).finally(() => {
              this.active--;
              this.settled.delete(done);
              this.pump();
            });
            this.settled.add(done);
          }
        } while (this.pumpAgain && !this.closed);
      } catch (e) {
        log.error('run.queue_failed', { error: (e as Error)?.message?.slice(0, 200) });
      } finally {
        this.pumping = false;
      }
    })().finally(() => this.settled.delete(pumped));
    this.settled.add(pumped);
  }

  private async execute(run: Run, lease: RunLease): Promise<void> {
    const controller = new AbortController();
    this.controllers.set(run.id, controller);
    const untrack = this.trackTurn(controller);
    log.info('run.start', { runId: run.id, skill: run.skill, agent: run.agentId });
    this.emit(run);
    // The lease is renewed while the run works; a cancel asked of another instance reaches it here.
    const beat = setInterval(() => {
      void (async () => {
        if (!(await this.store.heartbeat(lease, this.leaseUntil()))) return controller.abort(LEASE_LOST);
        if ((await this.store.get(run.id))?.cancelRequested) controller.abort(CANCELLED);
      })().catch(() => undefined);
    }, this.settings.heartbeatMs);
    beat.unref?.();
    if (run.cancelRequested) controller.abort(CANCELLED);
    // Taken by a claim that was under way when the service closed: it ends interrupted at once.
    if (this.closed) controller.abort(SERVER_SHUTDOWN);

    let end: RunEnd;
    let conversationId: string | undefined;
    try {
      const driven = await this.drive(run, lease, controller.signal, (id) => (conversationId = id));
      end = driven;
    } catch (e) {
      const error = isAppError(e) ? { code: e.code, message: e.message } : { code: 'E_INTERNAL', message: 'The run failed unexpectedly.' };
      if (!isAppError(e)) log.error('run.crash', { runId: run.id, error: (e as Error)?.message?.slice(0, 200) });
      end = { status: 'failed', result: null, error, artifacts: [] };
    } finally {
      clearInterval(beat);
      untrack();
      this.controllers.delete(run.id);
    }
    if (controller.signal.aborted) {
      const reason = controller.signal.reason;
      if (reason === LEASE_LOST) return;
      if (reason === SERVER_SHUTDOWN) this.draining = true;
      end =
        reason === SERVER_SHUTDOWN
          ? { status: 'interrupted', result: null, error: { ...INTERRUPTED }, artifacts: end.artifacts }
          : { status: 'cancelled', result: null, error: { code: 'E_CANCELLED', message: 'The run was cancelled.' }, artifacts: end.artifacts };
    }
    if (conversationId) {
      end.artifacts = await this.artifacts(run.projectId, conversationId).catch(() => end.artifacts);
      const conversation = await this.chat.store.get(conversationId).catch(() => null);
      if (conversation) {
        end.usage = { ...conversation.usage };
        if (conversation.cost !== undefined) end.cost = conversation.cost;
      }
    }
    if (!(await this.store.finish(lease, end))) return;
    log.info('run.end', { runId: run.id, status: end.status, ...(end.error ? { code: end.error.code } : {}) });
    const stored = await this.store.get(run.id);
    if (stored) {
      this.emit(stored);
      if (stored.webhook) this.notify(stored.id);
    }
  }

  /** Turns until the skill's JSON result, a question nobody answers, or a failure. */
  private async drive(run: Run, lease: RunLease, signal: AbortSignal, onConversation: (id: string) => void): Promise<RunEnd> {
    // A run a person answered goes on in its conversation, the answer its next turn.
    const resumed = run.resume && run.conversationId ? run.resume : undefined;
    let conversationId: string | undefined = resumed ? run.conversationId : undefined;
    if (conversationId) onConversation(conversationId);
    let message = resumed ? resumed.text : run.message;
    let answers = run.answers;
    // The run's conversation is its owner's, as POST /api/chat makes a caller's.
    const author = this.authorOf && run.ownerId !== LOCAL_CALLER.id ? await this.authorOf(run.ownerId).catch(() => undefined) : undefined;
    const owner = run.ownerId !== LOCAL_CALLER.id ? { ownerId: run.ownerId, ...(author ? { author } : {}) } : {};
    // Every message of the run, the first and each answer, is its owner's words.
    const writer = run.ownerId !== LOCAL_CALLER.id ? { messageAuthor: { id: run.ownerId, name: author ?? run.ownerId } } : {};
    if (run.workspaceId && !this.placeOf) throw new AppError('E_CONFLICT', 'Workspaces are not available to runs on this server.');
    const place = run.workspaceId && this.placeOf ? { workspace: await this.placeOf(run) } : {};
    // The turn stops on the run's signal, or on its own when a budget is spent between model calls.
    const turnControl = new AbortController();
    const follow = () => turnControl.abort(signal.reason);
    if (signal.aborted) follow();
    else signal.addEventListener('abort', follow, { once: true });
    let spent: BudgetStop | null = null;
    const budgetBlocked = (stop: BudgetStop): RunEnd => ({
      status: 'blocked',
      result: { status: 'blocked', ...(run.intent ? { intent: run.intent } : {}), reason: 'E_BUDGET', budget: stop.budget, message: stop.message },
      error: { code: 'E_BUDGET', message: stop.message },
      artifacts: [],
    });
    try {
      for (let turn = 1; ; turn++) {
        spent = await this.budgetStop(run, conversationId);
        if (spent) return budgetBlocked(spent);
        this.bus.emit(run.id, { type: 'turn', turn } satisfies RunEvent);
        const from = turn === 1 && resumed?.by ? { messageAuthor: resumed.by } : writer;
        const handle = await startTurn(
          this.chat,
          { agentId: run.agentId, projectId: run.projectId, message, ...from, ...place, ...(conversationId ? { conversationId } : { ...owner }), ...(run.model && !conversationId ? { model: run.model } : {}) },
          turnControl.signal,
        );
        if (!conversationId) {
          conversationId = handle.conversationId;
          onConversation(conversationId);
          await this.store.setConversation(lease, conversationId);
          const now = await this.store.get(run.id);
          if (now) this.emit(now);
        }
        let answer = '';
        let failure: { code: string; message: string } | null = null;
        let stopReason: string | null = null;
        let calledTools = false;
        for await (const event of handle.events as AsyncIterable<TurnEvent>) {
          if (event.type === 'assistant-message' && !event.byServer) {
            calledTools = event.toolCalls.length > 0;
            if (!calledTools) answer = event.content;
          } else if (event.type === 'step-finish' && calledTools && !spent) {
            // The loop waits here for this read: stopping now keeps the next model call from being made.
            spent = await this.budgetStop(run, conversationId);
            if (spent) turnControl.abort(BUDGET_SPENT);
          } else if (event.type === 'tool-call') this.bus.emit(run.id, { type: 'tool', name: event.call.name } satisfies RunEvent);
          else if (event.type === 'tool-result') this.bus.emit(run.id, { type: 'tool', name: event.call.name, ok: event.result.ok } satisfies RunEvent);
          else if (event.type === 'error') failure = { code: event.error.code, message: event.error.message };
          else if (event.type === 'finish') stopReason = event.stopReason;
        }
        if (signal.aborted) return { status: 'cancelled', result: null, artifacts: [] };
        if (spent) return budgetBlocked(spent);
        if (failure) return { status: 'failed', result: null, error: failure, artifacts: [] };
        const reading: BuildReading = isBuildRun(run) ? await this.readBuild(run, answer) : readAnswer(answer, run.contract);
        if (reading.kind === 'end') return reading.end;
        if (reading.kind === 'result') {
          const status = reading.result.status as 'complete' | 'partial' | 'blocked';
          return { status, result: reading.result, artifacts: [] };
        }
        if (reading.kind === 'question') {
          if (answers >= this.settings.maxAnswers) {
            return { status: 'blocked', result: { status: 'blocked', ...(run.intent ? { intent: run.intent } : {}), reason: reading.question, question: reading.question }, artifacts: [] };
          }
          answers++;
          await this.store.addAnswer(lease);
          this.bus.emit(run.id, { type: 'answered', question: reading.question, answers } satisfies RunEvent);
          message = isBuildRun(run) ? BUILD_ANSWER_RULE : ANSWER_RULE;
          continue;
        }
        const required = `status${run.contract.intentRequired ? ' and intent' : ''}`;
        const why =
          reading.kind === 'invalid'
            ? `The final answer's JSON is not a valid result of ${run.skill}'s headless contract: ${reading.problems.join('; ')}.`
            : answer.trim()
              ? `The final answer holds no JSON result (${required} required by ${run.skill}'s headless contract).`
              : `The model ended without a final answer${stopReason && stopReason !== 'stop' ? ` (${stopReason})` : ''}, so there is no JSON result.`;
        return { status: 'failed', result: null, error: { code: reading.kind === 'invalid' ? 'E_INVALID_RESULT' : 'E_NO_RESULT', message: why }, artifacts: [] };
      }
    } finally {
      signal.removeEventListener('abort', follow);
    }
  }

  /** The budget, the run's own or its project's, that is spent; null while both have room. */
  private async budgetStop(run: Run, conversationId: string | undefined): Promise<BudgetStop | null> {
    if (run.budget) {
      const c = conversationId ? await this.chat.store.get(conversationId) : null;
      // An answered run's budget counts from the answer: a person chose to let it go on.
      const from = run.resume?.from ?? { tokens: 0, usd: 0 };
      const used = { tokens: (c ? c.usage.promptTokens + c.usage.completionTokens : 0) - from.tokens, usd: (c?.cost ?? 0) - from.usd };
      const own = runStop(run.budget, used);
      if (own) return own;
    }
    return this.projectBudget ? this.projectBudget(run.projectId, run.ownerId) : null;
  }

  /**
   * Queues a blocked run again with a person's answer: its next turn, in its conversation (and
   * workspace), once a slot is free. Null when the run is not blocked (or unknown).
   */
  async answer(id: string, text: string, by?: { id: string; name: string }): Promise<Run | null> {
    // A blocked run's usage no longer moves: read before the resume, it is what the run had used.
    const was = await this.store.get(id);
    if (!was || was.status !== 'blocked') return null;
    const from = { tokens: was.usage.promptTokens + was.usage.completionTokens, usd: was.cost ?? 0 };
    const run = await this.store.resume(id, { text, ...(by ? { by } : {}), from });
    if (!run) return null;
    log.info('run.answered', { runId: run.id });
    this.emit(run);
    this.start();
    this.pump();
    return run;
  }

  private async readBuild(run: Run, answer: string): Promise<BuildReading> {
    if (!this.judgeBuild) return { kind: 'end', end: { status: 'failed', result: null, error: { code: 'E_NO_RESULT', message: 'This server cannot read build results.' }, artifacts: [] } };
    return readBuildTurn(run, answer, this.judgeBuild);
  }

  /** The files the run's conversation wrote, each with the version it left in the project's version store. */
  private async artifacts(projectId: string, conversationId: string): Promise<Run['artifacts']> {
    const project = await this.chat.projects.get(projectId);
    if (!project) return [];
    const versions = await projectVersions(this.chat.config.dataDir, { id: project.id, root: project.root });
    return (await versions.files()).filter((f) => f.conversationId === conversationId).map((f) => ({ path: f.path, version: f.version }));
  }

  /**
   * POSTs the ended run to its webhook, in the background: the queue never waits for it. The
   * delivery is claimed in the store first, so of several instances (or a restart racing this
   * one) one delivers it; a shutdown that cuts it off gives it back for the next start.
   */
  private notify(runId: string): void {
    if (this.closed || !this.holder) return;
    const holder = this.holder.tag;
    const delivery = (async () => {
      const now = Date.now();
      const until = new Date(now + deliveryMs(this.settings.webhook) + this.settings.leaseMs).toISOString();
      const taken = await this.store.claimWebhook(runId, holder, until, new Date(now).toISOString(), (h) => this.holderGone(h));
      if (!taken || !taken.run.webhook) return;
      const { run, claim } = taken;
      const outcome = await deliverWebhook(run.webhook!, run.id, JSON.stringify(runView(run)), this.settings.webhook, this.deliveries.signal);
      if (!outcome.delivered && this.deliveries.signal.aborted) {
        log.info('run.webhook_deferred', { runId: run.id });
        await this.store.releaseWebhook(claim);
        return;
      }
      log.info('run.webhook', { runId: run.id, delivered: outcome.delivered, attempts: outcome.attempts, ...(outcome.status ? { status: outcome.status } : {}) });
      await this.store.setWebhookOutcome(claim, outcome);
    })()
      .catch(() => undefined)
      .finally(() => this.settled.delete(delivery));
    this.settled.add(delivery);
  }
}

import type { RunBudget } from '../../store/budgets/types';

/**
 * A headless run: one BMAD skill started with its headless contract, driven with no person to a
 * JSON result. The shapes here are the store's and the API's.
 */

export type RunStatus = 'queued' | 'running' | 'complete' | 'partial' | 'blocked' | 'failed' | 'cancelled' | 'interrupted';

export const TERMINAL: ReadonlySet<RunStatus> = new Set(['complete', 'partial', 'blocked', 'failed', 'cancelled', 'interrupted']);

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.has(status);
}

/** The error of a run its holder could not end: the process stopped or died while it ran. */
export const INTERRUPTED = { code: 'E_INTERRUPTED', message: 'The server stopped while the run was running; start it again.' } as const;

/** What a skill's headless contract asks of a run (see contract.ts). */
export interface HeadlessContract {
  skill: string;
  /** How the skill is told it runs headless, as its contract words it: `headless: true` or `--headless`. */
  flag: string;
  /** Whether the skill's JSON schema has an `intent` field (spec's and prfaq's have none). */
  intentRequired: boolean;
  /** The contract's files, relative to the project. */
  files: string[];
}

export interface RunArtifact {
  /** Relative to the project, posix. */
  path: string;
  /** The version id in the project's version store. */
  version: string;
}

export interface RunError {
  code: string;
  message: string;
}

export interface RunUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export interface WebhookOutcome {
  delivered: boolean;
  attempts: number;
  /** The last HTTP status received, when there was one. */
  status?: number;
  /** Why the last attempt failed. */
  error?: string;
  at: string;
}

export interface Run {
  id: string;
  projectId: string;
  /** The caller who created it. */
  ownerId: string;
  skill: string;
  /** The project agent the skill runs under. */
  agentId: string;
  intent?: string;
  /** The conversation's first user message, exactly as sent. */
  message: string;
  /** A model profile by name. */
  model?: string;
  contract: HeadlessContract;
  status: RunStatus;
  /** The skill's JSON result (validated), or the server's blocked result for a question nobody answered. */
  result: Record<string, unknown> | null;
  error?: RunError;
  artifacts: RunArtifact[];
  conversationId?: string;
  /** The workspace of its project it runs in (its checkout is `{project-root}`). */
  workspaceId?: string;
  /** The sprint story it builds (`N-M-slug`): its result is read from the story's files, and the board shows it. */
  storyKey?: string;
  usage: RunUsage;
  cost?: number;
  /** How many questions the server answered with the contract's rule. */
  answers: number;
  webhook?: { url: string; secret: string };
  webhookOutcome?: WebhookOutcome;
  cancelRequested: boolean;
  createdAt: string;
  updatedAt: string;
  startedAt?: string;
  endedAt?: string;
  /** The run's own limit (every turn of its conversation counts). */
  budget?: RunBudget;
  /** A person's answer to a blocked run, sent as the next turn of its conversation when the run is taken again. */
  resume?: RunResume;
}

/** A person's answer to a blocked run and who gave it. */
export interface RunResume {
  text: string;
  by?: { id: string; name: string };
  /** What the run had used when it was answered: its own budget counts again from there. */
  from?: { tokens: number; usd: number };
}

/** What a store needs to queue a run; the rest of a Run starts empty. */
export type NewRun = Pick<Run, 'id' | 'projectId' | 'ownerId' | 'skill' | 'agentId' | 'intent' | 'message' | 'model' | 'contract' | 'webhook' | 'workspaceId' | 'storyKey' | 'budget'>;

/** A run this holder took: release it exactly once, with `finish`. */
export interface RunLease {
  runId: string;
  token: string;
}

/**
 * A webhook delivery this holder took: of several instances, one delivers a run's end at a
 * time. `token` is the store's, opaque to its user.
 */
export interface WebhookClaim {
  runId: string;
  token: string;
}

/** How a run ended, as the runner writes it. */
export interface RunEnd {
  status: Exclude<RunStatus, 'queued' | 'running'>;
  result: Record<string, unknown> | null;
  error?: RunError;
  artifacts: RunArtifact[];
  usage?: RunUsage;
  cost?: number;
}

/** The API's view of a run: never the webhook secret, never the lease. */
export interface RunView {
  id: string;
  projectId: string;
  skill: string;
  agentId: string;
  intent: string | null;
  model: string | null;
  status: RunStatus;
  result: Record<string, unknown> | null;
  error: RunError | null;
  artifacts: RunArtifact[];
  conversationId: string | null;
  usage: RunUsage;
  cost: number | null;
  answers: number;
  webhook: { url: string; outcome: WebhookOutcome | null } | null;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  /** Set for a run in a workspace: its branch, commits ahead of the base, changed files. */
  workspace?: RunWorkspace | null;
  budget: RunBudget | null;
}

export function runView(run: Run): RunView {
  return {
    id: run.id,
    projectId: run.projectId,
    skill: run.skill,
    agentId: run.agentId,
    intent: run.intent ?? null,
    model: run.model ?? null,
    status: run.status,
    result: run.result,
    error: run.error ?? null,
    artifacts: run.artifacts,
    conversationId: run.conversationId ?? null,
    usage: run.usage,
    cost: run.cost ?? null,
    answers: run.answers,
    webhook: run.webhook ? { url: run.webhook.url, outcome: run.webhookOutcome ?? null } : null,
    createdAt: run.createdAt,
    startedAt: run.startedAt ?? null,
    endedAt: run.endedAt ?? null,
    budget: run.budget ?? null,
  };
}

/** Where a run in a workspace left its work. */
export interface RunWorkspace {
  id: string;
  branch: string;
  ahead: number;
  files: { path: string; status: string; additions: number | null; deletions: number | null }[];
}

/**
 * Storage of runs. Every method returns a Promise, so a network store (Postgres) can implement
 * it; `claim`, `finish`, `recover` and `cancel` must each be one atomic step there too (a
 * conditional UPDATE), so that of many instances exactly one takes, ends or cancels a run.
 */
export interface RunStore {
  /**
   * Whether instances on other hosts share this store (Postgres): a holder there cannot be
   * looked up from here, so only its lease's time says it is gone.
   */
  readonly spansHosts: boolean;
  create(run: NewRun): Promise<Run>;
  get(id: string): Promise<Run | null>;
  /** Newest first. */
  list(options: { projectId: string; limit?: number }): Promise<Run[]>;
  /** Takes the oldest queued run for `holder` (its encoded identity) until `leaseUntil`; null when none waits. */
  claim(holder: string, leaseUntil: string): Promise<{ run: Run; lease: RunLease } | null>;
  /** Extends a held lease; false when the lease is no longer held (the run was ended elsewhere). */
  heartbeat(lease: RunLease, leaseUntil: string): Promise<boolean>;
  /** Records the run's conversation, once known. */
  setConversation(lease: RunLease, conversationId: string): Promise<void>;
  /** Counts one question the server answered. */
  addAnswer(lease: RunLease): Promise<void>;
  /** Ends a held run; false when the lease was lost (nothing written). */
  finish(lease: RunLease, end: RunEnd): Promise<boolean>;
  /**
   * Ends `running` runs whose holder is gone (`isGone(holder)`, or its lease expired before
   * `now`) as interrupted; returns them.
   */
  recover(now: string, isGone: (holder: string | null) => boolean): Promise<Run[]>;
  /**
   * Cancels a run: a queued one ends `cancelled` at once; a running one is marked so its holder
   * stops it. Null for an unknown id.
   */
  cancel(id: string): Promise<Run | null>;
  /** The project's runs made for sprint stories, newest first (at most `limit`, default 1000). */
  storyRuns(projectId: string, limit?: number): Promise<Run[]>;
  /**
   * Queues a blocked run again with a person's answer (`resume`), its result, error and end
   * cleared (and its webhook's outcome: the new end is sent). One conditional UPDATE: of two
   * answers at once one takes it. Null when the run is unknown or not blocked.
   */
  resume(id: string, answer: RunResume): Promise<Run | null>;
  /** Ids of a person's queued and running runs (to end them when the person is deactivated or removed). */
  unfinishedOf(ownerId: string): Promise<string[]>;
  /**
   * Takes the delivery of an ended run's webhook for `holder` until `until`: only when the run
   * has a webhook, no outcome, and no delivery under way (or one whose holder is gone or whose
   * time passed before `now`). One conditional UPDATE, so one holder takes it; null otherwise.
   */
  claimWebhook(id: string, holder: string, until: string, now: string, isGone: (holder: string) => boolean): Promise<{ run: Run; claim: WebhookClaim } | null>;
  /** Ids of runs that ended after `since` with a webhook and no outcome yet (deliveries under way too), oldest first. */
  awaitingWebhook(since: string): Promise<string[]>;
  /**
   * Records a delivery's outcome, which ends its claim; nothing while another holder has taken
   * the delivery over (this one's time ran out): its outcome is the one to keep.
   */
  setWebhookOutcome(claim: WebhookClaim, outcome: WebhookOutcome): Promise<void>;
  /** Gives back a claimed delivery undone (a shutdown cut it off), for the next start to make; only while the claim is still this one. */
  releaseWebhook(claim: WebhookClaim): Promise<void>;
  close(): Promise<void>;
}

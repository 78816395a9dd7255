/**
 * The autopilot's state as the store keeps it: a project's settings and who enabled it, each
 * story it took with its step, and the decisions it waits on a person for.
 */

export type PipelineStep =
  | 'starting'
  | 'building'
  | 'reviewing'
  | 'testing'
  | 'queued-to-merge'
  | 'merging'
  | 'awaiting-pull-request'
  | 'merged'
  | 'held'
  | 'stopped';

/** Steps that hold one of the project's parallel slots. */
export const ACTIVE_STEPS: ReadonlySet<PipelineStep> = new Set(['starting', 'building', 'reviewing', 'testing', 'queued-to-merge', 'merging', 'awaiting-pull-request']);

export interface AutopilotSettings {
  enabled: boolean;
  maxParallel: number;
  order: 'epic' | 'free';
  reviewSkill: string | null;
  reviewModel: string | null;
  maxReviewRounds: number;
  testCommand: string | null;
  merge: { onRed: 'decide' | 'rebuild' };
}

export const DEFAULT_SETTINGS: AutopilotSettings = {
  enabled: false,
  maxParallel: 2,
  order: 'epic',
  reviewSkill: null,
  reviewModel: null,
  maxReviewRounds: 2,
  testCommand: null,
  merge: { onRed: 'decide' },
};

export interface PersonRef {
  id: string;
  name: string;
}

export interface AutopilotState {
  projectId: string;
  settings: AutopilotSettings;
  enabledBy: PersonRef | null;
  paused: { reason: string; since: string } | null;
  updatedAt: string;
}

export interface PipelineRow {
  projectId: string;
  storyKey: string;
  step: PipelineStep;
  /** Build/review round, from 1. */
  round: number;
  since: string;
  note: string | null;
  workspaceId: string | null;
  /** The run the step waits on. */
  runId: string | null;
  /** What that run is: the build of the round, or its review. */
  runKind: 'build' | 'review' | null;
  /** A person chose to merge without the test gate. */
  skipGate: boolean;
  /** Bumped by every change: a change is made only from the version read (compare-and-swap). */
  version: number;
}

export type PipelinePatch = Partial<Pick<PipelineRow, 'step' | 'round' | 'note' | 'workspaceId' | 'runId' | 'runKind' | 'skipGate'>>;

export type DecisionKind = 'question' | 'blocked' | 'review-rounds' | 'test-gate' | 'budget' | 'failed' | 'dependencies';
export type DecisionAction = 'answer' | 'retry' | 'skip' | 'merge-anyway' | 'stop';

export interface DecisionRow {
  id: string;
  projectId: string;
  storyKey: string | null;
  kind: DecisionKind;
  text: string;
  detail: string | null;
  runId: string | null;
  actions: DecisionAction[];
  since: string;
  resolvedAt: string | null;
}

/**
 * Storage of the autopilot. Every change that two instances could make at once is one
 * conditional statement: the project's lease (one instance drives a project at a time), a story
 * taken once (its key is the row's key), a story's step moved only from the version read, a
 * decision resolved once.
 */
export interface AutopilotStore {
  get(projectId: string): Promise<AutopilotState | null>;
  /** Projects whose autopilot is on, or has stories under way. */
  projects(): Promise<string[]>;
  putSettings(projectId: string, settings: AutopilotSettings, enabledBy: PersonRef | null | undefined): Promise<AutopilotState>;
  setPaused(projectId: string, paused: AutopilotState['paused']): Promise<void>;
  /** Takes (or renews) the project's lease for `holder` until `until`: when free, its own, past `now`, or its holder gone. */
  lease(projectId: string, holder: string, until: string, now: string, isGone: (holder: string) => boolean): Promise<boolean>;
  release(projectId: string, holder: string): Promise<void>;
  stories(projectId: string): Promise<PipelineRow[]>;
  /** Takes a story: false when the autopilot already has it. */
  insertStory(row: Omit<PipelineRow, 'version'>): Promise<boolean>;
  /** Changes a story's row from `version`; null when it moved meanwhile. */
  updateStory(projectId: string, storyKey: string, version: number, patch: PipelinePatch): Promise<PipelineRow | null>;
  removeStory(projectId: string, storyKey: string): Promise<void>;
  decisions(projectId: string, opts?: { open?: boolean }): Promise<DecisionRow[]>;
  addDecision(row: Omit<DecisionRow, 'resolvedAt'>): Promise<void>;
  /** Resolves an open decision; false when it was resolved already (or is unknown). */
  resolveDecision(projectId: string, id: string, at: string): Promise<boolean>;
  close(): Promise<void>;
}

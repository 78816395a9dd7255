/**
 * The browser's side of a project's autopilot (GET/PUT /api/projects/:id/autopilot, its decisions
 * and Stop all) and the words for where it has each story. A server without the autopilot answers
 * 404 or 501: `get` answers null and the board shows no panel.
 */
import type { AutopilotDecisionView, AutopilotSettingsView, AutopilotView, StoryPipelineView } from '@/types/api';
import { ApiError, request } from './api';

export type { AutopilotDecisionView, AutopilotView, StoryPipelineView };

export type DecisionAction = AutopilotDecisionView['actions'][number];

const enc = encodeURIComponent;
const base = (projectId: string) => `/api/projects/${enc(projectId)}/autopilot`;

/** What a settings change may hold; fields left out keep their values. */
export type AutopilotPatch = Partial<Pick<AutopilotSettingsView, 'enabled' | 'maxParallel' | 'order' | 'reviewSkill' | 'reviewModel' | 'maxReviewRounds' | 'testCommand' | 'merge'>>;

export const autopilotApi = {
  /** The autopilot with what it is doing; null where the server has none (404, 501). */
  get: async (projectId: string, signal?: AbortSignal): Promise<AutopilotView | null> => {
    try {
      return await request<AutopilotView>(base(projectId), { signal });
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 501)) return null;
      throw e;
    }
  },
  save: (projectId: string, patch: AutopilotPatch) => request<AutopilotView>(base(projectId), { method: 'PUT', body: JSON.stringify(patch) }),
  decide: (projectId: string, decisionId: string, action: DecisionAction, answer?: string) =>
    request<unknown>(`${base(projectId)}/decisions/${enc(decisionId)}`, { method: 'POST', body: JSON.stringify({ action, ...(answer !== undefined ? { answer } : {}) }) }),
  stopAll: (projectId: string) => request<unknown>(`${base(projectId)}/stop`, { method: 'POST' }),
};

/** A card's step in words: "building", "in review round 2", "testing the merge", "queued to merge", "merged", "held". */
export function stepText(p: StoryPipelineView): string {
  switch (p.step) {
    case 'waiting':
      return 'waiting to start';
    case 'building':
      return p.round > 1 ? `building, round ${p.round}` : 'building';
    case 'reviewing':
      return `in review round ${p.round}`;
    case 'testing':
      return 'testing the merge';
    case 'queued-to-merge':
      return 'queued to merge';
    case 'merging':
      return 'merging';
    case 'awaiting-pull-request':
      return 'waiting for its pull request';
    case 'merged':
      return 'merged';
    case 'held':
      return 'held';
    case 'stopped':
      return 'stopped';
    default:
      return String(p.step);
  }
}

export const ACTION_WORDS: Record<DecisionAction, string> = {
  answer: 'Answer',
  retry: 'Retry',
  skip: 'Skip the story',
  'merge-anyway': 'Merge anyway',
  stop: 'Stop',
};

export const DECISION_KIND_WORDS: Record<AutopilotDecisionView['kind'], string> = {
  question: 'asks',
  blocked: 'blocked',
  'review-rounds': 'review rounds used up',
  'test-gate': 'tests failed on the merge',
  budget: 'budget spent',
  failed: 'failed',
  dependencies: 'dependencies',
};

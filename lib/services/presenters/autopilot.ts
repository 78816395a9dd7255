import type { AutopilotState, DecisionRow, DependencyProblem, PipelineRow } from '../../engine/autopilot';
import { ACTIVE_STEPS, DEFAULT_SETTINGS } from '../../engine/autopilot';
import type { AutopilotDecisionView, AutopilotSettingsView, AutopilotView, StoryPipelineView } from '../../../types/api';

export function settingsView(state: AutopilotState | null): AutopilotSettingsView {
  const s = state?.settings ?? DEFAULT_SETTINGS;
  return {
    enabled: s.enabled,
    maxParallel: s.maxParallel,
    order: s.order,
    reviewSkill: s.reviewSkill,
    reviewModel: s.reviewModel,
    maxReviewRounds: s.maxReviewRounds,
    testCommand: s.testCommand,
    merge: { onRed: s.merge.onRed },
  };
}

/** A story's row as the board shows it: a story being started is building. */
export function pipelineView(row: PipelineRow): StoryPipelineView {
  return { step: row.step === 'starting' ? 'building' : row.step, round: row.round, since: row.since, note: row.note };
}

export function decisionView(d: DecisionRow): AutopilotDecisionView {
  return { id: d.id, storyKey: d.storyKey, kind: d.kind, text: d.text, detail: d.detail, runId: d.runId, actions: [...d.actions], since: d.since };
}

/** The autopilot of a project: its settings, who it acts as, what it is doing and what it waits on. */
export function autopilotView(state: AutopilotState | null, rows: PipelineRow[], decisions: DecisionRow[], problems: DependencyProblem[]): AutopilotView {
  const stories: Record<string, StoryPipelineView> = {};
  for (const r of rows) stories[r.storyKey] = pipelineView(r);
  return {
    ...settingsView(state),
    enabledBy: state?.enabledBy ? { id: state.enabledBy.id, name: state.enabledBy.name } : null,
    running: rows.filter((r) => ACTIVE_STEPS.has(r.step)).length,
    paused: state?.paused ?? null,
    stories,
    problems: problems.map((p) => ({ kind: p.kind, stories: [...p.stories], text: p.text })),
    decisions: decisions.map(decisionView),
  };
}

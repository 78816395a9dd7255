/**
 * The browser's side of a project's sprint board: the board read from the base branch's sprint
 * status, starting and moving stories, the project's monthly budget and the answers people give
 * runs that wait on them. Shapes are the wire types of types/api.ts.
 */
import type { BoardStoryView, BoardView, BudgetView, DecisionView, ProjectView, PublishView, PullRequestView, StoryStartView } from '@/types/api';
import { ApiError, request } from './api';
import { isActive } from './runs';
import { workspaceActionError } from './workspaces';

export type { BoardStoryView, BoardView, BudgetView, DecisionView, PublishView, PullRequestView, StoryStartView };

/** The sprint's lanes, in BMAD's order; a story with any other status gets a lane of its own after them. */
export const BOARD_COLUMNS = ['backlog', 'ready-for-dev', 'in-progress', 'review', 'done'] as const;
export type BoardColumn = (typeof BOARD_COLUMNS)[number];

export const COLUMN_NAMES: Record<BoardColumn, string> = {
  backlog: 'Backlog',
  'ready-for-dev': 'Ready for dev',
  'in-progress': 'In progress',
  review: 'Review',
  done: 'Done',
};


export function isBoardColumn(status: string | null | undefined): status is BoardColumn {
  return !!status && (BOARD_COLUMNS as readonly string[]).includes(status);
}

export const isRunActive = (run: BoardStoryView['run'] | null | undefined): boolean => !!run && isActive(run.status);

/** Whether anything on the board may still change by itself: a run that has not ended. */
export function hasActiveRuns(board: BoardView | null): boolean {
  return !!board?.epics.some((e) => e.stories.some((s) => isRunActive(s.run)));
}

/** The stories of one lane, epic by epic (epics without one left out). */
export function storiesIn(board: BoardView, inLane: (status: string | null) => boolean): { epic: string; list: BoardStoryView[] }[] {
  return board.epics.map((e) => ({ epic: e.key, list: e.stories.filter((s) => inLane(s.status)) })).filter((g) => g.list.length > 0);
}

/** Statuses a story has that are none of the lanes' (`drafted`, a typo, none at all), in the order met. */
export function otherStatuses(board: BoardView): string[] {
  const seen = new Set<string>();
  for (const e of board.epics) for (const s of e.stories) if (!isBoardColumn(s.status)) seen.add(s.status ?? '');
  return [...seen];
}

export type ProjectRole = NonNullable<ProjectView['role']>;

/** What a role may do on the board: viewers read, editors work the stories, owners also set the budget. */
export function boardPermissions(role: ProjectRole | null | undefined): { write: boolean; budget: boolean } {
  return { write: role === 'owner' || role === 'editor', budget: role === 'owner' };
}

/** "12,345 tokens · 0.42" (no currency: prices are the operator's). */
export function spendText(spend: { tokens: number; usd: number | null } | null | undefined): string {
  if (!spend) return '';
  const tokens = `${spend.tokens.toLocaleString('en-US')} ${spend.tokens === 1 ? 'token' : 'tokens'}`;
  return spend.usd === null ? tokens : `${tokens} · $${spend.usd < 0.01 && spend.usd > 0 ? spend.usd.toPrecision(2) : spend.usd.toFixed(2)}`;
}

/** What starting a story takes; everything optional: the server picks the project release's build skill. */
export interface StartStoryInput {
  skill?: string;
  model?: string;
  /** Appended to the run's first message. */
  inputs?: string;
  budget?: { tokens?: number; usd?: number };
}

/** A budget change: a number sets a limit, null removes it, a field left out stays as it is. */
export interface BudgetInput {
  monthlyTokens?: number | null;
  monthlyUsd?: number | null;
  /** What each person may spend in the project in a month. */
  perPerson?: { monthlyTokens?: number | null; monthlyUsd?: number | null };
}

const enc = encodeURIComponent;

const call = request;

const project = (projectId: string) => `/api/projects/${enc(projectId)}`;

export const boardApi = {
  board: (projectId: string, signal?: AbortSignal) => call<BoardView>(`${project(projectId)}/board`, { signal }),
  start: (projectId: string, key: string, input: StartStoryInput = {}) =>
    call<StoryStartView>(`${project(projectId)}/board/stories/${enc(key)}/start`, { method: 'POST', body: JSON.stringify(input) }),
  move: (projectId: string, key: string, status: string) =>
    call<unknown>(`${project(projectId)}/board/stories/${enc(key)}`, { method: 'PATCH', body: JSON.stringify({ status }) }),
  budget: (projectId: string, signal?: AbortSignal) => call<BudgetView>(`${project(projectId)}/budget`, { signal }),
  saveBudget: (projectId: string, input: BudgetInput) => call<BudgetView>(`${project(projectId)}/budget`, { method: 'PUT', body: JSON.stringify(input) }),
  answer: (runId: string, text: string) => call<unknown>(`/api/runs/${enc(runId)}/answer`, { method: 'POST', body: JSON.stringify({ text }) }),
  publish: (projectId: string, workspaceId: string, draft?: boolean) =>
    call<PublishView>(`${project(projectId)}/workspaces/${enc(workspaceId)}/publish`, { method: 'POST', body: JSON.stringify(draft === undefined ? {} : { draft }) }),
};

export type ForgeKind = NonNullable<BoardView['pullRequests']>['forge'];

/** What a forge calls a pull request (GitLab: a merge request), and how it numbers one. */
export function pullRequestName(forge: ForgeKind | null | undefined): { noun: string; number: (n: number) => string } {
  return forge === 'gitlab' ? { noun: 'merge request', number: (n) => `!${n}` } : { noun: 'pull request', number: (n) => `#${n}` };
}

const CHECK_WORDS: Record<string, string> = { success: 'checks passed', failure: 'checks failed', pending: 'checks running', neutral: 'checks neutral' };

/** A pull request's state and checks in a few words: `open · checks passed`. */
export function pullRequestText(pr: PullRequestView): string {
  const state = pr.state === 'open' && pr.draft ? 'draft' : pr.state;
  const checks = pr.checks?.state ? ` · ${CHECK_WORDS[pr.checks.state]}` : '';
  return `${state}${checks}`;
}

/** A refused board action in words a person can act on; the server's own message otherwise. */
export function boardErrorText(e: unknown, what: 'start' | 'move' | 'answer' | 'merge' | 'budget' | 'publish'): string {
  const ae = e instanceof ApiError ? e : null;
  const message = (e as Error)?.message || 'Something went wrong.';
  if (!ae) return message;
  if (ae.code === 'E_STORY_BUSY') return 'A run is already working on this story; wait for it to end (or cancel it) first.';
  if (ae.code === 'E_BUILD_DISABLED') return 'Build is off for this project: its owner has to enable it (in Build below) before stories can be started.';
  if (ae.code === 'E_BUDGET' || ae.status === 402) return `The project’s budget is spent: ${message}`;
  if (ae.status === 403 || ae.code === 'E_FORBIDDEN') return what === 'budget' ? 'Only the project’s owner can change its budget.' : 'Your role in this project does not allow this.';
  if (ae.code === 'E_GIT_LOCKED' && what === 'merge') return workspaceActionError(ae, 'merge', 'the base').message;
  if (ae.code === 'E_BASE_DIRTY' && what === 'merge') return 'The project folder has uncommitted changes, so nothing was merged. Commit or undo them in the project folder, then merge again.';
  if (ae.code === 'E_BASE_DIRTY') return `The project folder’s sprint status has uncommitted changes, so nothing was changed: ${message}`;
  return message;
}

/** The sprint planning command of a project's agents (`bmad-sprint-planning`, or 6.0.x's `sprint-planning` workflow). */
export function sprintPlanningCommand(agents: { id: string; name: string; commands: { cmd: string; target?: string; name?: string; problem?: string }[] }[]): {
  agentId: string;
  agentName: string;
  command: string;
} | null {
  const PLANNING = /(^|[/:\s])(bmad-)?(bmm-)?sprint-planning(\/|\.|$)/;
  for (const a of agents) {
    for (const c of a.commands) {
      if (c.problem) continue;
      if (PLANNING.test((c.target ?? '').trim()) || PLANNING.test(c.name ?? '')) return { agentId: a.id, agentName: a.name, command: c.cmd };
    }
  }
  return null;
}

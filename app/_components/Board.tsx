'use client';

import './board.css';
import { RUN_STATUS_WORDS } from '../_lib/runs';
import { useCallback, useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { AgentSummary } from '@/types/api';
import type { ApiError } from '../_lib/api';
import {
  BOARD_COLUMNS,
  COLUMN_NAMES,
  boardApi,
  boardErrorText,
  boardPermissions,
  hasActiveRuns,
  isBoardColumn,
  otherStatuses,
  spendText,
  sprintPlanningCommand,
  storiesIn,
  type BoardStoryView,
  type BoardView,
  type BudgetView,
  type ForgeKind,
  type ProjectRole,
} from '../_lib/board';
import { relativeTime } from '../_lib/format';
import { autopilotApi, stepText, type AutopilotView, type StoryPipelineView } from '../_lib/autopilot';
import { useProjectEvents } from '../_lib/projectEvents';
import { AutopilotPanel } from './BoardAutopilot';
import { shortSha } from '../_lib/workspaces';
import { AnswerForm, BoardStory, PullRequestLink } from './BoardStory';
import type { OpenDocument } from './RunsList';
import { Spinner } from './icons';

/** While a run on the board has not ended and no event stream is open, the board is read again this often: its card moves by itself. */
const POLL_MS = 2500;
/** With the event stream open the board is still read again this often, should an event have been lost. */
const SLOW_POLL_MS = 60_000;
/** Events that come together are one read. */
const EVENT_COALESCE_MS = 150;

const epicName = (key: string) => key.replace(/^epic-/, 'Epic ');

/** One story's card: what it is, where its run stands and what it cost; the title opens it. */
function StoryCard({
  story,
  pipeline,
  showStatus,
  forge,
  onOpen,
}: {
  story: BoardStoryView;
  pipeline?: StoryPipelineView | null;
  showStatus: boolean;
  forge?: ForgeKind | null;
  onOpen: () => void;
}) {
  return (
    <li className="board-card" data-testid="board-card" data-key={story.key} data-status={story.status ?? ''} data-run={story.run?.status ?? ''} data-step={pipeline?.step ?? ''}>
      <button type="button" className="board-card-open" onClick={onOpen} data-testid="board-card-open">
        {story.title || story.key}
      </button>
      <span className="board-card-meta">
        <code>{story.key}</code>
        {showStatus ? <span className="board-card-label">{story.status ?? 'no status'}</span> : null}
        {story.run ? (
          <span className={`board-run board-run-${story.run.status}`} data-testid="board-card-run">
            run {RUN_STATUS_WORDS[story.run.status]}
          </span>
        ) : null}
        {story.spend ? <span className="board-card-spend">{spendText(story.spend)}</span> : null}
        {story.pullRequest ? <PullRequestLink pr={story.pullRequest} forge={forge} /> : null}
        {pipeline ? (
          <span className={`board-step board-step-${pipeline.step}`} data-testid="board-card-step" title={pipeline.note ?? undefined}>
            {stepText(pipeline)}
          </span>
        ) : null}
      </span>
    </li>
  );
}

/** One lane: its stories, epic by epic. */
function Lane({
  name,
  id,
  stories,
  pipelines,
  showStatus,
  forge,
  onOpen,
}: {
  name: string;
  id: string;
  stories: { epic: string; list: BoardStoryView[] }[];
  pipelines: Record<string, StoryPipelineView>;
  showStatus: boolean;
  forge?: ForgeKind | null;
  onOpen: (key: string) => void;
}) {
  const headingId = useId();
  const count = stories.reduce((n, g) => n + g.list.length, 0);
  return (
    <section className="board-lane" aria-labelledby={headingId} data-testid="board-column" data-column={id}>
      <h3 id={headingId} className="board-lane-title">
        {name} <span className="board-count">({count})</span>
      </h3>
      {count === 0 ? <p className="board-lane-empty">No story.</p> : null}
      {stories.map((g) => (
        <div key={g.epic} className="board-epic">
          <h4 className="board-epic-name">{epicName(g.epic)}</h4>
          <ul className="board-cards">
            {g.list.map((s) => (
              <StoryCard key={s.key} story={s} pipeline={s.pipeline ?? pipelines[s.key] ?? null} showStatus={showStatus} forge={forge} onOpen={() => onOpen(s.key)} />
            ))}
          </ul>
        </div>
      ))}
    </section>
  );
}

const tokensText = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'token' : 'tokens'}`;
const usdText = (n: number) => `$${n.toFixed(2)}`;

/** The project's monthly budget and this month's spend; its owner may change the limits. */
function BudgetLine({ projectId }: { projectId: string }) {
  const id = useId();
  const [budget, setBudget] = useState<BudgetView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const [form, setForm] = useState({ tokens: '', usd: '', personTokens: '', personUsd: '' });
  const [saveError, setSaveError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const ac = new AbortController();
    boardApi.budget(projectId, ac.signal).then(setBudget, (e: Error) => {
      // A server without budgets has no such route: the line is left out rather than shown broken.
      if (e.name !== 'AbortError' && (e as ApiError).status !== 404) setError(e.message);
    });
    return () => ac.abort();
  }, [projectId]);

  if (error) return <p className="build-help" data-testid="budget-line">The budget could not be read: {error}</p>;
  if (!budget) return null;

  const save = async (e: FormEvent) => {
    e.preventDefault();
    const parse = (v: string, whole: boolean): number | null | 'bad' => {
      const t = v.trim();
      if (!t) return null;
      const n = Number(t);
      return Number.isFinite(n) && n >= 0 && (!whole || Number.isInteger(n)) ? n : 'bad';
    };
    const monthlyTokens = parse(form.tokens, true);
    const monthlyUsd = parse(form.usd, false);
    const personTokens = parse(form.personTokens, true);
    const personUsd = parse(form.personUsd, false);
    if (monthlyTokens === 'bad' || monthlyUsd === 'bad' || personTokens === 'bad' || personUsd === 'bad') {
      setSaveError('A limit is a number of 0 or more (tokens: a whole number); empty removes it.');
      return;
    }
    const per = budget.perPerson;
    // Limits per person are sent only when they change: a server without them keeps working.
    const perPerson = per && (per.monthlyTokens !== personTokens || per.monthlyUsd !== personUsd) ? { perPerson: { monthlyTokens: personTokens, monthlyUsd: personUsd } } : {};
    setBusy(true);
    setSaveError(null);
    try {
      setBudget(await boardApi.saveBudget(projectId, { monthlyTokens, monthlyUsd, ...perPerson }));
      setEditing(false);
    } catch (err) {
      setSaveError(boardErrorText(err, 'budget'));
    } finally {
      setBusy(false);
    }
  };

  const limit = [budget.monthlyTokens !== null ? tokensText(budget.monthlyTokens) : null, budget.monthlyUsd !== null ? usdText(budget.monthlyUsd) : null].filter(Boolean).join(' or ');
  const perPersonLimit = budget.perPerson
    ? [budget.perPerson.monthlyTokens !== null ? tokensText(budget.perPerson.monthlyTokens) : null, budget.perPerson.monthlyUsd !== null ? usdText(budget.perPerson.monthlyUsd) : null].filter(Boolean).join(' or ')
    : '';
  return (
    <div className="board-budget" data-testid="budget-line">
      <p>
        Budget for {budget.month}: spent {spendText(budget.spent)}
        {limit ? ` of ${limit}` : ' (no limit)'}.{' '}
        {!editing ? (
          <button
            type="button"
            className="link-button"
            onClick={() => {
              setForm({
                tokens: budget.monthlyTokens?.toString() ?? '',
                usd: budget.monthlyUsd?.toString() ?? '',
                personTokens: budget.perPerson?.monthlyTokens?.toString() ?? '',
                personUsd: budget.perPerson?.monthlyUsd?.toString() ?? '',
              });
              setSaveError(null);
              setEditing(true);
            }}
            data-testid="budget-edit"
          >
            Change the budget
          </button>
        ) : null}
      </p>
      {perPersonLimit ? (
        <p className="board-budget-people" data-testid="budget-per-person">
          Each person may spend {perPersonLimit} a month here.
        </p>
      ) : null}
      {budget.byPerson?.length ? (
        <p className="board-budget-people" data-testid="budget-people">
          By person: {budget.byPerson.map((p) => `${p.name ?? (p.id ? 'a removed person' : 'without an account')} ${spendText(p.spent)}`).join(' · ')}
        </p>
      ) : null}
      {editing ? (
        <form className="board-form board-budget-form" onSubmit={save} aria-label="Monthly budget">
          <label className="build-field">
            Tokens a month
            <input value={form.tokens} onChange={(e) => setForm((f) => ({ ...f, tokens: e.target.value }))} inputMode="numeric" aria-describedby={`${id}-h`} data-testid="budget-tokens" />
          </label>
          <label className="build-field">
            Dollars a month
            <input value={form.usd} onChange={(e) => setForm((f) => ({ ...f, usd: e.target.value }))} inputMode="decimal" aria-describedby={`${id}-h`} data-testid="budget-usd" />
          </label>
          {budget.perPerson ? (
            <>
              <label className="build-field">
                Tokens a month per person
                <input value={form.personTokens} onChange={(e) => setForm((f) => ({ ...f, personTokens: e.target.value }))} inputMode="numeric" aria-describedby={`${id}-h`} data-testid="budget-person-tokens" />
              </label>
              <label className="build-field">
                Dollars a month per person
                <input value={form.personUsd} onChange={(e) => setForm((f) => ({ ...f, personUsd: e.target.value }))} inputMode="decimal" aria-describedby={`${id}-h`} data-testid="budget-person-usd" />
              </label>
            </>
          ) : null}
          <p id={`${id}-h`} className="build-help">
            Empty: no limit. A run stops, blocked, when the project (or the person it runs for) has spent either; a new one is refused until next month.
          </p>
          <p className="build-error" role="alert">
            {saveError}
          </p>
          <div className="build-actions">
            <button type="button" className="button button-small" onClick={() => setEditing(false)} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className="button button-small button-primary" disabled={busy} data-testid="budget-save">
              Save the budget
            </button>
          </div>
        </form>
      ) : null}
    </div>
  );
}

export interface BoardProps {
  projectId: string;
  /** The caller's role in the project: viewers read, editors start, move, answer and merge, owners set the budget. */
  role: ProjectRole | null | undefined;
  /** The project's agents: the one with sprint planning is offered when there is no sprint yet. */
  agents: AgentSummary[];
  /** For a file relative to the project root: what opens it in the page's document viewer, or null. */
  openDocument?: OpenDocument;
  /** Starts an agent on a command in a new conversation (sprint planning). */
  onStartAgent?: (agentId: string, command: string) => void;
  onOpenConversation?: (id: string) => void;
  pollMs?: number;
  /** How often the board is read again while its event stream is open (a lost event's safety net). */
  slowPollMs?: number;
}

/** The sprint board: the base branch's sprint status as lanes of story cards, the runs waiting on people, and the budget. */
export function Board({ projectId, role, agents, openDocument, onStartAgent, onOpenConversation, pollMs = POLL_MS, slowPollMs = SLOW_POLL_MS }: BoardProps) {
  const headingId = useId();
  const sectionRef = useRef<HTMLElement>(null);
  const [board, setBoard] = useState<BoardView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [openKey, setOpenKey] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const returnTo = useRef<string | null>(null);
  const perms = boardPermissions(role);

  const [autopilot, setAutopilot] = useState<AutopilotView | null>(null);

  useEffect(() => {
    setBoard(null);
    setOpenKey(null);
    setError(null);
    setAutopilot(null);
  }, [projectId]);

  // The autopilot, where the server has one (null otherwise: no panel); a failed read keeps the last one.
  const loadAutopilot = useCallback(
    async (signal?: AbortSignal) => {
      try {
        const a = await autopilotApi.get(projectId, signal);
        if (!signal?.aborted) setAutopilot(a);
      } catch {
        // Shown as it was; the next event or poll reads it again.
      }
    },
    [projectId],
  );
  useEffect(() => {
    const ac = new AbortController();
    void loadAutopilot(ac.signal);
    return () => ac.abort();
  }, [loadAutopilot, version]);

  // Each event is a signal to read the board and the autopilot again; a burst is one read.
  const coalesce = useRef<ReturnType<typeof setTimeout> | null>(null);
  const { live } = useProjectEvents(projectId, () => {
    if (coalesce.current) return;
    coalesce.current = setTimeout(() => {
      coalesce.current = null;
      setVersion((v) => v + 1);
    }, EVENT_COALESCE_MS);
  });
  useEffect(() => () => void (coalesce.current && clearTimeout(coalesce.current)), []);

  // The safety net: read again now and then, whatever the stream says.
  useEffect(() => {
    const timer = setInterval(() => setVersion((v) => v + 1), slowPollMs);
    return () => clearInterval(timer);
  }, [slowPollMs, projectId]);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        const b = await boardApi.board(projectId, signal);
        if (signal?.aborted) return;
        setBoard(b);
        setError(null);
      } catch (e) {
        if ((e as Error).name !== 'AbortError' && !signal?.aborted) setError((e as Error).message);
      }
    },
    [projectId],
  );

  useEffect(() => {
    const ac = new AbortController();
    void load(ac.signal);
    return () => ac.abort();
  }, [load, version]);

  // One read at a time, the next one a period after the last answer: a slow server is never asked twice at once.
  // With the event stream open, events say when to read.
  const active = hasActiveRuns(board);
  useEffect(() => {
    if (!active || live) return;
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout>;
    const tick = () => {
      timer = setTimeout(async () => {
        await load(ac.signal);
        if (!ac.signal.aborted) tick();
      }, pollMs);
    };
    tick();
    return () => {
      ac.abort();
      clearTimeout(timer);
    };
  }, [active, live, load, pollMs]);

  // Back on the board, the focus returns to the card that was opened.
  useEffect(() => {
    if (openKey || !returnTo.current) return;
    const key = returnTo.current;
    returnTo.current = null;
    const cards = sectionRef.current?.querySelectorAll<HTMLElement>('[data-testid="board-card"]') ?? [];
    [...cards].find((c) => c.dataset.key === key)?.querySelector<HTMLElement>('button')?.focus();
  }, [openKey]);

  const changed = useCallback(
    (key: string) => (optimistic?: Partial<BoardStoryView>) => {
      // The server already changed it; showing it now keeps the card from jumping back until the next read.
      if (optimistic)
        setBoard((b) => (b ? { ...b, epics: b.epics.map((e) => ({ ...e, stories: e.stories.map((s) => (s.key === key ? { ...s, ...optimistic } : s)) })) } : b));
      setVersion((v) => v + 1);
    },
    [],
  );

  const planning = sprintPlanningCommand(agents);
  const open = (key: string) => {
    returnTo.current = key;
    setOpenKey(key);
  };
  const found = openKey && board ? board.epics.flatMap((e) => e.stories.map((s) => ({ epic: e.key, story: s }))).find((x) => x.story.key === openKey) : null;
  const others = board ? otherStatuses(board) : [];
  const storyCount = board ? board.epics.reduce((n, e) => n + e.stories.length, 0) : 0;
  const decisions = board?.decisions ?? [];

  return (
    <section ref={sectionRef} className="board" aria-labelledby={headingId} data-testid="project-board">
      <h2 id={headingId} className="board-title">
        Sprint board
      </h2>
      {perms.budget ? <BudgetLine projectId={projectId} /> : null}
      {autopilot ? (
        <AutopilotPanel
          projectId={projectId}
          autopilot={autopilot}
          canManage={perms.budget}
          canWrite={perms.write}
          onChanged={(next) => {
            if (next) setAutopilot(next);
            setVersion((v) => v + 1);
          }}
        />
      ) : null}
      {error ? (
        <p className="notice notice-error" role="alert">
          Could not read the board: {error}
        </p>
      ) : null}
      {!board && !error ? (
        <p role="status">
          <Spinner /> Reading the sprint status…
        </p>
      ) : null}
      {board && !board.source && storyCount === 0 ? (
        <div className="board-empty" data-testid="board-empty">
          <p>
            This project has no sprint yet: its sprint status (<code>sprint-status.yaml</code> in the implementation artifacts) is made by sprint planning, from the epics and stories of its
            planning.
          </p>
          {planning && perms.write && onStartAgent ? (
            <button type="button" className="button button-small button-primary" onClick={() => onStartAgent(planning.agentId, planning.command)} data-testid="board-plan-sprint">
              Plan the sprint with {planning.agentName} <span className="journey-command">{planning.command}</span>
            </button>
          ) : (
            <p className="build-help">Run sprint planning (the “Sprint Planning” step of the journey above) to make it.</p>
          )}
        </div>
      ) : null}
      {board?.source && storyCount === 0 ? (
        <p className="board-empty" data-testid="board-empty">
          The sprint status lists no story yet.
        </p>
      ) : null}
      {board?.source ? (
        <p className="workspace-meta-line" data-testid="board-source">
          From <code>{board.source.path}</code> on <code>{board.source.branch}</code> at <code>{shortSha(board.source.commit)}</code>
          {live ? ' · live' : active ? ' · updating while runs work' : ''}
        </p>
      ) : null}
      {board?.uncommitted ? (
        <p className="notice notice-warn" data-testid="board-uncommitted">
          The project folder’s sprint status has changes that are not committed; the board shows the committed one, and changes wait until it is committed.
        </p>
      ) : null}

      {board && decisions.length ? (
        <section className="board-decisions" aria-label="Waiting on a person" data-testid="board-decisions">
          <h3 className="board-lane-title">Waiting on a person ({decisions.length})</h3>
          <ul>
            {decisions.map((d) => (
              <li key={d.runId} className="board-decision" data-testid="decision" data-run={d.runId} data-kind={d.kind}>
                <p>
                  {d.storyKey ? (
                    <button type="button" className="link-button" onClick={() => open(d.storyKey!)}>
                      {d.storyKey}
                    </button>
                  ) : (
                    <code>run {d.runId.slice(0, 8)}</code>
                  )}{' '}
                  <span className="board-card-label">{d.kind === 'question' ? 'asks' : 'blocked'}</span> <span className="build-help">since {relativeTime(d.since)}</span>
                </p>
                <p className="board-reason">{d.text}</p>
                {perms.write && !openKey ? <AnswerForm decision={d} label={`Your answer${d.storyKey ? ` for ${d.storyKey}` : ''}`} onAnswered={() => setVersion((v) => v + 1)} /> : null}
              </li>
            ))}
          </ul>
        </section>
      ) : null}

      {board && found ? (
        <BoardStory
          key={found.story.key}
          projectId={projectId}
          story={found.story}
          epicKey={found.epic}
          decision={decisions.find((d) => d.runId === found.story.run?.id) ?? null}
          canWrite={perms.write}
          openDocument={openDocument}
          onOpenConversation={onOpenConversation}
          forge={board.pullRequests?.forge ?? null}
          onBack={() => setOpenKey(null)}
          onChanged={changed(found.story.key)}
        />
      ) : board && storyCount > 0 ? (
        <div className="board-lanes" data-testid="board-lanes">
          {BOARD_COLUMNS.map((c) => (
            <Lane
              key={c}
              id={c}
              name={COLUMN_NAMES[c]}
              showStatus={false}
              forge={board.pullRequests?.forge ?? null}
              stories={storiesIn(board, (s) => s === c)}
              pipelines={autopilot?.stories ?? {}}
              onOpen={open}
            />
          ))}
          {others.length ? (
            <Lane
              id="other"
              name="Other statuses"
              showStatus
              forge={board.pullRequests?.forge ?? null}
              stories={storiesIn(board, (s) => !isBoardColumn(s))}
              pipelines={autopilot?.stories ?? {}}
              onOpen={open}
            />
          ) : null}
        </div>
      ) : null}
      {board && storyCount > 0 && !found ? (
        <p className="build-help board-epics" data-testid="board-epics">
          {board.epics.map((e, i) => (
            <span key={e.key}>
              {i ? ' · ' : ''}
              {epicName(e.key)} {e.status ?? 'no status'}
              {e.retrospective ? ` (retrospective ${e.retrospective})` : ''}
            </span>
          ))}
        </p>
      ) : null}
    </section>
  );
}

'use client';

import { RUN_STATUS_WORDS } from '../_lib/runs';
import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { ApiError } from '../_lib/api';
import { BOARD_COLUMNS, COLUMN_NAMES, boardApi, boardErrorText, isBoardColumn, isRunActive, pullRequestName, pullRequestText, spendText, type BoardStoryView, type DecisionView, type ForgeKind, type PullRequestView } from '../_lib/board';
import { useEscape } from '../_lib/escape';
import { modalKeys } from '../_lib/focus';
import { relativeTime } from '../_lib/format';
import { runsApi, type RunItem } from '../_lib/runs';
import { conflictPaths, shortSha, workspacesApi } from '../_lib/workspaces';
import { ConfirmDialog } from './ConfirmDialog';
import type { OpenDocument } from './RunsList';
import { DiffSection } from './WorkspacePanel';
import { Spinner } from './icons';
import { ActionError } from './ActionError';

/** Asks what to add to the run's first message, and optionally a token budget, before a story starts. */
export function StartStoryDialog({ story, busy, error, onStart, onCancel }: { story: BoardStoryView; busy: boolean; error: string | null; onStart: (inputs: string, tokens: number | null) => void; onCancel: () => void }) {
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const [inputs, setInputs] = useState('');
  const [tokens, setTokens] = useState('');
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null;
    inputRef.current?.focus();
    return () => previous?.focus?.();
  }, []);
  useEscape(!busy, onCancel);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const t = tokens.trim();
    if (t && (!/^\d+$/.test(t) || Number(t) === 0)) {
      setProblem('The token budget is a whole number of tokens above 0 (or empty for the default).');
      return;
    }
    setProblem(null);
    onStart(inputs.trim(), t ? Number(t) : null);
  };
  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, () => !busy && onCancel());
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && !busy && onCancel()}>
      <div ref={boxRef} className="modal modal-small" role="dialog" aria-modal="true" aria-labelledby={`${id}-t`} onKeyDown={onKeyDown} data-testid="start-story-dialog">
        <h2 id={`${id}-t`}>Start {story.key}</h2>
        <form onSubmit={submit} className="board-form">
          <p className="build-help">
            A headless run builds “{story.title}” in a new workspace of its own, with the build skill of the project’s BMAD release. The story shows in progress at once.
          </p>
          <label className="build-field">
            Notes for the run (optional)
            <textarea ref={inputRef} value={inputs} onChange={(e) => setInputs(e.target.value)} rows={3} aria-describedby={`${id}-in`} data-testid="start-inputs" />
            <span id={`${id}-in`} className="build-help">
              Added to the run’s first message.
            </span>
          </label>
          <label className="build-field">
            Token budget (optional)
            <input value={tokens} onChange={(e) => setTokens(e.target.value)} inputMode="numeric" aria-describedby={`${id}-tok`} aria-invalid={!!problem} data-testid="start-tokens" />
            <span id={`${id}-tok`} className="build-help">
              The run stops, blocked, when it has used this many tokens. Empty: the server’s default.
            </span>
          </label>
          <p className="build-error" role="alert" data-testid="start-error">
            {problem ?? error}
          </p>
          {busy ? (
            <p role="status">
              <Spinner /> Starting…
            </p>
          ) : null}
          <div className="modal-actions">
            <button type="button" className="button" onClick={onCancel} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className="button button-primary" disabled={busy} data-testid="start-go">
              Start the run
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}

/** The answer box of a run that waits on a person. */
export function AnswerForm({ decision, label, onAnswered }: { decision: DecisionView; label: string; onAnswered: () => void }) {
  const id = useId();
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!text.trim()) {
      setError('Write an answer first.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await boardApi.answer(decision.runId, text.trim());
      setText('');
      onAnswered();
    } catch (err) {
      setError(boardErrorText(err, 'answer'));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="board-answer" onSubmit={submit} data-testid="decision-answer">
      <label className="build-field">
        {label}
        <textarea value={text} onChange={(e) => setText(e.target.value)} rows={2} aria-describedby={`${id}-e`} aria-invalid={!!error} disabled={busy} data-testid="decision-text" />
      </label>
      <p id={`${id}-e`} className="build-error" role="alert">
        {error}
      </p>
      <button type="submit" className="button button-small button-primary" disabled={busy} data-testid="decision-send">
        {busy ? <Spinner /> : null} Send the answer
      </button>
    </form>
  );
}

/** A pull request's link with its state and checks, as a card and the story show it. */
/** Only a web page is linked: the URL came from a forge, and a `javascript:` one would run here. */
export const webHref = (url: string | undefined): string | undefined => (url && /^https?:\/\//i.test(url) ? url : undefined);

export function PullRequestLink({ pr, forge }: { pr: PullRequestView; forge?: ForgeKind | null }) {
  const name = pullRequestName(forge);
  return (
    <a className={`board-pr board-pr-${pr.state}`} href={webHref(pr.url)} target="_blank" rel="noreferrer" data-testid="pull-request-link" data-state={pr.state} data-checks={pr.checks?.state ?? ''}>
      {name.number(pr.number)} {pullRequestText(pr)}
    </a>
  );
}

function reasonOf(run: RunItem | null): string | null {
  const r = run?.result;
  if (r && typeof r.reason === 'string' && r.reason) return r.reason;
  if (r && typeof r.question === 'string' && r.question) return r.question;
  return run?.error ? `${run.error.code}: ${run.error.message}` : null;
}

export interface BoardStoryProps {
  projectId: string;
  story: BoardStoryView;
  epicKey: string;
  /** The run of the story waiting on a person, when one is. */
  decision: DecisionView | null;
  canWrite: boolean;
  openDocument?: OpenDocument;
  onOpenConversation?: (id: string) => void;
  onBack: () => void;
  /** Something on the board changed (a start, a move, a merge, an answer): read it again. */
  onChanged: (optimistic?: Partial<BoardStoryView>) => void;
  /** The remote's forge when work leaves as pull requests (the remote in pull-request mode). */
  forge?: ForgeKind | null;
}

/** One story opened from its card: its document, its run, its workspace's diff, and what a person may do with it. */
export function BoardStory({ projectId, story, epicKey, decision, canWrite, openDocument, onOpenConversation, onBack, onChanged, forge }: BoardStoryProps) {
  const headingId = useId();
  const headingRef = useRef<HTMLHeadingElement>(null);
  const [dialog, setDialog] = useState<'start' | 'merge' | null>(null);
  const [busy, setBusy] = useState(false);
  const [startError, setStartError] = useState<string | null>(null);
  const [error, setError] = useState<{ message: string; paths?: string[] } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [moveTo, setMoveTo] = useState<string>(story.status ?? '');
  const [run, setRun] = useState<RunItem | null>(null);

  useEffect(() => headingRef.current?.focus(), []);
  useEscape(dialog === null, onBack);
  useEffect(() => setMoveTo(story.status ?? ''), [story.status]);
  // The diff is read again when the run or the story moves on: the run may have committed meanwhile.
  const [diffVersion, setDiffVersion] = useState(0);

  // The run's detail (its reason, its conversation), read again whenever the board sees it change.
  const runId = story.run?.id ?? null;
  const runStatus = story.run?.status ?? null;
  useEffect(() => {
    if (!runId) {
      setRun(null);
      return;
    }
    const ac = new AbortController();
    runsApi.get(runId, ac.signal).then(setRun, () => undefined);
    return () => ac.abort();
  }, [runId, runStatus]);
  const diffKey = `${runStatus ?? ''} ${story.status ?? ''}`;
  const seenDiffKey = useRef(diffKey);
  useEffect(() => {
    if (seenDiffKey.current === diffKey) return;
    seenDiffKey.current = diffKey;
    setDiffVersion((v) => v + 1);
  }, [diffKey]);

  const active = isRunActive(story.run);
  const ws = story.workspace;
  const file = story.file;
  const opener = file ? (openDocument?.(file) ?? null) : null;

  const start = async (inputs: string, tokens: number | null) => {
    setBusy(true);
    setStartError(null);
    setError(null);
    setNotice(null);
    try {
      const r = await boardApi.start(projectId, story.key, { ...(inputs ? { inputs } : {}), ...(tokens !== null ? { budget: { tokens } } : {}) });
      setDialog(null);
      setNotice(`Started: a run works on it in the workspace on ${r.workspace.branch}.`);
      onChanged({ status: 'in-progress', run: { id: r.runId, status: 'queued' }, workspace: { id: r.workspace.id, branch: r.workspace.branch, status: 'open' } });
    } catch (e) {
      setStartError(boardErrorText(e, 'start'));
    } finally {
      setBusy(false);
    }
  };

  const move = async (e: FormEvent) => {
    e.preventDefault();
    if (!moveTo || moveTo === story.status) return;
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      await boardApi.move(projectId, story.key, moveTo);
      setNotice(`Moved to ${isBoardColumn(moveTo) ? COLUMN_NAMES[moveTo] : moveTo}.`);
      onChanged({ status: moveTo });
    } catch (err) {
      setError({ message: boardErrorText(err, 'move') });
    } finally {
      setBusy(false);
    }
  };

  const merge = async () => {
    if (!ws) return;
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const r = await workspacesApi.merge(projectId, ws.id);
      setDialog(null);
      setNotice(`Merged${r?.commit ? ` at ${shortSha(r.commit)}` : ''}: the story is done.${r?.checkoutUpdated ? ' The project folder has the changes.' : ''}`);
      onChanged({ status: 'done', workspace: { ...ws, status: 'merged' } });
    } catch (e) {
      setDialog(null);
      const ae = e instanceof ApiError ? e : null;
      if (ae?.code === 'E_MERGE_CONFLICT') setError({ message: 'The merge conflicts, so nothing was merged and the story stays in review. Conflicting files:', paths: conflictPaths(ae) });
      else setError({ message: boardErrorText(e, 'merge') });
      onChanged();
    } finally {
      setBusy(false);
    }
  };

  const publish = async () => {
    if (!ws) return;
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const r = await boardApi.publish(projectId, ws.id);
      const name = pullRequestName(forge);
      setNotice(`${story.pullRequest?.state === 'open' ? 'Updated' : 'Opened'} ${name.noun} ${name.number(r.pullRequest.number)} from ${r.branch}.`);
      onChanged({ pullRequest: r.pullRequest });
    } catch (e) {
      setError({ message: boardErrorText(e, 'publish') });
    } finally {
      setBusy(false);
    }
  };

  const statuses = [...BOARD_COLUMNS, ...(story.status && !isBoardColumn(story.status) ? [story.status] : [])];
  const canStart = canWrite && !active && story.status !== 'done' && (!ws || ws.status !== 'open' || story.status !== 'review');
  const canMerge = canWrite && !active && story.status === 'review' && ws?.status === 'open';
  const canPublish = canMerge && !!forge;
  const prName = pullRequestName(forge);
  const reason = reasonOf(run);

  return (
    <article className="board-story" aria-labelledby={headingId} data-testid="story-detail" data-key={story.key} data-status={story.status ?? ''}>
      <button type="button" className="link-button" onClick={onBack} data-testid="story-back">
        ← Back to the board
      </button>
      <h3 id={headingId} ref={headingRef} tabIndex={-1} className="board-story-title">
        {story.title || story.key}
      </h3>
      <p className="workspace-meta-line">
        <code>{story.key}</code> · {epicKey.replace(/^epic-/, 'Epic ')} · status <strong data-testid="story-status">{story.status ?? 'none'}</strong>
        {story.spend ? ` · spent ${spendText(story.spend)}` : ''}
      </p>
      {file ? (
        opener ? (
          <button type="button" className="button button-small" onClick={opener} data-testid="story-open-document">
            Open the story <code>{file.split('/').pop()}</code>
          </button>
        ) : (
          <p className="build-help">
            Story file: <code>{file}</code>
          </p>
        )
      ) : (
        <p className="build-help">No story file was found for this key yet (story creation writes it).</p>
      )}

      {notice ? (
        <p className="notice notice-info" role="status" data-testid="story-notice">
          {notice}
        </p>
      ) : null}
      <ActionError error={error} testId="story-error" />

      {canWrite ? (
        <div className="board-actions">
          {canStart ? (
            <button
              type="button"
              className="button button-small button-primary"
              onClick={() => {
                setStartError(null);
                setDialog('start');
              }}
              disabled={busy}
              data-testid="story-start"
            >
              {story.run ? 'Start again' : 'Start'}
            </button>
          ) : null}
          {canPublish ? (
            <button type="button" className="button button-small button-primary" onClick={() => void publish()} disabled={busy} data-testid="story-publish">
              {busy ? <Spinner /> : null} {story.pullRequest?.state === 'open' ? `Update ${prName.noun}` : `Open ${prName.noun}`}
            </button>
          ) : null}
          {canMerge ? (
            <button type="button" className={`button button-small${canPublish ? '' : ' button-primary'}`} onClick={() => setDialog('merge')} disabled={busy} data-testid="story-merge">
              Merge
            </button>
          ) : null}
          <form className="board-move" onSubmit={move}>
            <label>
              Move to{' '}
              <select value={moveTo} onChange={(e) => setMoveTo(e.target.value)} disabled={busy} data-testid="story-move-select">
                {statuses.map((s) => (
                  <option key={s} value={s}>
                    {isBoardColumn(s) ? COLUMN_NAMES[s] : s}
                  </option>
                ))}
              </select>
            </label>{' '}
            <button type="submit" className="button button-small" disabled={busy || !moveTo || moveTo === story.status} data-testid="story-move">
              Move
            </button>
          </form>
        </div>
      ) : null}

      <h4>Run</h4>
      {story.run ? (
        <div data-testid="story-run" data-status={story.run.status}>
          <p>
            <span className={`board-run board-run-${story.run.status}`}>{RUN_STATUS_WORDS[story.run.status]}</span>
            {active ? <Spinner label="The run is working" /> : null}
            {run?.createdAt ? <span className="build-help"> · started {relativeTime(run.createdAt)}</span> : null}
            {run?.conversationId && onOpenConversation ? (
              <>
                {' '}
                ·{' '}
                <button type="button" className="link-button" onClick={() => onOpenConversation(run.conversationId!)} data-testid="story-run-conversation">
                  its conversation
                </button>
              </>
            ) : null}
          </p>
          {reason && !active ? (
            <p className="board-reason" data-testid="run-reason">
              {reason}
            </p>
          ) : null}
          {decision && canWrite ? <AnswerForm decision={decision} label="Your answer to the run" onAnswered={() => onChanged({ run: { id: decision.runId, status: 'queued' } })} /> : null}
        </div>
      ) : (
        <p className="build-help">No run has worked on this story.</p>
      )}

      {story.pullRequest ? (
        <>
          <h4>{prName.noun[0]!.toUpperCase() + prName.noun.slice(1)}</h4>
          <div data-testid="story-pull-request">
            <p>
              <PullRequestLink pr={story.pullRequest} forge={forge} />
            </p>
            {story.pullRequest.note ? <p className="build-help">{story.pullRequest.note}</p> : null}
            {story.pullRequest.checks?.checks.length ? (
              <ul className="board-checks">
                {story.pullRequest.checks.checks.map((c) => (
                  <li key={c.name}>
                    <span className={`board-check board-check-${c.state}`}>{c.state}</span> {webHref(c.url) ? <a href={webHref(c.url)} target="_blank" rel="noreferrer">{c.name}</a> : c.name}
                  </li>
                ))}
              </ul>
            ) : null}
          </div>
        </>
      ) : null}

      <h4>Workspace</h4>
      {ws ? (
        <>
          <p className="workspace-meta-line">
            Branch <code>{ws.branch}</code> <span className={`ws-status ws-${ws.status}`}>{ws.status}</span>
          </p>
          {ws.status === 'open' ? <DiffSection projectId={projectId} workspaceId={ws.id} path={null} version={diffVersion} /> : null}
        </>
      ) : (
        <p className="build-help">None yet: starting the story makes one.</p>
      )}

      {dialog === 'start' ? <StartStoryDialog story={story} busy={busy} error={startError} onStart={(i, t) => void start(i, t)} onCancel={() => setDialog(null)} /> : null}
      {dialog === 'merge' && ws ? (
        <ConfirmDialog title={`Merge ${ws.branch}?`} confirmLabel="Merge" busy={busy} busyText={`Merging ${ws.branch}…`} onConfirm={() => void merge()} onCancel={() => setDialog(null)}>
          <p>The story’s changes go into the base branch of the project repository, and the story moves to done. A conflict merges nothing and keeps it in review.</p>
        </ConfirmDialog>
      ) : null}
    </article>
  );
}

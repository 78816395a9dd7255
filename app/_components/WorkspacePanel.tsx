'use client';

import { useCallback, useEffect, useId, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { ConversationDetail, ConversationSummaryView } from '@/types/api';
import { ApiError, api } from '../_lib/api';
import { relativeTime } from '../_lib/format';
import { runsApi, type RunItem } from '../_lib/runs';
import {
  commandLog,
  commandOutcome,
  durationText,
  elapsedText,
  parseUnifiedDiff,
  personName,
  setupStart,
  shortSha,
  workspaceActionError,
  workspaceStateText,
  workspacesApi,
  type ChangedFileView,
  type CommandLogEntry,
  type SetupOutcomeView,
  type WorkspaceDetailView,
  type WorkspaceDiffView,
} from '../_lib/workspaces';
import { ConfirmDialog } from './ConfirmDialog';
import { FileDiff } from './DiffView';
import { AnsiText, CommandOutput } from './CommandOutput';
import { Spinner } from './icons';
import { ActionError } from './ActionError';

/** Conversations read for the command log: the newest ones of the workspace. */
const LOG_CONVERSATIONS = 10;

const FILE_STATUS: Record<ChangedFileView['status'], string> = {
  added: 'added',
  modified: 'modified',
  deleted: 'deleted',
  renamed: 'renamed',
  copied: 'copied',
  typechange: 'type changed',
  unmerged: 'unmerged',
  unknown: 'changed',
};

const belongs = (item: unknown, workspaceId: string) => {
  const o = item as { workspaceId?: unknown; workspace?: { id?: unknown } | null };
  return o?.workspaceId === workspaceId || o?.workspace?.id === workspaceId;
};

/** One command of the log, its output on demand. */
export function CommandEntry({ entry }: { entry: CommandLogEntry }) {
  const r = entry.result;
  const failed = !r || r.stopped || (typeof r.exit_code === 'number' && r.exit_code !== 0);
  const command = r?.command ?? entry.command;
  return (
    <li className="command-entry" data-testid="command-entry">
      <details>
        <summary>
          <code className="command-line command-text" data-testid="command-entry-line">
            {command || '(no command)'}
          </code>{' '}
          <span className={failed ? 'command-bad' : 'command-ok'}>{r ? commandOutcome(r) : entry.error ? `failed: ${entry.error}` : 'no result'}</span>
        </summary>
        {r ? (
          <>
            {entry.cwd ? (
              <p className="build-help">
                in <code>{entry.cwd}</code>
              </p>
            ) : null}
            {r.hint ? <p className="build-help">{r.hint}</p> : null}
            <CommandOutput result={r} />
          </>
        ) : null}
      </details>
    </li>
  );
}

/** A clock counting from `since` (ms since the epoch), once a second. */
export function Elapsed({ since }: { since: number }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [since]);
  return (
    <span className="elapsed" data-testid="setup-elapsed">
      {elapsedText(now - since)}
    </span>
  );
}

const SETUP_WORDS = { running: 'running', ok: 'succeeded', failed: 'failed', skipped: 'skipped (no setup line)' } as const;

/**
 * The setup line's outcome and output. While it runs: its output so far, kept scrolled to its end
 * unless the reader scrolled up, and the time since it started; then how it ended.
 */
export function SetupSection({ setup }: { setup: SetupOutcomeView }) {
  const running = setup.status === 'running';
  const [open, setOpen] = useState(running || setup.status === 'failed');
  const preRef = useRef<HTMLPreElement>(null);
  const stick = useRef(true);
  const since = setupStart(setup);
  useLayoutEffect(() => {
    const pre = preRef.current;
    if (pre && stick.current) pre.scrollTop = pre.scrollHeight;
  }, [setup.output, open]);
  return (
    <details className="workspace-setup" data-testid="workspace-setup" data-status={setup.status} open={open} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>
        {running ? <Spinner /> : null} Setup {SETUP_WORDS[setup.status] ?? setup.status}
        {running && since !== null ? (
          <>
            {' '}
            for <Elapsed since={since} />
          </>
        ) : null}
        {typeof setup.exitCode === 'number' ? ` (exit code ${setup.exitCode})` : ''}
        {!running && setup.durationMs !== undefined ? ` · ${durationText(setup.durationMs)}` : ''} — {running ? 'its output so far' : 'its output'}
      </summary>
      <pre
        ref={preRef}
        className="tool-pre setup-output"
        tabIndex={0}
        data-testid="setup-output"
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {setup.output ? <AnsiText text={setup.output} /> : running ? '(no output yet)' : '(no output)'}
      </pre>
    </details>
  );
}

export function DiffSection({ projectId, workspaceId, path, version }: { projectId: string; workspaceId: string; path: string | null; version: number }) {
  const [diff, setDiff] = useState<WorkspaceDiffView | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const ac = new AbortController();
    setDiff(null);
    setError(null);
    workspacesApi.diff(projectId, workspaceId, path ?? undefined, ac.signal).then(setDiff, (e: Error) => {
      if (e.name !== 'AbortError') setError(e.message);
    });
    return () => ac.abort();
  }, [projectId, workspaceId, path, version]);
  const files = useMemo(() => (diff ? parseUnifiedDiff(diff.diff) : []), [diff]);
  if (error) return <p role="alert">Could not read the diff: {error}</p>;
  if (!diff)
    return (
      <p role="status">
        <Spinner /> Reading the diff…
      </p>
    );
  return (
    <div className="diff" data-testid="workspace-diff">
      {diff.cut ? (
        <p className="notice notice-warn" data-testid="diff-cut">
          This diff is cut at 1 MB: the rest is not shown. Open one file at a time to see each whole.
        </p>
      ) : null}
      {files.length === 0 ? <p>No changes against the base.</p> : null}
      {files.map((f, i) => (
        <section key={`${f.path}-${i}`} aria-label={`Diff of ${f.path}`}>
          {path ? null : (
            <h5 className="diff-file-name">
              <code>{f.path}</code>
            </h5>
          )}
          <FileDiff file={f} />
        </section>
      ))}
    </div>
  );
}

export interface WorkspacePanelProps {
  projectId: string;
  workspaceId: string;
  onBack: () => void;
  /** Merged or discarded: the list shows it anew. */
  onChanged?: () => void;
  onOpenConversation?: (id: string) => void;
}

/** How often a running setup's outcome and output are read again. */
const SETUP_POLL_MS = 1000;

/** A workspace's page: what it changed (commits, files, diffs), what ran in it, and Merge / Discard. */
export function WorkspacePanel({ projectId, workspaceId, onBack, onChanged, onOpenConversation }: WorkspacePanelProps) {
  const headingId = useId();
  const reasonId = useId();
  const [ws, setWs] = useState<WorkspaceDetailView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [filePath, setFilePath] = useState<string | null | undefined>(undefined);
  const [confirm, setConfirm] = useState<'merge' | 'discard' | null>(null);
  const [busy, setBusy] = useState<'merge' | 'discard' | null>(null);
  const [actionError, setActionError] = useState<{ message: string; paths?: string[] } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const noticeRef = useRef<HTMLParagraphElement>(null);
  const [conversations, setConversations] = useState<ConversationSummaryView[] | null>(null);
  const [runs, setRuns] = useState<RunItem[]>([]);
  const [log, setLog] = useState<CommandLogEntry[] | null>(null);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setWs(await workspacesApi.get(projectId, workspaceId, signal));
        setError(null);
      } catch (e) {
        if ((e as Error).name !== 'AbortError') setError(e instanceof ApiError && e.status === 404 ? 'This workspace does not exist (any more).' : (e as Error).message);
      }
    },
    [projectId, workspaceId],
  );

  useEffect(() => {
    const ac = new AbortController();
    void load(ac.signal);
    return () => ac.abort();
  }, [load, version]);

  // The setup line runs after the workspace is made: its outcome and output so far are read again
  // every second until it ends (one read at a time: a slow answer is not overtaken by the next).
  const setupRunning = ws?.setup?.status === 'running';
  useEffect(() => {
    if (!setupRunning) return;
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout>;
    const tick = () => {
      timer = setTimeout(() => void load(ac.signal).finally(() => !ac.signal.aborted && tick()), SETUP_POLL_MS);
    };
    tick();
    return () => {
      ac.abort();
      clearTimeout(timer);
    };
  }, [setupRunning, load]);

  // Its conversations and runs, and the commands run in them (from their stored tool calls).
  useEffect(() => {
    const ac = new AbortController();
    (async () => {
      try {
        const page = await api.conversations({ projectId, limit: 100 }, ac.signal);
        const mine = page.items.filter((c) => belongs(c, workspaceId));
        setConversations(mine);
        const details = await Promise.all(mine.slice(0, LOG_CONVERSATIONS).map((c) => api.conversation(c.id, ac.signal).catch(() => null)));
        setLog(commandLog(details.filter((d): d is NonNullable<typeof d> => !!d) as unknown as ConversationDetail[]));
      } catch (e) {
        if ((e as Error).name !== 'AbortError') {
          setConversations([]);
          setLog([]);
        }
      }
      runsApi.list(projectId, ac.signal).then(
        (items) => setRuns(items.filter((r) => belongs(r, workspaceId))),
        () => setRuns([]),
      );
    })();
    return () => ac.abort();
  }, [projectId, workspaceId, version]);

  useEffect(() => {
    if (notice) noticeRef.current?.focus();
  }, [notice]);

  const act = async (kind: 'merge' | 'discard') => {
    setBusy(kind);
    setActionError(null);
    setNotice(null);
    try {
      if (kind === 'merge') {
        const r = await workspacesApi.merge(projectId, workspaceId);
        setNotice(
          `Merged into ${ws?.base ?? 'the base'}${r?.commit ? ` at ${shortSha(r.commit)}` : ''}${r?.fastForward ? ' (fast-forward)' : r?.fastForward === false ? ' (merge commit)' : ''}${
            r?.checkoutUpdated ? '; the project folder has the changes.' : '.'
          }`,
        );
      } else {
        await workspacesApi.discard(projectId, workspaceId);
        setNotice('Discarded: its folder and branch are gone.');
      }
      setConfirm(null);
      setVersion((v) => v + 1);
      onChanged?.();
    } catch (e) {
      setConfirm(null);
      setActionError(workspaceActionError(e, kind, ws?.base ?? 'the base'));
      // A refusal because the setup still runs: its state is read again.
      setVersion((v) => v + 1);
    } finally {
      setBusy(null);
    }
  };

  const back = (
    <button type="button" className="link-button" onClick={onBack} data-testid="workspace-back">
      ← All workspaces
    </button>
  );
  if (error)
    return (
      <div className="workspace-page">
        {back}
        <p role="alert">{error}</p>
      </div>
    );
  if (!ws)
    return (
      <div className="workspace-page">
        {back}
        <p role="status">
          <Spinner /> Loading the workspace…
        </p>
      </div>
    );
  const open = ws.status === 'open';
  const state = workspaceStateText(ws, relativeTime);
  const waitReason = setupRunning ? 'Merge and Discard wait until the setup line ends (its output is below).' : null;
  const busyText = busy === 'merge' ? `Merging ${ws.branch} into ${ws.base}…` : busy === 'discard' ? `Discarding ${ws.name}…` : null;
  return (
    <article className="workspace-page" aria-labelledby={headingId} data-testid="workspace-page" data-status={ws.status}>
      {back}
      <h3 id={headingId}>
        Workspace {ws.name} <span className={`ws-status ws-${ws.status}`}>{ws.status}</span>
      </h3>
      <p className="workspace-meta-line">
        Branch <code>{ws.branch}</code> from <code>{ws.base}</code> at <code>{shortSha(ws.baseCommit)}</code>
        {ws.head ? (
          <>
            , head <code>{shortSha(ws.head)}</code>
          </>
        ) : null}{' '}
        {state ? (
          <>
            · <span data-testid="workspace-state">{state}</span>{' '}
          </>
        ) : null}
        · made by {personName(ws.createdBy)}
      </p>
      {notice ? (
        <p ref={noticeRef} tabIndex={-1} className="notice notice-info" role="status" data-testid="workspace-notice">
          {notice}
        </p>
      ) : null}
      <ActionError error={actionError} testId="workspace-action-error" />
      {open ? (
        <>
          <div className="build-actions">
            <button
              type="button"
              className="button button-primary"
              onClick={() => setConfirm('merge')}
              disabled={!!busy || setupRunning}
              aria-describedby={waitReason ? reasonId : undefined}
              data-testid="workspace-merge"
            >
              {busy === 'merge' ? (
                <>
                  <Spinner /> Merging…
                </>
              ) : (
                `Merge into ${ws.base}`
              )}
            </button>
            <button
              type="button"
              className="button button-danger"
              onClick={() => setConfirm('discard')}
              disabled={!!busy || setupRunning}
              aria-describedby={waitReason ? reasonId : undefined}
              data-testid="workspace-discard"
            >
              {busy === 'discard' ? (
                <>
                  <Spinner /> Discarding…
                </>
              ) : (
                'Discard'
              )}
            </button>
          </div>
          {waitReason ? (
            <p id={reasonId} className="build-help" data-testid="workspace-wait">
              {waitReason}
            </p>
          ) : null}
          {busyText && !confirm ? (
            <p role="status" data-testid="workspace-busy">
              <Spinner /> {busyText}
            </p>
          ) : null}
        </>
      ) : null}

      {ws.setup ? <SetupSection setup={ws.setup} /> : null}

      <h4>Conversations and runs</h4>
      {conversations === null ? (
        <p role="status">
          <Spinner /> Loading…
        </p>
      ) : conversations.length === 0 && runs.length === 0 ? (
        <p className="build-help">None yet. Start one with “Start in a workspace” on an agent.</p>
      ) : (
        <ul className="workspace-convs">
          {conversations.map((c) => (
            <li key={c.id}>
              {onOpenConversation ? (
                <button type="button" className="link-button" onClick={() => onOpenConversation(c.id)}>
                  {c.title || 'Conversation'}
                </button>
              ) : (
                c.title
              )}{' '}
              <span className="build-help">{relativeTime(c.updatedAt)}</span>
            </li>
          ))}
          {runs.map((r) => (
            <li key={r.id}>
              Run of {r.skill} ({r.status}) <span className="build-help">{relativeTime(r.createdAt)}</span>
            </li>
          ))}
        </ul>
      )}

      <h4>Commits ({ws.commits.length})</h4>
      {ws.commits.length === 0 ? (
        <p className="build-help">No commit on the branch yet.</p>
      ) : (
        <ul className="workspace-commits" data-testid="workspace-commits">
          {ws.commits.map((c) => (
            <li key={c.sha}>
              <code>{shortSha(c.sha)}</code> <span className="commit-subject" data-testid="commit-subject">{c.subject}</span>{' '}
              <span className="build-help">
                — {c.author}, {new Date(c.date).toLocaleString()}
              </span>
            </li>
          ))}
        </ul>
      )}

      <h4>Changed files ({ws.files.length})</h4>
      {ws.files.length === 0 ? (
        <p className="build-help">No file differs from the base.</p>
      ) : (
        <>
          <ul className="workspace-files" data-testid="workspace-files">
            {ws.files.map((f) => (
              <li key={f.path} className="workspace-file-row">
                <button
                  type="button"
                  className="link-button workspace-file-path"
                  aria-pressed={filePath === f.path}
                  onClick={() => setFilePath((p) => (p === f.path ? undefined : f.path))}
                  data-testid="workspace-file"
                  data-path={f.path}
                >
                  <code>{f.path}</code>
                </button>{' '}
                <span className="workspace-file-counts">
                  <span className="build-help">{FILE_STATUS[f.status] ?? f.status}</span>{' '}
                  {f.additions !== null ? <span className="diff-plus">+{f.additions}</span> : null}{' '}
                  {f.deletions !== null ? <span className="diff-minus">−{f.deletions}</span> : null}
                  {f.additions === null && f.deletions === null ? <span className="build-help">(binary)</span> : null}
                </span>
              </li>
            ))}
          </ul>
          <button type="button" className="button button-small" aria-pressed={filePath === null} onClick={() => setFilePath((p) => (p === null ? undefined : null))} data-testid="workspace-all-diff">
            {filePath === null ? 'Hide the whole diff' : 'Show the whole diff'}
          </button>
        </>
      )}
      {filePath !== undefined ? <DiffSection projectId={projectId} workspaceId={workspaceId} path={filePath} version={version} /> : null}

      <h4>Commands run</h4>
      {log === null ? (
        <p role="status">
          <Spinner /> Reading the commands…
        </p>
      ) : log.length === 0 ? (
        <p className="build-help">No command ran in this workspace’s conversations.</p>
      ) : (
        <ul className="command-log" data-testid="command-log">
          {log.map((e) => (
            <CommandEntry key={e.id} entry={e} />
          ))}
        </ul>
      )}

      {confirm === 'merge' ? (
        <ConfirmDialog title={`Merge ${ws.branch}?`} confirmLabel="Merge" busy={busy === 'merge'} busyText={busyText ?? undefined} onConfirm={() => void act('merge')} onCancel={() => setConfirm(null)}>
          <p>
            Its {ws.ahead} {ws.ahead === 1 ? 'commit goes' : 'commits go'} into <code>{ws.base}</code> in the project repository (fast-forward when possible, else a merge commit in your name). The project
            folder gets them when it has <code>{ws.base}</code> checked out.
          </p>
        </ConfirmDialog>
      ) : null}
      {confirm === 'discard' ? (
        <ConfirmDialog title={`Discard ${ws.name}?`} confirmLabel="Discard" danger busy={busy === 'discard'} busyText={busyText ?? undefined} onConfirm={() => void act('discard')} onCancel={() => setConfirm(null)}>
          <p>
            The workspace’s folder and its branch <code>{ws.branch}</code> are deleted; its unmerged changes are lost. Its conversations stay.
          </p>
        </ConfirmDialog>
      ) : null}
    </article>
  );
}

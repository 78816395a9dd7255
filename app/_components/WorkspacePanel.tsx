'use client';

import { useCallback, useEffect, useId, useMemo, useState } from 'react';
import type { ConversationDetail, ConversationSummaryView } from '@/types/api';
import { ApiError, api } from '../_lib/api';
import { relativeTime } from '../_lib/format';
import { runsApi, type RunItem } from '../_lib/runs';
import {
  commandLog,
  commandOutcome,
  conflictPaths,
  durationText,
  parseUnifiedDiff,
  personName,
  shortSha,
  workspacesApi,
  type ChangedFileView,
  type CommandLogEntry,
  type WorkspaceDetailView,
  type WorkspaceDiffView,
} from '../_lib/workspaces';
import { ConfirmDialog } from './ConfirmDialog';
import { FileDiff } from './DiffView';
import { aheadBehindText } from './ProjectBuild';
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

const SETUP_WORDS = { running: 'running', ok: 'succeeded', failed: 'failed', skipped: 'skipped (no setup line)' } as const;

const belongs = (item: unknown, workspaceId: string) => {
  const o = item as { workspaceId?: unknown; workspace?: { id?: unknown } | null };
  return o?.workspaceId === workspaceId || o?.workspace?.id === workspaceId;
};

/** One command of the log, its output on demand. */
export function CommandEntry({ entry }: { entry: CommandLogEntry }) {
  const r = entry.result;
  const failed = !r || r.stopped || (typeof r.exit_code === 'number' && r.exit_code !== 0);
  return (
    <li className="command-entry" data-testid="command-entry">
      <details>
        <summary>
          <code className="command-line">{entry.command || '(no command)'}</code>{' '}
          <span className={failed ? 'command-bad' : 'command-ok'}>{r ? commandOutcome(r) : entry.error ? `failed: ${entry.error}` : 'no result'}</span>
        </summary>
        {r ? (
          <>
            {entry.cwd ? (
              <p className="build-help">
                in <code>{entry.cwd}</code>
              </p>
            ) : null}
            <p className="tool-heading">Output</p>
            <pre className="tool-pre" tabIndex={0}>
              {r.stdout || '(no output)'}
            </pre>
            {r.stderr ? (
              <>
                <p className="tool-heading">Errors (stderr)</p>
                <pre className="tool-pre" tabIndex={0}>
                  {r.stderr}
                </pre>
              </>
            ) : null}
          </>
        ) : null}
      </details>
    </li>
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

/** A workspace's page: what it changed (commits, files, diffs), what ran in it, and Merge / Discard. */
export function WorkspacePanel({ projectId, workspaceId, onBack, onChanged, onOpenConversation }: WorkspacePanelProps) {
  const headingId = useId();
  const [ws, setWs] = useState<WorkspaceDetailView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [filePath, setFilePath] = useState<string | null | undefined>(undefined);
  const [confirm, setConfirm] = useState<'merge' | 'discard' | null>(null);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<{ message: string; paths?: string[] } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
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

  // The setup line runs after the workspace is made: its outcome is asked for again until it ends.
  const setupRunning = ws?.setup?.status === 'running';
  useEffect(() => {
    if (!setupRunning) return;
    const t = setInterval(() => void load(), 2000);
    return () => clearInterval(t);
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

  const act = async (kind: 'merge' | 'discard') => {
    setBusy(true);
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
      const ae = e instanceof ApiError ? e : null;
      if (ae?.code === 'E_MERGE_CONFLICT') {
        setActionError({ message: `The merge into ${ws?.base ?? 'the base'} conflicts; nothing was changed. Conflicting files:`, paths: conflictPaths(ae) });
      } else if (ae?.code === 'E_BASE_DIRTY') {
        setActionError({ message: 'The project folder has uncommitted changes, so nothing was merged. Commit or undo them in the project folder, then merge again.' });
      } else setActionError({ message: (e as Error).message });
    } finally {
      setBusy(false);
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
        · {aheadBehindText(ws)} · made by {personName(ws.createdBy)}
      </p>
      {notice ? (
        <p className="notice notice-info" role="status" data-testid="workspace-notice">
          {notice}
        </p>
      ) : null}
      <ActionError error={actionError} testId="workspace-action-error" />
      {open ? (
        <div className="build-actions">
          <button type="button" className="button button-primary" onClick={() => setConfirm('merge')} disabled={busy} data-testid="workspace-merge">
            Merge into {ws.base}
          </button>
          <button type="button" className="button button-danger" onClick={() => setConfirm('discard')} disabled={busy} data-testid="workspace-discard">
            Discard
          </button>
        </div>
      ) : null}

      {ws.setup ? (
        <details className="workspace-setup" data-testid="workspace-setup">
          <summary>
            Setup {SETUP_WORDS[ws.setup.status] ?? ws.setup.status}
            {typeof ws.setup.exitCode === 'number' ? ` (exit code ${ws.setup.exitCode})` : ''}
            {ws.setup.durationMs !== undefined ? ` · ${durationText(ws.setup.durationMs)}` : ''} — show its output
          </summary>
          <pre className="tool-pre" tabIndex={0}>
            {ws.setup.output || '(no output)'}
          </pre>
        </details>
      ) : null}

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
              <code>{shortSha(c.sha)}</code> {c.subject} <span className="build-help">— {c.author}, {new Date(c.date).toLocaleString()}</span>
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
              <li key={f.path}>
                <button
                  type="button"
                  className="link-button"
                  aria-pressed={filePath === f.path}
                  onClick={() => setFilePath((p) => (p === f.path ? undefined : f.path))}
                  data-testid="workspace-file"
                  data-path={f.path}
                >
                  <code>{f.path}</code>
                </button>{' '}
                <span className="build-help">{FILE_STATUS[f.status] ?? f.status}</span>{' '}
                {f.additions !== null ? <span className="diff-plus">+{f.additions}</span> : null}{' '}
                {f.deletions !== null ? <span className="diff-minus">−{f.deletions}</span> : null}
                {f.additions === null && f.deletions === null ? <span className="build-help">(binary)</span> : null}
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
        <ConfirmDialog title={`Merge ${ws.branch}?`} confirmLabel="Merge" busy={busy} onConfirm={() => void act('merge')} onCancel={() => setConfirm(null)}>
          <p>
            Its {ws.ahead} {ws.ahead === 1 ? 'commit goes' : 'commits go'} into <code>{ws.base}</code> in the project repository (fast-forward when possible, else a merge commit in your name). The project
            folder gets them when it has <code>{ws.base}</code> checked out.
          </p>
        </ConfirmDialog>
      ) : null}
      {confirm === 'discard' ? (
        <ConfirmDialog title={`Discard ${ws.name}?`} confirmLabel="Discard" danger busy={busy} onConfirm={() => void act('discard')} onCancel={() => setConfirm(null)}>
          <p>
            The workspace’s folder and its branch <code>{ws.branch}</code> are deleted; its unmerged changes are lost. Its conversations stay.
          </p>
        </ConfirmDialog>
      ) : null}
    </article>
  );
}

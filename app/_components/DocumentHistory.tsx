'use client';

import { useEffect, useId, useRef, useState, type MouseEvent } from 'react';
import type { AgentSummary, ProjectDocumentVersion } from '@/types/api';
import { api, projectFileUrl } from '../_lib/api';
import { dateTime, formatSize } from '../_lib/format';
import { routeHref } from '../_lib/route';
import { ConfirmDialog } from './ConfirmDialog';
import { FileContentView, useFileContent } from './FileContent';
import { Spinner } from './icons';

/** What a document or a version needs to say who wrote it. */
export interface Authorship {
  projectId: string;
  conversationId: string | null;
  agents: AgentSummary[];
  onOpenConversation?: (id: string) => void;
}

export function agentName(agents: AgentSummary[], id: string): string {
  return agents.find((a) => a.id === id)?.name ?? id;
}

/** "in this conversation", or a link to the conversation that wrote it. */
function ConversationRef({ id, ctx }: { id: string; ctx: Authorship }) {
  if (id === ctx.conversationId) return <>in this conversation</>;
  const open = (e: MouseEvent<HTMLAnchorElement>) => {
    if (!ctx.onOpenConversation || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    ctx.onOpenConversation(id);
  };
  return (
    <>
      in{' '}
      <a href={routeHref({ kind: 'conversation', id, projectId: ctx.projectId })} onClick={open}>
        another conversation
      </a>
    </>
  );
}

type HistoryView = { kind: 'list' } | { kind: 'version' | 'diff'; version: ProjectDocumentVersion; number: number };

/** A diff with no change line (only its file headers, or nothing) shows no differences. */
export function hasChanges(diff: string): boolean {
  return diff.split('\n').some((line) => line.startsWith('@@') || line.startsWith('Binary files'));
}

export function DiffView({ diff }: { diff: string }) {
  const lines = diff.replace(/\n$/, '').split('\n');
  return (
    <pre className="diff" data-testid="version-diff">
      {lines.map((line, i) => {
        const cls = line.startsWith('@@')
          ? 'diff-hunk'
          : line.startsWith('+++') || line.startsWith('---')
            ? 'diff-file'
            : line.startsWith('+')
              ? 'diff-add'
              : line.startsWith('-')
                ? 'diff-del'
                : undefined;
        return (
          <span key={i} className={cls}>
            {line}
          </span>
        );
      })}
    </pre>
  );
}

function VersionContent({ projectId, path, version }: { projectId: string; path: string; version: string }) {
  const content = useFileContent(projectFileUrl(projectId, path, { version }), path, version);
  return <FileContentView content={content} />;
}

function VersionDiff({ projectId, path, version, number }: { projectId: string; path: string; version: string; number: number }) {
  const [state, setState] = useState<{ diff?: string; error?: string }>({});
  useEffect(() => {
    const ctrl = new AbortController();
    api.fileDiff(projectId, path, version, ctrl.signal).then(
      (diff) => setState({ diff }),
      (e: Error) => e?.name !== 'AbortError' && setState({ error: e.message }),
    );
    return () => ctrl.abort();
  }, [projectId, path, version]);
  if (state.error) return <p className="notice notice-error">{state.error}</p>;
  if (state.diff === undefined)
    return (
      <p className="msg-pending">
        <Spinner /> Loading…
      </p>
    );
  if (!hasChanges(state.diff))
    return (
      <p className="notice notice-info" data-testid="no-differences">
        No differences: version {number} matches the current file.
      </p>
    );
  return <DiffView diff={state.diff} />;
}

function versionAuthor(v: ProjectDocumentVersion, ctx: Authorship) {
  // A person's restore: credited to them, with no conversation to link.
  if (v.person) return <>{v.kind === 'restore' ? 'restored by ' : 'by '}<span data-testid="version-person">{v.person}</span></>;
  if (v.kind === 'untracked' || !v.agentId) return <>changed outside the agents</>;
  return (
    <>
      {v.kind === 'restore' ? 'restored by ' : 'by '}
      {v.kind === 'restore' && v.by ? v.by : agentName(ctx.agents, v.agentId)}
      {v.kind !== 'restore' && v.by ? ` for ${v.by}` : ''}
      {v.conversationId ? (
        <>
          {' '}
          <ConversationRef id={v.conversationId} ctx={ctx} />
        </>
      ) : null}
    </>
  );
}

export function DocumentHistory({ path, ctx, reloadKey, canRestore, onRestored }: { path: string; ctx: Authorship; reloadKey: number | string; canRestore: boolean; onRestored: (number: number) => void }) {
  const id = useId();
  const [versions, setVersions] = useState<ProjectDocumentVersion[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [view, setView] = useState<HistoryView>({ kind: 'list' });
  const [confirm, setConfirm] = useState<{ version: ProjectDocumentVersion; number: number } | null>(null);
  const [restoring, setRestoring] = useState(false);
  const [restoreError, setRestoreError] = useState<string | null>(null);
  const backRef = useRef<HTMLButtonElement>(null);
  const listRef = useRef<HTMLOListElement>(null);
  const returnTo = useRef<string | null>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    api.fileVersions(ctx.projectId, path, ctrl.signal).then(
      (list) => {
        setVersions(list);
        setError(null);
      },
      (e: Error) => e?.name !== 'AbortError' && setError(e.message),
    );
    return () => ctrl.abort();
  }, [ctx.projectId, path, reloadKey]);

  useEffect(() => {
    if (view.kind !== 'list') backRef.current?.focus();
    else if (returnTo.current) {
      const key = returnTo.current;
      [...(listRef.current?.querySelectorAll<HTMLElement>('[data-focus-key]') ?? [])].find((el) => el.dataset.focusKey === key)?.focus();
      returnTo.current = null;
    }
  }, [view]);

  const open = (kind: 'version' | 'diff', version: ProjectDocumentVersion, number: number) => {
    returnTo.current = `${kind}-${version.version}`;
    setView({ kind, version, number });
  };

  const doRestore = async () => {
    if (!confirm) return;
    setRestoring(true);
    setRestoreError(null);
    try {
      await api.restore(ctx.projectId, path, confirm.version.version);
      const { number } = confirm;
      setConfirm(null);
      setView({ kind: 'list' });
      onRestored(number);
    } catch (e) {
      setConfirm(null);
      setRestoreError(`Restore failed: ${(e as Error).message}`);
    } finally {
      setRestoring(false);
    }
  };

  const restoreButton = (v: ProjectDocumentVersion, number: number) => (
    <button type="button" className="button" data-focus-key={`restore-${v.version}`} aria-label={`Restore version ${number}`} onClick={() => setConfirm({ version: v, number })}>
      Restore
    </button>
  );

  if (error) return <p className="notice notice-error" role="alert">Could not load the history: {error}</p>;
  if (!versions)
    return (
      <p className="msg-pending">
        <Spinner /> Loading history…
      </p>
    );

  return (
    <div className="history" data-testid="document-history">
      {restoreError ? (
        <p className="notice notice-error" role="alert">
          {restoreError}
        </p>
      ) : null}
      {view.kind === 'list' ? (
        versions.length === 0 ? (
          <p className="sidebar-empty">No versions recorded for this document yet.</p>
        ) : (
          <ol ref={listRef} className="version-list" aria-label={`Versions of ${path}`}>
            {versions.map((v, i) => {
              const number = versions.length - i;
              return (
                <li key={v.version} className="version" data-testid="version-item" data-version={v.version}>
                  <div className="version-text">
                    <span className="version-title">
                      Version {number}
                      {i === 0 ? <span className="version-tag">latest</span> : null}
                    </span>
                    <span className="version-meta">
                      <time dateTime={v.at}>{dateTime(v.at)}</time> · {versionAuthor(v, ctx)} · {formatSize(v.size)}
                    </span>
                  </div>
                  <div className="version-actions">
                    <button type="button" className="button" data-focus-key={`version-${v.version}`} aria-label={`View version ${number}`} onClick={() => open('version', v, number)}>
                      View
                    </button>
                    {i > 0 ? (
                      <>
                        <button type="button" className="button" data-focus-key={`diff-${v.version}`} aria-label={`Diff version ${number} against the current file`} onClick={() => open('diff', v, number)}>
                          Diff
                        </button>
                        {canRestore ? restoreButton(v, number) : null}
                      </>
                    ) : null}
                  </div>
                </li>
              );
            })}
          </ol>
        )
      ) : (
        <section className="version-view" aria-labelledby={`${id}-vt`}>
          <div className="version-view-head">
            <button ref={backRef} type="button" className="button" onClick={() => setView({ kind: 'list' })}>
              ← All versions
            </button>
            <h3 id={`${id}-vt`} className="version-view-title">
              {view.kind === 'diff' ? `Changes from version ${view.number} to the current file` : `Version ${view.number}`}
              <span className="version-meta"> · {dateTime(view.version.at)}</span>
            </h3>
            {canRestore && view.number < versions.length ? restoreButton(view.version, view.number) : null}
          </div>
          {view.kind === 'version' ? (
            <VersionContent projectId={ctx.projectId} path={path} version={view.version.version} />
          ) : (
            <VersionDiff projectId={ctx.projectId} path={path} version={view.version.version} number={view.number} />
          )}
        </section>
      )}
      {confirm ? (
        <ConfirmDialog title={`Restore version ${confirm.number}?`} confirmLabel="Restore" busy={restoring} onConfirm={() => void doRestore()} onCancel={() => setConfirm(null)}>
          <p>
            {path} will be replaced by version {confirm.number} from {dateTime(confirm.version.at)}. The current content stays in the history, so this can be undone.
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}


'use client';

import { useCallback, useEffect, useId, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import type { AgentSummary } from '@/types/api';
import { api, projectFileUrl } from '../_lib/api';
import { modalKeys } from '../_lib/focus';
import { dateTime, formatSize, relativeTime } from '../_lib/format';
import { routeHref } from '../_lib/route';
import { useFileList } from '../_lib/useFileList';
import type { FileVersion, ProjectFileEntry } from '../_lib/types';
import { ConfirmDialog } from './ConfirmDialog';
import { FileContentView, useFileContent } from './FileContent';
import { CloseIcon, DownloadIcon, FilesIcon, FolderIcon, RefreshIcon, Spinner } from './icons';

/** What a document or a version needs to say who wrote it. */
interface Authorship {
  projectId: string;
  conversationId: string | null;
  agents: AgentSummary[];
  onOpenConversation?: (id: string) => void;
}

function agentName(agents: AgentSummary[], id: string): string {
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

interface DirNode {
  name: string;
  path: string;
  dirs: DirNode[];
  files: ProjectFileEntry[];
}

/** The flat list the API gives, as folders and files, folders first, each alphabetical. */
export function toTree(files: ProjectFileEntry[]): DirNode {
  const root: DirNode = { name: '', path: '', dirs: [], files: [] };
  for (const f of files) {
    const parts = f.path.split('/').filter(Boolean);
    let node = root;
    for (const part of parts.slice(0, -1)) {
      const path = node.path ? `${node.path}/${part}` : part;
      let next = node.dirs.find((d) => d.name === part);
      if (!next) {
        next = { name: part, path, dirs: [], files: [] };
        node.dirs.push(next);
      }
      node = next;
    }
    node.files.push(f);
  }
  const sort = (n: DirNode) => {
    n.dirs.sort((a, b) => a.name.localeCompare(b.name));
    n.files.sort((a, b) => a.name.localeCompare(b.name));
    n.dirs.forEach(sort);
  };
  sort(root);
  return root;
}

function DocTree({ node, ctx, onOpen }: { node: DirNode; ctx: Authorship; onOpen: (path: string) => void }) {
  return (
    <ul className="file-tree">
      {node.dirs.map((d) => (
        <li key={d.path} className="file-dir">
          <details open>
            <summary>
              <FolderIcon /> {d.name}
            </summary>
            <DocTree node={d} ctx={ctx} onOpen={onOpen} />
          </details>
        </li>
      ))}
      {node.files.map((f) => (
        <li key={f.path} className="file-item doc-item">
          <button type="button" className="file-open" data-testid="output-file" data-path={f.path} onClick={() => onOpen(f.path)} title={`Open ${f.path}`}>
            <FilesIcon />
            <span className="doc-text">
              <span className="file-name">{f.name}</span>
              <span className="doc-meta" data-testid="last-writer">
                {f.lastWriter && (f.lastWriter.agentId || f.lastWriter.person)
                  ? f.lastWriter.agentId
                    ? `${agentName(ctx.agents, f.lastWriter.agentId)}${f.lastWriter.conversationId && f.lastWriter.conversationId === ctx.conversationId ? ', this conversation' : ''} · ${relativeTime(f.lastWriter.at)}`
                    : `restored by ${f.lastWriter.person} · ${relativeTime(f.lastWriter.at)}`
                  : `changed ${relativeTime(f.modifiedAt)}`}
              </span>
            </span>
            <span className="file-size">{formatSize(f.size)}</span>
          </button>
          <a className="icon-button" href={projectFileUrl(ctx.projectId, f.path, { download: true })} download={f.name} aria-label={`Download ${f.name}`} title={`Download ${f.name}`}>
            <DownloadIcon />
          </a>
        </li>
      ))}
    </ul>
  );
}

type HistoryView = { kind: 'list' } | { kind: 'version' | 'diff'; version: FileVersion; number: number };

/** A diff with no change line (only its file headers, or nothing) shows no differences. */
export function hasChanges(diff: string): boolean {
  return diff.split('\n').some((line) => line.startsWith('@@') || line.startsWith('Binary files'));
}

function DiffView({ diff }: { diff: string }) {
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

function versionAuthor(v: FileVersion, ctx: Authorship) {
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

function DocumentHistory({ path, ctx, reloadKey, onRestored }: { path: string; ctx: Authorship; reloadKey: number; onRestored: (number: number) => void }) {
  const id = useId();
  const [versions, setVersions] = useState<FileVersion[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [view, setView] = useState<HistoryView>({ kind: 'list' });
  const [confirm, setConfirm] = useState<{ version: FileVersion; number: number } | null>(null);
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

  const open = (kind: 'version' | 'diff', version: FileVersion, number: number) => {
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

  const restoreButton = (v: FileVersion, number: number) => (
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
                        {restoreButton(v, number)}
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
            {view.number < versions.length ? restoreButton(view.version, view.number) : null}
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

type Tab = 'document' | 'history';

function DocumentViewer({ path, ctx, version, onClose, onChanged }: { path: string; ctx: Authorship; version: number; onClose: () => void; onChanged: () => void }) {
  const id = useId();
  const [tab, setTab] = useState<Tab>('document');
  const [restored, setRestored] = useState(0);
  const [note, setNote] = useState('');
  const content = useFileContent(projectFileUrl(ctx.projectId, path), path, `${version}:${restored}`);
  const boxRef = useRef<HTMLDivElement>(null);
  const closeRef = useRef<HTMLButtonElement>(null);
  const tabRefs = useRef<Record<Tab, HTMLButtonElement | null>>({ document: null, history: null });

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null;
    closeRef.current?.focus();
    return () => previous?.focus?.();
  }, []);

  // The button that asked for the restore may be gone from the refreshed list; the tab stays.
  useEffect(() => {
    if (restored > 0) tabRefs.current.history?.focus();
  }, [restored]);

  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, onClose);

  const onTabKey = (e: KeyboardEvent) => {
    const order: Tab[] = ['document', 'history'];
    const i = order.indexOf(tab);
    const moves: Record<string, number> = { ArrowRight: (i + 1) % order.length, ArrowLeft: (i + order.length - 1) % order.length, Home: 0, End: order.length - 1 };
    const next = e.key in moves ? order[moves[e.key]] : null;
    if (!next) return;
    e.preventDefault();
    setTab(next);
    tabRefs.current[next]?.focus();
  };

  const tabProps = (t: Tab) => ({
    ref: (el: HTMLButtonElement | null) => {
      tabRefs.current[t] = el;
    },
    type: 'button' as const,
    role: 'tab',
    id: `${id}-tab-${t}`,
    'aria-selected': tab === t,
    'aria-controls': `${id}-panel-${t}`,
    tabIndex: tab === t ? 0 : -1,
    className: tab === t ? 'tab is-selected' : 'tab',
    onClick: () => setTab(t),
  });

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div ref={boxRef} className="modal modal-viewer" role="dialog" aria-modal="true" aria-labelledby={`${id}-t`} onKeyDown={onKeyDown} data-testid="file-viewer">
        <div className="viewer-head">
          <h2 id={`${id}-t`} className="viewer-title">
            {path}
          </h2>
          <a className="button" href={projectFileUrl(ctx.projectId, path, { download: true })} download={path.split('/').pop()} data-testid="file-download">
            <DownloadIcon /> Download
          </a>
          <button ref={closeRef} type="button" className="icon-button" aria-label="Close file" onClick={onClose}>
            <CloseIcon />
          </button>
        </div>
        <div className="tabs-row">
          <div className="tabs" role="tablist" aria-label="Document views" onKeyDown={onTabKey}>
            <button {...tabProps('document')}>Document</button>
            <button {...tabProps('history')}>History</button>
          </div>
          <p className="tabs-note" role="status" data-testid="document-status">
            {note}
          </p>
        </div>
        <div className="viewer-body" role="tabpanel" id={`${id}-panel-document`} aria-labelledby={`${id}-tab-document`} tabIndex={0} hidden={tab !== 'document'} data-testid="file-content">
          <FileContentView content={content} />
        </div>
        <div className="viewer-body" role="tabpanel" id={`${id}-panel-history`} aria-labelledby={`${id}-tab-history`} tabIndex={0} hidden={tab !== 'history'}>
          {tab === 'history' ? (
            <DocumentHistory
              path={path}
              ctx={ctx}
              reloadKey={version + restored}
              onRestored={(n) => {
                setRestored((r) => r + 1);
                setNote(`Restored version ${n}.`);
                onChanged();
              }}
            />
          ) : null}
        </div>
      </div>
    </div>
  );
}

export interface ProjectDocumentsProps {
  projectId: string;
  conversationId: string | null;
  agents: AgentSummary[];
  /** Bumped when a tool wrote a file or a turn ended. */
  version: number;
  onClose?: () => void;
  onCount?: (n: number) => void;
  onOpenConversation?: (id: string) => void;
}

/** The documents of a project, shared by all its agents, each with who wrote it last and its history. */
export function ProjectDocuments({ projectId, conversationId, agents, version, onClose, onCount, onOpenConversation }: ProjectDocumentsProps) {
  const [open, setOpen] = useState<string | null>(null);
  const [changes, setChanges] = useState(0);
  const load = useCallback((signal?: AbortSignal) => api.projectFiles(projectId, signal), [projectId]);
  const { files, loading, error, refresh } = useFileList({
    load,
    count: (list) => list.length,
    // A project whose output folder does not exist yet simply has no documents.
    meansEmpty: (e) => (e as { status?: number }).status === 404 && (e as { code?: string }).code !== 'E_PROJECT_NOT_FOUND',
    onCount,
    reloadKey: `${version}:${changes}`,
  });

  useEffect(() => setOpen(null), [projectId]);

  const ctx: Authorship = { projectId, conversationId, agents, onOpenConversation };

  return (
    <section className="outputs-inner" aria-labelledby="outputs-title">
      <div className="outputs-head">
        <h2 id="outputs-title">Project documents</h2>
        <button type="button" className="icon-button" aria-label="Refresh documents" onClick={() => void refresh()}>
          {loading ? <Spinner /> : <RefreshIcon />}
        </button>
        {onClose ? (
          <button type="button" className="icon-button" aria-label="Close documents" onClick={onClose}>
            <CloseIcon />
          </button>
        ) : null}
      </div>
      <p className="outputs-lead">Shared by all the agents of this project.</p>
      {error ? (
        <p className="sidebar-error" role="alert">
          {error}
        </p>
      ) : null}
      {files.length === 0 && !loading && !error ? <p className="sidebar-empty">No documents yet. Documents the agents save will appear here.</p> : null}
      {files.length > 0 ? <DocTree node={toTree(files)} ctx={ctx} onOpen={setOpen} /> : null}
      {open ? (
        <DocumentViewer
          path={open}
          ctx={ctx}
          version={version}
          onClose={() => setOpen(null)}
          onChanged={() => setChanges((c) => c + 1)}
        />
      ) : null}
    </section>
  );
}

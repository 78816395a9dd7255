'use client';

import { useCallback, useEffect, useId, useRef, useState } from 'react';
import type { AgentSummary, ConversationSummaryView } from '@/types/api';
import { personLabel } from '../_lib/accounts';
import { api, ApiError } from '../_lib/api';
import { DATE_GROUPS, dateGroup, relativeTime } from '../_lib/format';
import { Avatar } from './Avatar';
import { ConfirmDialog } from './ConfirmDialog';
import { RunsList, type OpenDocument } from './RunsList';
import { useMe } from './AuthGate';
import { CloseIcon, PencilIcon, PlusIcon, SearchIcon, Spinner, TrashIcon } from './icons';

const PAGE = 30;
/** A running conversation is asked about again this often, until it is no longer running. */
const POLL_MS = 1500;
const POLL_MAX = 80;
const SEARCH_DELAY_MS = 250;

type Summary = ConversationSummaryView;

const STATUS_WORDS: Partial<Record<Summary['status'], string>> = {
  running: 'running',
  failed: 'failed',
  interrupted: 'interrupted',
};

export interface SidebarProps {
  currentId: string | null;
  /** The project whose conversations are listed; without it, every conversation. */
  projectId?: string | null;
  /** The project as the heading names it: its id, with BMAD's project_name where it differs. */
  projectName?: string;
  /** The agents of the listed workspace, for icons and names. */
  agents: AgentSummary[];
  /** Bumped by the page when the list may have changed (new conversation, turn ended). */
  refreshKey: number;
  /** The conversation's project travels along, so opening it restores its project. */
  onSelect: (id: string, projectId?: string) => void;
  onNew: () => void;
  onDeleted: (id: string) => void;
  onClose?: () => void;
  /** How often a running conversation's status is asked for again (tests shorten it). */
  pollMs?: number;
  /** Opens a file a run wrote in the page's document viewer. */
  openDocument?: OpenDocument;
}

export function Sidebar({ currentId, projectId = null, projectName, agents, refreshKey, onSelect, onNew, onDeleted, onClose, pollMs = POLL_MS, openDocument }: SidebarProps) {
  const [items, setItems] = useState<Summary[]>([]);
  const [cursor, setCursor] = useState<string | undefined>();
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [draft, setDraft] = useState('');
  const [renameError, setRenameError] = useState<string | null>(null);
  const { me } = useMe();
  const [confirmDelete, setConfirmDelete] = useState<Summary | null>(null);
  const [deleting, setDeleting] = useState(false);
  const savingRef = useRef(false);
  const [query, setQuery] = useState('');
  const [search, setSearch] = useState('');
  const [polls, setPolls] = useState(0);
  const searchId = useId();

  const refresh = useCallback(async (signal?: AbortSignal) => {
    try {
      const data = await api.conversations({ limit: PAGE, projectId, q: search || undefined }, signal);
      setItems(data.items ?? []);
      setCursor(data.nextCursor);
      setError(null);
    } catch (e) {
      if ((e as Error)?.name === 'AbortError') return;
      // A project one may not see is said in words by the page itself, never as the API's message.
      if (e instanceof ApiError && e.code === 'E_PROJECT_NOT_FOUND') {
        setItems([]);
        setError(null);
        return;
      }
      setError((e as Error).message);
    } finally {
      if (!signal?.aborted) setLoading(false);
    }
  }, [projectId, search]);

  // Another workspace's list must not linger (or take clicks) while this one loads.
  useEffect(() => {
    setItems([]);
    setCursor(undefined);
    setError(null);
    setLoading(true);
  }, [projectId]);

  useEffect(() => {
    const t = window.setTimeout(() => setSearch(query.trim()), query.trim() ? SEARCH_DELAY_MS : 0);
    return () => window.clearTimeout(t);
  }, [query]);

  useEffect(() => {
    const ctrl = new AbortController();
    setPolls(0);
    void refresh(ctrl.signal);
    return () => ctrl.abort();
  }, [refresh, refreshKey]);

  // A turn ends in the browser a moment before the server lets go of it (a stopped turn still
  // saves what it had): keep asking while anything listed says it runs. Each new list sets the
  // next timer; only unmounting or a new query cancels the request in flight.
  const anyRunning = items.some((c) => c.status === 'running');
  const pollCtrl = useRef<AbortController | null>(null);
  useEffect(() => () => pollCtrl.current?.abort(), [refresh]);
  useEffect(() => {
    if (!anyRunning || polls >= POLL_MAX) return;
    const t = window.setTimeout(() => {
      pollCtrl.current?.abort();
      pollCtrl.current = new AbortController();
      setPolls((n) => n + 1);
      void refresh(pollCtrl.current.signal);
    }, pollMs);
    return () => window.clearTimeout(t);
  }, [anyRunning, items, polls, pollMs, refresh]);

  const loadMore = async () => {
    if (!cursor) return;
    try {
      const data = await api.conversations({ limit: PAGE, cursor, projectId, q: search || undefined });
      setItems((prev) => {
        const seen = new Set(prev.map((c) => c.id));
        return [...prev, ...(data.items ?? []).filter((c) => !seen.has(c.id))];
      });
      setCursor(data.nextCursor);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const startRename = (c: Summary) => {
    setEditing(c.id);
    setDraft(c.title);
    setRenameError(null);
  };

  const saveRename = async () => {
    if (!editing || savingRef.current) return;
    const id = editing;
    const title = draft.trim();
    const old = items.find((c) => c.id === id);
    if (!title || title === old?.title) {
      setEditing(null);
      return;
    }
    savingRef.current = true;
    setItems((prev) => prev.map((c) => (c.id === id ? { ...c, title } : c)));
    setEditing(null);
    try {
      const updated = await api.rename(id, title);
      const saved = updated?.title;
      if (typeof saved === 'string') setItems((prev) => prev.map((c) => (c.id === id ? { ...c, title: saved } : c)));
    } catch (e) {
      setItems((prev) => prev.map((c) => (c.id === id && old ? { ...c, title: old.title } : c)));
      setRenameError(`Rename failed: ${(e as Error).message}`);
    } finally {
      savingRef.current = false;
    }
  };

  const doDelete = async () => {
    if (!confirmDelete) return;
    const id = confirmDelete.id;
    setDeleting(true);
    try {
      await api.remove(id);
      setItems((prev) => prev.filter((c) => c.id !== id));
      setConfirmDelete(null);
      onDeleted(id);
    } catch (e) {
      setError(`Delete failed: ${(e as Error).message}`);
      setConfirmDelete(null);
    } finally {
      setDeleting(false);
    }
  };

  // Ids repeat across projects and bundles: only an agent of the conversation's own workspace names it.
  const agentOf = (c: Summary) => agents.find((a) => a.id === c.agentId && (a.projectId ?? null) === (c.projectId ?? projectId ?? null));

  const now = new Date();
  const byGroup = new Map<string, Summary[]>();
  for (const c of items) {
    const g = dateGroup(c.updatedAt, now);
    byGroup.set(g, [...(byGroup.get(g) ?? []), c]);
  }
  const groups = DATE_GROUPS.filter((g) => byGroup.has(g)).map((g) => [g, byGroup.get(g)!] as const);

  const renderItem = (c: Summary) => {
    const agent = agentOf(c);
    const project = c.projectId ?? projectId;
    const current = c.id === currentId;
    const title = c.title || 'Untitled conversation';
    const statusWord = STATUS_WORDS[c.status];
    // Someone else's (shared with the reader, or seen by an admin): named, and only theirs to change.
    const ownerName = me && c.owner && c.owner.id !== me.id ? personLabel(c.owner) : null;
    const writable = c.canWrite !== false;
    return (
      <li key={c.id} className={current ? 'conv is-current' : 'conv'} data-testid="conversation-item" data-conversation-id={c.id} data-status={c.status}>
        {editing === c.id ? (
          <input
            className="conv-rename"
            aria-label="Conversation title"
            data-testid="rename-input"
            value={draft}
            autoFocus
            maxLength={200}
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              if (e.nativeEvent.isComposing || e.keyCode === 229) return;
              if (e.key === 'Enter') {
                e.preventDefault();
                void saveRename();
              } else if (e.key === 'Escape') {
                e.preventDefault();
                setEditing(null);
              }
            }}
            onBlur={() => void saveRename()}
          />
        ) : (
          <button type="button" className="conv-open" aria-current={current ? 'page' : undefined} title={title} onClick={() => (project ? onSelect(c.id, project) : onSelect(c.id))}>
            <Avatar icon={agent?.icon} name={agent?.name ?? c.agentId} className="conv-icon" />
            <span className="conv-text">
              <span className="conv-title">{title}</span>
              <span className="conv-meta">
                {agent?.name ?? c.agentId}
                {ownerName ? (
                  <span className="conv-owner" data-testid="conversation-owner">
                    {` · ${ownerName}’s`}
                  </span>
                ) : null}
                {/* A project by its folder id: two copies of one install often share a project_name. */}
                {c.projectId && !projectId ? ` · ${c.projectId}` : ''} · {relativeTime(c.updatedAt)}
                {statusWord ? <span className={`conv-status conv-status-${c.status}`} data-testid="conversation-status">{` · ${statusWord}`}</span> : null}
              </span>
            </span>
          </button>
        )}
        {editing !== c.id && writable ? (
          <span className="conv-actions">
            <button type="button" className="icon-button" aria-label={`Rename “${title}”`} data-testid="rename-conversation" onClick={() => startRename(c)}>
              <PencilIcon />
            </button>
            <button type="button" className="icon-button" aria-label={`Delete “${title}”`} data-testid="delete-conversation" onClick={() => setConfirmDelete(c)}>
              <TrashIcon />
            </button>
          </span>
        ) : null}
      </li>
    );
  };

  return (
    <nav className="sidebar-inner" aria-label="Conversations">
      <div className="sidebar-head">
        <button type="button" className="button button-primary sidebar-new" onClick={onNew} data-testid="new-conversation">
          <PlusIcon /> New conversation
        </button>
        {onClose ? (
          <button type="button" className="icon-button sidebar-close" aria-label="Close conversations" onClick={onClose}>
            <CloseIcon />
          </button>
        ) : null}
      </div>
      <h2 className="sidebar-title">
        Conversations
        {projectId ? <span className="sidebar-scope"> · {projectName ?? projectId}</span> : null}
      </h2>
      {renameError ? (
        <p className="sidebar-error" role="alert">
          {renameError}
        </p>
      ) : null}
      {error ? (
        <p className="sidebar-error" role="alert">
          {error}{' '}
          <button type="button" className="link-button" onClick={() => void refresh()}>
            Retry
          </button>
        </p>
      ) : null}
      <div className="sidebar-search">
        <label htmlFor={searchId} className="visually-hidden">
          Search conversations
        </label>
        <SearchIcon />
        <input
          id={searchId}
          type="search"
          className="sidebar-search-input"
          placeholder="Search conversations"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          data-testid="conversation-search"
        />
      </div>
      {loading ? (
        <p className="sidebar-empty">
          <Spinner /> Loading…
        </p>
      ) : items.length === 0 && !error ? (
        <p className="sidebar-empty" data-testid="sidebar-empty">
          {search ? `No conversations match “${search}”.` : 'No conversations yet.'}
        </p>
      ) : null}
      {groups.map(([group, list]) => (
        <section key={group} className="conv-group" aria-labelledby={`${searchId}-${group.replace(/\W+/g, '-')}`} data-testid="conversation-group">
          <h3 id={`${searchId}-${group.replace(/\W+/g, '-')}`} className="conv-group-title">
            {group}
          </h3>
          <ul className="conv-list">{list.map(renderItem)}</ul>
        </section>
      ))}
      {projectId ? <RunsList projectId={projectId} openDocument={openDocument} /> : null}
      {cursor ? (
        <button type="button" className="button sidebar-more" onClick={() => void loadMore()}>
          Load more
        </button>
      ) : null}
      {confirmDelete ? (
        <ConfirmDialog title="Delete conversation?" confirmLabel="Delete" danger busy={deleting} onConfirm={() => void doDelete()} onCancel={() => setConfirmDelete(null)}>
          <p>
            “{confirmDelete.title || 'Untitled conversation'}” will be deleted. This cannot be undone.
          </p>
        </ConfirmDialog>
      ) : null}
    </nav>
  );
}

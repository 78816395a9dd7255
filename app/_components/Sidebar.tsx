'use client';

import { useCallback, useEffect, useRef, useState } from 'react';
import type { AgentSummary, ConversationSummaryView } from '@/types/api';
import type { WithProject } from '../_lib/types';
import { api } from '../_lib/api';
import { relativeTime } from '../_lib/format';
import { ConfirmDialog } from './ConfirmDialog';
import { CloseIcon, PencilIcon, PlusIcon, Spinner, TrashIcon } from './icons';

const PAGE = 30;

type Summary = WithProject<ConversationSummaryView>;

export interface SidebarProps {
  currentId: string | null;
  /** The project whose conversations are listed; without it, every conversation. */
  projectId?: string | null;
  /** The project's display name, for the heading. */
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
}

export function Sidebar({ currentId, projectId = null, projectName, agents, refreshKey, onSelect, onNew, onDeleted, onClose }: SidebarProps) {
  const [items, setItems] = useState<Summary[]>([]);
  const [cursor, setCursor] = useState<string | undefined>();
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [draft, setDraft] = useState('');
  const [renameError, setRenameError] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState<Summary | null>(null);
  const [deleting, setDeleting] = useState(false);
  const savingRef = useRef(false);

  const refresh = useCallback(async (signal?: AbortSignal) => {
    try {
      const data = await api.conversations({ limit: PAGE, projectId }, signal);
      setItems(data.items ?? []);
      setCursor(data.nextCursor);
      setError(null);
    } catch (e) {
      if ((e as Error)?.name === 'AbortError') return;
      setError((e as Error).message);
    } finally {
      setLoading(false);
    }
  }, [projectId]);

  // Another workspace's list must not linger (or take clicks) while this one loads.
  useEffect(() => {
    setItems([]);
    setCursor(undefined);
    setLoading(true);
  }, [projectId]);

  useEffect(() => {
    const ctrl = new AbortController();
    void refresh(ctrl.signal);
    return () => ctrl.abort();
  }, [refresh, refreshKey]);

  const loadMore = async () => {
    if (!cursor) return;
    try {
      const data = await api.conversations({ limit: PAGE, cursor, projectId });
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
      if (updated && typeof updated === 'object' && 'title' in updated) {
        setItems((prev) => prev.map((c) => (c.id === id ? { ...c, title: updated.title } : c)));
      }
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
      {loading ? (
        <p className="sidebar-empty">
          <Spinner /> Loading…
        </p>
      ) : items.length === 0 && !error ? (
        <p className="sidebar-empty">No conversations yet.</p>
      ) : null}
      <ul className="conv-list">
        {items.map((c) => {
          const agent = agentOf(c);
          const project = c.projectId ?? projectId;
          const current = c.id === currentId;
          return (
            <li key={c.id} className={current ? 'conv is-current' : 'conv'} data-testid="conversation-item" data-conversation-id={c.id}>
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
                <button type="button" className="conv-open" aria-current={current ? 'page' : undefined} onClick={() => (project ? onSelect(c.id, project) : onSelect(c.id))}>
                  <span className="conv-icon" aria-hidden="true">
                    {agent?.icon ?? '💬'}
                  </span>
                  <span className="conv-text">
                    <span className="conv-title">{c.title || 'Untitled conversation'}</span>
                    <span className="conv-meta">
                      {agent?.name ?? c.agentId}
                      {c.projectId && !projectId ? ` · ${c.bundleName}` : ''} · {relativeTime(c.updatedAt)}
                      {c.status === 'running' ? ' · running' : ''}
                    </span>
                  </span>
                </button>
              )}
              {editing !== c.id ? (
                <span className="conv-actions">
                  <button type="button" className="icon-button" aria-label={`Rename “${c.title || 'Untitled conversation'}”`} data-testid="rename-conversation" onClick={() => startRename(c)}>
                    <PencilIcon />
                  </button>
                  <button type="button" className="icon-button" aria-label={`Delete “${c.title || 'Untitled conversation'}”`} data-testid="delete-conversation" onClick={() => setConfirmDelete(c)}>
                    <TrashIcon />
                  </button>
                </span>
              ) : null}
            </li>
          );
        })}
      </ul>
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

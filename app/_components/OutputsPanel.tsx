'use client';

import { useEffect, useMemo, useState } from 'react';
import type { AgentSummary, OutputFileEntry } from '@/types/api';
import { api, fileUrl } from '../_lib/api';
import { formatSize } from '../_lib/format';
import { useFileList } from '../_lib/useFileList';
import { DocumentPanel } from './DocumentPanel';
import { ProjectDocuments } from './ProjectDocuments';
import { CloseIcon, DownloadIcon, FilesIcon, FolderIcon, RefreshIcon, Spinner } from './icons';

function countFiles(entries: OutputFileEntry[]): number {
  return entries.reduce((n, e) => n + (e.type === 'file' ? 1 : countFiles(e.children ?? [])), 0);
}

function Tree({ entries, conversationId, onOpen }: { entries: OutputFileEntry[]; conversationId: string; onOpen: (path: string) => void }) {
  return (
    <ul className="file-tree">
      {entries.map((e) =>
        e.type === 'directory' ? (
          <li key={e.path} className="file-dir">
            <details open>
              <summary>
                <FolderIcon /> {e.name}
              </summary>
              <Tree entries={e.children ?? []} conversationId={conversationId} onOpen={onOpen} />
            </details>
          </li>
        ) : (
          <li key={e.path} className="file-item">
            <button type="button" className="file-open" data-testid="output-file" data-path={e.path} onClick={() => onOpen(e.path)} title={`Open ${e.path}`}>
              <FilesIcon />
              <span className="file-name">{e.name}</span>
              <span className="file-size">{formatSize(e.size)}</span>
            </button>
            <a className="icon-button" href={fileUrl(conversationId, e.path, true)} download={e.name} aria-label={`Download ${e.name}`} title={`Download ${e.name}`}>
              <DownloadIcon />
            </a>
          </li>
        ),
      )}
    </ul>
  );
}

export interface OutputsPanelProps {
  conversationId: string | null;
  /** Set for a project: its documents, shared by all its agents, replace the conversation's files. */
  projectId?: string | null;
  /** The project's agents, to name who wrote a document. */
  agents?: AgentSummary[];
  onOpenConversation?: (id: string) => void;
  /** Bumped when a tool wrote a file or a turn ended. */
  version: number;
  onClose?: () => void;
  onCount?: (n: number) => void;
  /** Opens a file in the page's one viewer; without it the panel opens the viewer itself, as a dialog. */
  onOpen?: (path: string) => void;
  /** A project's documents, for those who may write them (path relative to the output folder). */
  onSave?: (path: string, content: string, ifMatchSha256: string | undefined) => Promise<void>;
  /** Bumped by the page when a document changed through its viewer. */
  changedKey?: number;
}

export function OutputsPanel(props: OutputsPanelProps) {
  if (props.projectId) {
    return (
      <ProjectDocuments
        projectId={props.projectId}
        conversationId={props.conversationId}
        agents={props.agents ?? []}
        version={props.version}
        onClose={props.onClose}
        onCount={props.onCount}
        onOpenConversation={props.onOpenConversation}
        onOpen={props.onOpen}
        onSave={props.onSave}
        changedKey={props.changedKey}
      />
    );
  }
  return <ConversationOutputs {...props} />;
}

function ConversationOutputs({ conversationId, version, onClose, onCount, onOpen }: OutputsPanelProps) {
  const [open, setOpen] = useState<string | null>(null);
  const load = useMemo(() => (conversationId ? (signal?: AbortSignal) => api.files(conversationId, signal) : null), [conversationId]);
  const { files, loading, error, refresh } = useFileList({
    load,
    count: countFiles,
    // A conversation with no output folder yet is simply empty.
    meansEmpty: (e) => (e as { status?: number }).status === 404,
    onCount,
    reloadKey: version,
  });

  useEffect(() => setOpen(null), [conversationId]);

  return (
    <section className="outputs-inner" aria-labelledby="outputs-title">
      <div className="outputs-head">
        <h2 id="outputs-title">Outputs</h2>
        {conversationId ? (
          <button type="button" className="icon-button" aria-label="Refresh outputs" onClick={() => void refresh()}>
            {loading ? <Spinner /> : <RefreshIcon />}
          </button>
        ) : null}
        {onClose ? (
          <button type="button" className="icon-button" aria-label="Close outputs" onClick={onClose}>
            <CloseIcon />
          </button>
        ) : null}
      </div>
      {error ? (
        <p className="sidebar-error" role="alert">
          {error}
        </p>
      ) : null}
      {!conversationId ? (
        <p className="sidebar-empty">Files the agent writes in this conversation appear here.</p>
      ) : files.length === 0 && !loading && !error ? (
        <p className="sidebar-empty">No files yet. Documents the agent saves will appear here.</p>
      ) : null}
      {conversationId && files.length > 0 ? <Tree entries={files} conversationId={conversationId} onOpen={onOpen ?? setOpen} /> : null}
      {conversationId && open && !onOpen ? (
        <DocumentPanel
          path={open}
          url={fileUrl(conversationId, open)}
          downloadUrl={fileUrl(conversationId, open, true)}
          version={version}
          docked={false}
          onClose={() => setOpen(null)}
        />
      ) : null}
    </section>
  );
}

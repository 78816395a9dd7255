'use client';

import { useCallback, useEffect, useState } from 'react';
import type { AgentSummary, ProjectDocument } from '@/types/api';
import { api, projectFileUrl } from '../_lib/api';
import { formatSize, relativeTime } from '../_lib/format';
import { useFileList } from '../_lib/useFileList';
import { DocumentPanel } from './DocumentPanel';
import { agentName, type Authorship } from './DocumentHistory';
import { CloseIcon, DownloadIcon, FilesIcon, FolderIcon, RefreshIcon, Spinner } from './icons';

export { hasChanges } from './DocumentHistory';

interface DirNode {
  name: string;
  path: string;
  dirs: DirNode[];
  files: ProjectDocument[];
}

/** The flat list the API gives, as folders and files, folders first, each alphabetical. */
export function toTree(files: ProjectDocument[]): DirNode {
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

export interface ProjectDocumentsProps {
  projectId: string;
  conversationId: string | null;
  agents: AgentSummary[];
  /** Bumped when a tool wrote a file or a turn ended. */
  version: number;
  onClose?: () => void;
  onCount?: (n: number) => void;
  onOpenConversation?: (id: string) => void;
  /** Opens a document in the page's one viewer; without it the list opens the viewer itself, as a dialog. */
  onOpen?: (path: string) => void;
  /** Saves a document (path relative to the output folder): given to those who may write. */
  onSave?: (path: string, content: string, ifMatchSha256: string | undefined) => Promise<void>;
  /** Bumped by the page when a document changed through its viewer. */
  changedKey?: number;
}

/** The documents of a project, shared by all its agents, each with who wrote it last and its history. */
export function ProjectDocuments({ projectId, conversationId, agents, version, onClose, onCount, onOpenConversation, onOpen, onSave, changedKey = 0 }: ProjectDocumentsProps) {
  const [open, setOpen] = useState<string | null>(null);
  const [changes, setChanges] = useState(0);
  const load = useCallback((signal?: AbortSignal) => api.projectFiles(projectId, signal), [projectId]);
  const { files, loading, error, refresh } = useFileList({
    load,
    count: (list) => list.length,
    // A project whose output folder does not exist yet simply has no documents.
    meansEmpty: (e) => (e as { status?: number }).status === 404 && (e as { code?: string }).code !== 'E_PROJECT_NOT_FOUND',
    onCount,
    reloadKey: `${version}:${changes}:${changedKey}`,
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
      {files.length > 0 ? <DocTree node={toTree(files)} ctx={ctx} onOpen={onOpen ?? setOpen} /> : null}
      {open && !onOpen ? (
        <DocumentPanel
          path={open}
          url={projectFileUrl(projectId, open)}
          downloadUrl={projectFileUrl(projectId, open, { download: true })}
          version={`${version}:${changes}`}
          docked={false}
          history={ctx}
          onClose={() => setOpen(null)}
          onChanged={() => setChanges((c) => c + 1)}
          onSave={
            onSave
              ? async (text, sha) => {
                  await onSave(open, text, sha);
                  setChanges((c) => c + 1);
                }
              : undefined
          }
        />
      ) : null}
    </section>
  );
}

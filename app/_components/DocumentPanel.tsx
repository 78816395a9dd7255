'use client';

import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { modalKeys } from '../_lib/focus';
import { DocumentEditor } from './DocumentEditor';
import { FileContentView, useFileContent } from './FileContent';
import { CloseIcon, DownloadIcon } from './icons';

export interface DocumentPanelProps {
  /** Relative to the output folder. */
  path: string;
  url: string;
  downloadUrl: string;
  /** Bumped when the agent wrote the file again: the panel reads it anew. */
  version: number;
  /** Wide screens: a panel beside the chat; narrow ones: a dialog over it. */
  docked: boolean;
  onClose: () => void;
  /** Where people may edit it (a project's document): saves the text over the content it was opened from. */
  onSave?: (content: string, ifMatchSha256: string | undefined) => Promise<void>;
}

/** One document, beside the conversation while the agent writes it (or over it on a phone). */
export function DocumentPanel({ path, url, downloadUrl, version, docked, onClose, onSave }: DocumentPanelProps) {
  const content = useFileContent(url, path, version, { keepWhileLoading: true });
  const [editing, setEditing] = useState(false);
  const editable = !!onSave && (content.state === 'markdown' || content.state === 'text');
  useEffect(() => setEditing(false), [path]);
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const closeRef = useRef<HTMLButtonElement>(null);
  const name = path.split('/').pop() ?? path;

  useEffect(() => {
    if (docked) return;
    const previous = document.activeElement as HTMLElement | null;
    closeRef.current?.focus();
    return () => previous?.focus?.();
  }, [docked]);

  const head = (
    <div className="viewer-head">
      <div className="docpanel-titles">
        <h2 id={`${id}-t`} className="viewer-title">
          {name}
        </h2>
        {path !== name ? <p className="docpanel-path">{path}</p> : null}
      </div>
      {editable && !editing ? (
        <button type="button" className="button" onClick={() => setEditing(true)} data-testid="document-edit">
          Edit
        </button>
      ) : null}
      <a className="button" href={downloadUrl} download={name} data-testid="document-download">
        <DownloadIcon /> Download
      </a>
      <button ref={closeRef} type="button" className="icon-button" aria-label="Close document" onClick={onClose} data-testid="document-close">
        <CloseIcon />
      </button>
    </div>
  );
  const body =
    editing && onSave ? (
      <div className="viewer-body viewer-body-editing">
        <DocumentEditor
          url={url}
          path={path}
          markdown={content.state === 'markdown'}
          onCancel={() => setEditing(false)}
          onSave={async (text, sha) => {
            await onSave(text, sha);
            setEditing(false);
          }}
        />
      </div>
    ) : (
      <div className="viewer-body" tabIndex={0} data-testid="document-content" aria-labelledby={`${id}-t`} role="document">
        <FileContentView content={content} />
      </div>
    );

  if (docked) {
    return (
      <aside className="docpanel" aria-labelledby={`${id}-t`} data-testid="document-panel" data-path={path}>
        {head}
        {body}
      </aside>
    );
  }
  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, onClose);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div ref={boxRef} className="modal modal-viewer" role="dialog" aria-modal="true" aria-labelledby={`${id}-t`} onKeyDown={onKeyDown} data-testid="document-panel" data-path={path}>
        {head}
        {body}
      </div>
    </div>
  );
}

'use client';

import { useCallback, useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { modalKeys } from '../_lib/focus';
import { useEscape } from '../_lib/escape';
import { ConfirmDialog } from './ConfirmDialog';
import { DocumentEditor } from './DocumentEditor';
import { DocumentHistory, type Authorship } from './DocumentHistory';
import { FileContentView, useFileContent } from './FileContent';
import { CloseIcon, DownloadIcon } from './icons';

export interface DocumentPanelProps {
  /** Relative to the output folder (a project's) or the conversation's files. */
  path: string;
  url: string;
  downloadUrl: string;
  /** Bumped when the file was written again: the panel reads it anew. */
  version: number | string;
  /** Wide screens: a panel beside the chat; narrow ones (and lists): a dialog over it. */
  docked: boolean;
  onClose: () => void;
  /** A project's document has versions: the History tab (who wrote each, diffs, restores). */
  history?: Authorship;
  /** Only for those who may write the document: Edit (and Restore in History) come with it. */
  onSave?: (content: string, ifMatchSha256: string | undefined) => Promise<void>;
  /** A restore changed the document (lists showing it read again). */
  onChanged?: () => void;
  /** Whether an edit with unsaved changes is open: the page must not swap the document under it. */
  onDirtyChange?: (dirty: boolean) => void;
}

type Tab = 'document' | 'history';

/**
 * The one document viewer, wherever a document opens (a chat card, the journey, the documents
 * list, a conversation's outputs): the document, its History when it has versions, and Edit for
 * those who may write it. Escape closes it wherever the focus is; unsaved edits are never closed
 * away without asking.
 */
export function DocumentPanel({ path, url, downloadUrl, version, docked, onClose, history, onSave, onChanged, onDirtyChange }: DocumentPanelProps) {
  const [tab, setTab] = useState<Tab>('document');
  const [restored, setRestored] = useState(0);
  const [note, setNote] = useState('');
  const content = useFileContent(url, path, `${version}:${restored}`, { keepWhileLoading: true });
  const [editing, setEditing] = useState(false);
  const [dirty, setDirty] = useState(false);
  const [asking, setAsking] = useState<null | 'close' | 'cancel'>(null);
  const editable = !!onSave && (content.state === 'markdown' || content.state === 'text');
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const closeRef = useRef<HTMLButtonElement>(null);
  const tabRefs = useRef<Record<Tab, HTMLButtonElement | null>>({ document: null, history: null });
  const name = path.split('/').pop() ?? path;

  useEffect(() => {
    setEditing(false);
    setTab('document');
  }, [path]);

  const markDirty = useCallback(
    (d: boolean) => {
      setDirty(d);
      onDirtyChange?.(d);
    },
    [onDirtyChange],
  );
  useEffect(() => {
    if (!editing) markDirty(false);
  }, [editing, markDirty]);

  useEffect(() => {
    if (docked) return;
    const previous = document.activeElement as HTMLElement | null;
    closeRef.current?.focus();
    return () => previous?.focus?.();
  }, [docked]);

  // The button that asked for the restore may be gone from the refreshed list; the tab stays.
  useEffect(() => {
    if (restored > 0) tabRefs.current.history?.focus();
  }, [restored]);

  const requestClose = useCallback(() => {
    if (editing && dirty) setAsking('close');
    else onClose();
  }, [editing, dirty, onClose]);
  const requestCancel = () => {
    if (dirty) setAsking('cancel');
    else setEditing(false);
  };
  useEscape(!asking, requestClose);

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

  const head = (
    <div className="viewer-head">
      <div className="docpanel-titles">
        <h2 id={`${id}-t`} className="viewer-title">
          {name}
        </h2>
        {path !== name ? <p className="docpanel-path">{path}</p> : null}
      </div>
      {editable && !editing && tab === 'document' ? (
        <button type="button" className="button" onClick={() => setEditing(true)} data-testid="document-edit">
          Edit
        </button>
      ) : null}
      <a className="button" href={downloadUrl} download={name} data-testid="document-download">
        <DownloadIcon /> Download
      </a>
      <button ref={closeRef} type="button" className="icon-button" aria-label="Close document" onClick={requestClose} data-testid="document-close">
        <CloseIcon />
      </button>
    </div>
  );

  const documentBody =
    editing && onSave ? (
      <DocumentEditor
        url={url}
        path={path}
        markdown={content.state === 'markdown'}
        agents={history?.agents}
        onDirtyChange={markDirty}
        onCancel={requestCancel}
        onSave={async (text, sha) => {
          await onSave(text, sha);
          setEditing(false);
          setNote('Saved.');
        }}
      />
    ) : (
      <FileContentView content={content} />
    );

  const body = history ? (
    <>
      <div className="tabs-row">
        <div className="tabs" role="tablist" aria-label="Document views" onKeyDown={onTabKey}>
          <button {...tabProps('document')}>Document</button>
          <button {...tabProps('history')}>History</button>
        </div>
        <p className="tabs-note" role="status" data-testid="document-status">
          {note}
        </p>
      </div>
      <div
        className={editing ? 'viewer-body viewer-body-editing' : 'viewer-body'}
        role="tabpanel"
        id={`${id}-panel-document`}
        aria-labelledby={`${id}-tab-document`}
        tabIndex={editing ? undefined : 0}
        hidden={tab !== 'document'}
        data-testid={editing ? 'document-editing' : 'document-content'}
      >
        {documentBody}
      </div>
      <div className="viewer-body" role="tabpanel" id={`${id}-panel-history`} aria-labelledby={`${id}-tab-history`} tabIndex={0} hidden={tab !== 'history'}>
        {tab === 'history' ? (
          <DocumentHistory
            path={path}
            ctx={history}
            reloadKey={`${version}:${restored}`}
            canRestore={!!onSave}
            onRestored={(n) => {
              setRestored((r) => r + 1);
              setNote(`Restored version ${n}.`);
              onChanged?.();
            }}
          />
        ) : null}
      </div>
    </>
  ) : editing ? (
    <div className="viewer-body viewer-body-editing">
      {documentBody}
    </div>
  ) : (
    <div className="viewer-body" tabIndex={0} data-testid="document-content" aria-labelledby={`${id}-t`} role="document">
      {documentBody}
    </div>
  );

  const confirm = asking ? (
    <ConfirmDialog
      title="Discard your changes?"
      confirmLabel="Discard"
      danger
      onCancel={() => setAsking(null)}
      onConfirm={() => {
        const what = asking;
        setAsking(null);
        setEditing(false);
        markDirty(false);
        if (what === 'close') onClose();
      }}
    >
      <p>Your edits to {name} are not saved. They will be lost.</p>
    </ConfirmDialog>
  ) : null;

  if (docked) {
    return (
      <aside className="docpanel" aria-label={path} data-testid="document-panel" data-path={path}>
        {head}
        {body}
        {confirm}
      </aside>
    );
  }
  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, requestClose);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && requestClose()}>
      <div ref={boxRef} className="modal modal-viewer" role="dialog" aria-modal="true" aria-label={path} onKeyDown={onKeyDown} data-testid="document-panel" data-path={path}>
        {head}
        {body}
        {confirm}
      </div>
    </div>
  );
}

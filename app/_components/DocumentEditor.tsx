'use client';

import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { ApiError, ConflictError, sha256Hex } from '../_lib/api';
import { Markdown } from './Markdown';
import { Spinner } from './icons';

export interface DocumentEditorProps {
  /** The document's raw content (what the panel shows). */
  url: string;
  path: string;
  markdown: boolean;
  /** Saves the text; `ifMatchSha256` names the content it was edited from (absent for a new file). */
  onSave: (content: string, ifMatchSha256: string | undefined) => Promise<void>;
  onCancel: () => void;
}

type Loaded = { state: 'loading' } | { state: 'ready'; text: string; sha: string | undefined } | { state: 'error'; message: string };

async function readRaw(url: string, signal: AbortSignal): Promise<{ text: string; sha: string | undefined }> {
  const res = await fetch(url, { signal });
  if (!res.ok) throw new ApiError(`Could not open the document (${res.status}).`, 'E_HTTP', res.status);
  const bytes = await res.arrayBuffer();
  const sha = res.headers.get('x-content-sha256') ?? (await sha256Hex(bytes));
  return { text: new TextDecoder().decode(bytes), sha: sha ?? undefined };
}

/**
 * Edits a document's source, with a preview, and saves it only over the content it was opened
 * from: when someone (a person or an agent) changed it meanwhile, the save is refused and the
 * editor offers their version or a deliberate save over it.
 */
export function DocumentEditor({ url, path, markdown, onSave, onCancel }: DocumentEditorProps) {
  const id = useId();
  const [loaded, setLoaded] = useState<Loaded>({ state: 'loading' });
  const [draft, setDraft] = useState('');
  const [tab, setTab] = useState<'source' | 'preview'>('source');
  const [saving, setSaving] = useState(false);
  const [conflict, setConflict] = useState<{ message: string; currentSha256: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  const areaRef = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    setLoaded({ state: 'loading' });
    readRaw(url, ctrl.signal).then(
      (r) => {
        setLoaded({ state: 'ready', ...r });
        setDraft(r.text);
        setConflict(null);
        setTimeout(() => areaRef.current?.focus(), 0);
      },
      (e: Error) => {
        if (e?.name !== 'AbortError') setLoaded({ state: 'error', message: e?.message || 'Could not open the document.' });
      },
    );
    return () => ctrl.abort();
  }, [url, reload]);

  const save = useCallback(
    async (over?: string | null) => {
      if (loaded.state !== 'ready' || saving) return;
      setSaving(true);
      setError(null);
      try {
        await onSave(draft, over === undefined ? loaded.sha : (over ?? undefined));
      } catch (e) {
        if (e instanceof ConflictError) setConflict({ message: e.message, currentSha256: e.currentSha256 });
        else setError((e as Error)?.message || 'The document could not be saved.');
        setSaving(false);
      }
    },
    [draft, loaded, onSave, saving],
  );

  if (loaded.state === 'loading') {
    return (
      <p className="msg-pending">
        <Spinner /> Opening {path}…
      </p>
    );
  }
  if (loaded.state === 'error') return <p className="notice notice-error">{loaded.message}</p>;

  const changed = draft !== loaded.text;
  return (
    <div className="doc-editor" data-testid="document-editor">
      {markdown ? (
        <div className="doc-editor-tabs" role="group" aria-label="View">
          <button type="button" className="button doc-editor-tab" aria-pressed={tab === 'source'} onClick={() => setTab('source')}>
            Source
          </button>
          <button type="button" className="button doc-editor-tab" aria-pressed={tab === 'preview'} onClick={() => setTab('preview')} data-testid="document-preview-tab">
            Preview
          </button>
        </div>
      ) : null}
      {tab === 'source' || !markdown ? (
        <>
          <label htmlFor={`${id}-src`} className="visually-hidden">
            Source of {path}
          </label>
          <textarea
            id={`${id}-src`}
            ref={areaRef}
            className="doc-editor-source"
            value={draft}
            spellCheck
            readOnly={saving}
            onChange={(e) => setDraft(e.target.value)}
            data-testid="document-source"
          />
        </>
      ) : (
        <div className="doc-editor-preview" data-testid="document-preview">
          <Markdown text={draft} />
        </div>
      )}
      {conflict ? (
        <div className="notice notice-warn" role="alert" data-testid="document-conflict">
          <p>Someone changed this document since you opened it; your save was not made.</p>
          <div className="notice-actions">
            <button type="button" className="button" onClick={() => setReload((r) => r + 1)}>
              Load their version
            </button>
            <button type="button" className="button" onClick={() => void save(conflict.currentSha256)}>
              Save mine over it
            </button>
          </div>
        </div>
      ) : null}
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : null}
      <div className="doc-editor-actions">
        <button type="button" className="button" onClick={onCancel} disabled={saving}>
          Cancel
        </button>
        <button type="button" className="button button-primary" onClick={() => changed && void save()} aria-disabled={saving || !changed || undefined} data-testid="document-save">
          {saving ? 'Saving…' : 'Save'}
        </button>
      </div>
    </div>
  );
}

'use client';

import { useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { diffLines } from 'diff';
import type { AgentSummary } from '@/types/api';
import { ApiError, ConflictError, sha256Hex, type LastChange } from '../_lib/api';
import { dateTime, relativeTime } from '../_lib/format';
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
  /** Told whenever the draft starts or stops differing from what was opened (or loaded since). */
  onDirtyChange?: (dirty: boolean) => void;
  /** To name the agent that made a conflicting change. */
  agents?: AgentSummary[];
}

type Loaded = { state: 'loading' } | { state: 'ready'; text: string; sha: string | undefined } | { state: 'error'; message: string };

async function readRaw(url: string, signal?: AbortSignal): Promise<{ text: string; sha: string | undefined }> {
  const res = await fetch(url, { signal, cache: 'no-store' });
  if (!res.ok) throw new ApiError(`Could not open the document (${res.status}).`, 'E_HTTP', res.status);
  const bytes = await res.arrayBuffer();
  const sha = res.headers.get('x-content-sha256') ?? (await sha256Hex(bytes));
  return { text: new TextDecoder().decode(bytes), sha: sha ?? undefined };
}

/** "Grace, 2 minutes ago", "Winston (the architect agent) for Grace, …": who made the change a save collided with. */
export function changedByText(change: LastChange | null, agents: AgentSummary[] = []): string {
  if (!change) return 'Someone (outside this app)';
  const agent = change.agentId ? (agents.find((a) => a.id === change.agentId)?.name ?? change.agentId) : null;
  if (agent) return change.person ? `${agent} (an agent, in ${change.person}’s conversation)` : `${agent} (an agent)`;
  return change.person ?? 'Someone';
}

/** A part of the two texts: the same in both, or a place where they differ. */
export type MergePart = { kind: 'same'; text: string } | { kind: 'change'; theirs: string; mine: string };
export type Take = 'theirs' | 'mine' | 'both';

/** Their text and the draft as runs of lines in common and places that differ (each place once). */
export function mergeParts(theirs: string, mine: string): MergePart[] {
  const parts: MergePart[] = [];
  for (const c of diffLines(theirs, mine)) {
    if (!c.added && !c.removed) {
      parts.push({ kind: 'same', text: c.value });
      continue;
    }
    let last = parts[parts.length - 1];
    if (!last || last.kind !== 'change') {
      last = { kind: 'change', theirs: '', mine: '' };
      parts.push(last);
    }
    if (c.removed) last.theirs += c.value;
    else last.mine += c.value;
  }
  return parts;
}

const taken = (p: Extract<MergePart, { kind: 'change' }>, t: Take) => (t === 'theirs' ? p.theirs : t === 'mine' ? p.mine : p.theirs + p.mine);

/** The text made of their version with the places taken from the draft where chosen. */
export function composeMerge(parts: MergePart[], takes: Record<number, Take>): string {
  return parts.map((p, i) => (p.kind === 'same' ? p.text : taken(p, takes[i] ?? 'theirs'))).join('');
}

interface Merge {
  theirs: string;
  mine: string;
  parts: MergePart[];
  takes: Record<number, Take>;
  note: string | null;
}

/**
 * Edits a document's source, with a preview, and saves it only over the content it was opened
 * from: when someone (a person or an agent) changed it meanwhile, the save is refused, the notice
 * names who and when, and their version loads beside the draft, which stays on screen to take
 * lines from; nothing typed is dropped without the person choosing so.
 */
export function DocumentEditor({ url, path, markdown, onSave, onCancel, onDirtyChange, agents }: DocumentEditorProps) {
  const id = useId();
  const [loaded, setLoaded] = useState<Loaded>({ state: 'loading' });
  const [draft, setDraft] = useState('');
  const [tab, setTab] = useState<'source' | 'preview'>('source');
  const [saving, setSaving] = useState(false);
  const [conflict, setConflict] = useState<{ message: string; currentSha256: string | null; lastChange: LastChange | null } | null>(null);
  const [merge, setMerge] = useState<Merge | null>(null);
  const [loadingTheirs, setLoadingTheirs] = useState(false);
  const [error, setError] = useState<string | null>(null);
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
  }, [url]);

  // Unsaved: the draft differs from what was opened, or a merge still holds a draft not taken.
  const dirty = loaded.state === 'ready' && (draft !== loaded.text || (merge !== null && merge.mine !== draft));
  useEffect(() => {
    onDirtyChange?.(dirty);
  }, [dirty, onDirtyChange]);
  useEffect(() => () => onDirtyChange?.(false), [onDirtyChange]);
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = '';
    };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  const save = useCallback(
    async (over?: string | null) => {
      if (loaded.state !== 'ready' || saving) return;
      setSaving(true);
      setError(null);
      try {
        await onSave(draft, over === undefined ? loaded.sha : (over ?? undefined));
      } catch (e) {
        if (e instanceof ConflictError) setConflict({ message: e.message, currentSha256: e.currentSha256, lastChange: e.lastChange });
        else setError((e as Error)?.message || 'The document could not be saved.');
        setSaving(false);
      }
    },
    [draft, loaded, onSave, saving],
  );

  // Their version becomes what the editor saves over; the draft stays beside it.
  const loadTheirs = async () => {
    setLoadingTheirs(true);
    setError(null);
    try {
      const theirs = await readRaw(url);
      const mine = draft;
      setLoaded({ state: 'ready', ...theirs });
      setDraft(theirs.text);
      setMerge({ theirs: theirs.text, mine, parts: mergeParts(theirs.text, mine), takes: {}, note: null });
      setConflict(null);
    } catch (e) {
      setError((e as Error)?.message || 'Could not load their version.');
    } finally {
      setLoadingTheirs(false);
    }
  };

  const take = (index: number, t: Take) => {
    if (!merge) return;
    const part = merge.parts[index];
    if (part.kind !== 'change') return;
    const takes = { ...merge.takes, [index]: t };
    const before = composeMerge(merge.parts, merge.takes);
    if (draft === before) {
      setDraft(composeMerge(merge.parts, takes));
      setMerge({ ...merge, takes, note: null });
      return;
    }
    // The editor was changed by hand since: swap just this place, where it is found once.
    const from = taken(part, merge.takes[index] ?? 'theirs');
    const to = taken(part, t);
    const at = from ? draft.indexOf(from) : -1;
    if (from && at >= 0 && draft.indexOf(from, at + 1) < 0) {
      setDraft(draft.slice(0, at) + to + draft.slice(at + from.length));
      setMerge({ ...merge, takes, note: null });
    } else {
      setMerge({ ...merge, note: 'That place was changed by hand in the editor; copy the lines from your draft below instead.' });
    }
  };

  const changes = useMemo(() => (merge ? merge.parts.flatMap((p, i) => (p.kind === 'change' ? [{ part: p, index: i }] : [])) : []), [merge]);

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
          <p>
            <strong data-testid="conflict-author">{changedByText(conflict.lastChange, agents)}</strong> changed this document
            {conflict.lastChange ? (
              <>
                {' '}
                <time dateTime={conflict.lastChange.at} title={dateTime(conflict.lastChange.at)}>
                  {relativeTime(conflict.lastChange.at)}
                </time>
                {' ('}
                {dateTime(conflict.lastChange.at)})
              </>
            ) : null}{' '}
            since you opened it; your save was not made. Your draft is still here.
          </p>
          <div className="notice-actions">
            <button type="button" className="button" onClick={() => void loadTheirs()} disabled={loadingTheirs}>
              Load their version
            </button>
            <button type="button" className="button" onClick={() => void save(conflict.currentSha256)}>
              Save mine over it
            </button>
          </div>
        </div>
      ) : null}
      {merge ? (
        <section className="doc-merge" aria-labelledby={`${id}-mt`} data-testid="document-merge">
          <h3 id={`${id}-mt`} className="doc-merge-title">
            Your draft beside their version
          </h3>
          <p className="doc-merge-lead">
            The editor now holds their version. Take the places you want from your draft; nothing is saved until you press Save.
          </p>
          {merge.note ? (
            <p className="notice notice-info" role="status">
              {merge.note}
            </p>
          ) : null}
          {changes.length === 0 ? <p className="doc-merge-lead">Your draft and their version are the same.</p> : null}
          <ol className="doc-merge-list">
            {changes.map(({ part, index }, n) => {
              const current = merge.takes[index] ?? 'theirs';
              return (
                <li key={index} className="doc-merge-item" data-testid="merge-change">
                  <div className="doc-merge-sides">
                    <div className="doc-merge-side">
                      <span className="doc-merge-label">Theirs</span>
                      <pre className="diff">
                        {part.theirs ? <span className="diff-del">{part.theirs.replace(/\n$/, '')}</span> : <span className="doc-merge-empty">(nothing)</span>}
                      </pre>
                    </div>
                    <div className="doc-merge-side">
                      <span className="doc-merge-label">Yours</span>
                      <pre className="diff" data-testid="merge-mine">
                        {part.mine ? <span className="diff-add">{part.mine.replace(/\n$/, '')}</span> : <span className="doc-merge-empty">(nothing)</span>}
                      </pre>
                    </div>
                  </div>
                  <div className="doc-merge-actions" role="group" aria-label={`Change ${n + 1} of ${changes.length}`}>
                    <button type="button" className="button" aria-pressed={current === 'theirs'} onClick={() => take(index, 'theirs')}>
                      Keep theirs
                    </button>
                    <button type="button" className="button" aria-pressed={current === 'mine'} onClick={() => take(index, 'mine')} data-testid="merge-take-mine">
                      Take mine
                    </button>
                    <button type="button" className="button" aria-pressed={current === 'both'} onClick={() => take(index, 'both')}>
                      Keep both
                    </button>
                  </div>
                </li>
              );
            })}
          </ol>
          <div className="notice-actions">
            <button type="button" className="button" onClick={() => setDraft(merge.mine)} data-testid="merge-use-draft">
              Use my whole draft
            </button>
          </div>
          <details className="doc-merge-draft">
            <summary>Your whole draft</summary>
            <pre className="viewer-pre" data-testid="merge-draft">
              {merge.mine}
            </pre>
          </details>
        </section>
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
        <button type="button" className="button button-primary" onClick={() => (changed || merge) && void save()} aria-disabled={saving || !(changed || merge) || undefined} data-testid="document-save">
          {saving ? 'Saving…' : 'Save'}
        </button>
      </div>
    </div>
  );
}

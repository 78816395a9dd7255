'use client';

import { useCallback, useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { modalKeys } from '../_lib/focus';
import { useEscape } from '../_lib/escape';
import { relativeTime } from '../_lib/format';
import { isActive, RUN_STATUS_WORDS, runsApi, type ChatMessageView, type RunItem } from '../_lib/runs';
import { Markdown } from './Markdown';
import { CloseIcon, Spinner } from './icons';

/** While a run is queued or running, the list is asked for again this often. */
const POLL_MS = 2000;

/**
 * The project's headless runs (started from CI or scripts with POST /api/runs), beside its
 * conversations; opening one shows its conversation read-only with the run's status and result.
 */
export function RunsList({ projectId, pollMs = POLL_MS, openDocument }: { projectId: string; pollMs?: number; openDocument?: OpenDocument }) {
  const [runs, setRuns] = useState<RunItem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<RunItem | null>(null);
  const headingId = useId();

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setRuns(await runsApi.list(projectId, signal));
        setError(null);
      } catch (e) {
        if ((e as Error).name !== 'AbortError') setError(`Runs could not be loaded: ${(e as Error).message}`);
      }
    },
    [projectId],
  );

  useEffect(() => {
    const controller = new AbortController();
    void load(controller.signal);
    return () => controller.abort();
  }, [load]);

  const active = runs.some((r) => isActive(r.status));
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => void load(), pollMs);
    return () => clearInterval(t);
  }, [active, load, pollMs]);

  if (!runs.length && !error) return null;
  return (
    <section className="conv-group" aria-labelledby={headingId} data-testid="runs-list">
      <h3 id={headingId} className="conv-group-title">
        Headless runs
      </h3>
      {error ? (
        <p className="sidebar-error" role="alert">
          {error}
        </p>
      ) : null}
      <ul className="conv-list">
        {runs.map((r) => (
          <li key={r.id} className="conv" data-testid="run-item" data-status={r.status}>
            <button type="button" className="conv-open" onClick={() => setOpen(r)}>
              <span className="conv-text">
                <span className="conv-title">
                  {r.skill}
                  {r.intent ? ` · ${r.intent}` : ''}
                </span>
                <span className="conv-meta">
                  <span className={`conv-status conv-status-${r.status}`} data-testid="run-status">
                    {RUN_STATUS_WORDS[r.status]}
                  </span>
                  {` · ${relativeTime(r.createdAt)}`}
                </span>
              </span>
            </button>
          </li>
        ))}
      </ul>
      {open ? <RunDialog runId={open.id} initial={open} onClose={() => setOpen(null)} openDocument={openDocument} /> : null}
    </section>
  );
}

function textOf(m: ChatMessageView): string {
  return m.content || (m.functionCalls?.length ? m.functionCalls.map((c) => `→ ${c.name}`).join('\n') : '');
}

/** For a file a run wrote (relative to the project root): what opens it in the page's document viewer, or null where it cannot. */
export type OpenDocument = (path: string) => (() => void) | null;

/** One run: its status and result, the files it wrote, and its conversation, read-only. */
function RunDialog({ runId, initial, onClose, openDocument }: { runId: string; initial: RunItem; onClose: () => void; openDocument?: OpenDocument }) {
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const closeRef = useRef<HTMLButtonElement>(null);
  const [run, setRun] = useState<RunItem>(initial);
  const [messages, setMessages] = useState<ChatMessageView[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null;
    closeRef.current?.focus();
    return () => previous?.focus?.();
  }, []);

  useEffect(() => {
    const controller = new AbortController();
    const load = async () => {
      try {
        const fresh = await runsApi.get(runId, controller.signal);
        setRun(fresh);
        if (fresh.conversationId) setMessages((await runsApi.conversation(fresh.conversationId, controller.signal)).messages);
        else setMessages([]);
      } catch (e) {
        if ((e as Error).name !== 'AbortError') setError((e as Error).message);
      }
    };
    void load();
    const t = setInterval(() => void (isActive(run.status) ? load() : undefined), POLL_MS);
    return () => {
      controller.abort();
      clearInterval(t);
    };
  }, [runId, run.status]);

  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, onClose);
  useEscape(true, onClose);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div ref={boxRef} className="modal modal-viewer" role="dialog" aria-modal="true" aria-labelledby={`${id}-t`} onKeyDown={onKeyDown} data-testid="run-dialog">
        <div className="viewer-head">
          <h2 id={`${id}-t`} className="viewer-title">
            {run.skill} · <span data-testid="run-dialog-status">{RUN_STATUS_WORDS[run.status]}</span>
          </h2>
          <button ref={closeRef} type="button" className="icon-button" aria-label="Close run" onClick={onClose}>
            <CloseIcon />
          </button>
        </div>
        <div style={{ overflow: 'auto', padding: '12px 16px', display: 'flex', flexDirection: 'column', gap: 12 }}>
          {error ? (
            <p className="sidebar-error" role="alert">
              {error}
            </p>
          ) : null}
          {run.error ? (
            <p role="status">
              <strong>{run.error.code}</strong>: {run.error.message}
            </p>
          ) : null}
          {run.result ? (
            <section aria-label="Result">
              <h3 className="conv-group-title">Result</h3>
              <pre tabIndex={0} aria-label="Result JSON" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere', margin: 0 }} data-testid="run-result">
                {JSON.stringify(run.result, null, 2)}
              </pre>
            </section>
          ) : null}
          {run.artifacts.length ? (
            <section aria-label="Files written">
              <h3 className="conv-group-title">Files written</h3>
              <ul>
                {run.artifacts.map((a) => {
                  const open = openDocument?.(a.path) ?? null;
                  return (
                    <li key={a.path}>
                      {open ? (
                        <button
                          type="button"
                          className="link-button"
                          data-testid="run-artifact"
                          onClick={() => {
                            onClose();
                            open();
                          }}
                        >
                          <code>{a.path}</code>
                        </button>
                      ) : (
                        <code>{a.path}</code>
                      )}{' '}
                      · version {a.version.slice(0, 8)}
                    </li>
                  );
                })}
              </ul>
            </section>
          ) : null}
          <section aria-label="Conversation (read-only)">
            <h3 className="conv-group-title">Conversation (read-only)</h3>
            {messages === null ? (
              <p className="sidebar-empty">
                <Spinner /> Loading…
              </p>
            ) : messages.length === 0 ? (
              <p className="sidebar-empty">Nothing yet.</p>
            ) : (
              messages.map((m) => (
                <article key={m.id} aria-label={m.role === 'user' ? 'Sent to the agent' : 'The agent'} data-testid="run-message">
                  {/* Not a heading: the messages' own markdown headings follow, and their levels must not jump. */}
                  <p className="conv-group-title">{m.role === 'user' ? 'Sent' : 'Agent'}</p>
                  <Markdown text={textOf(m)} />
                </article>
              ))
            )}
          </section>
        </div>
      </div>
    </div>
  );
}

'use client';

import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { ApiError } from '../_lib/api';
import { modalKeys } from '../_lib/focus';
import { WORKSPACE_NAME_RULE, setupRunning, workspaceNameProblem, workspacesApi, type WorkspaceView } from '../_lib/workspaces';
import { Spinner } from './icons';

/** How often the workspaces are read again while the chosen one's setup runs. */
const SETUP_POLL_MS = 2000;

/** Chooses the workspace a new conversation runs in: an open one, or a new one made here. */
export function StartInWorkspaceDialog({
  projectId,
  agentName,
  onCancel,
  onChosen,
}: {
  projectId: string;
  agentName: string;
  onCancel: () => void;
  onChosen: (w: WorkspaceView) => void;
}) {
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const [list, setList] = useState<WorkspaceView[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [choice, setChoice] = useState<string>('');
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null;
    boxRef.current?.querySelector<HTMLElement>('input, select, button')?.focus();
    return () => previous?.focus?.();
  }, []);

  useEffect(() => {
    const ac = new AbortController();
    workspacesApi.list(projectId, ac.signal).then(
      (l) => {
        const open = l.filter((w) => w.status === 'open');
        setList(open);
        setChoice(open.find((w) => !setupRunning(w))?.id ?? open[0]?.id ?? '');
      },
      (e: Error) => {
        if (e.name === 'AbortError') return;
        setList([]);
        setLoadError(e instanceof ApiError && e.code === 'E_BUILD_DISABLED' ? 'Build is off for this project: its owner enables it in the project’s Build section.' : e.message);
      },
    );
    return () => ac.abort();
  }, [projectId]);

  // A turn waits for its workspace's setup: while the chosen one's runs, the list is read again.
  const chosen = list?.find((x) => x.id === choice) ?? null;
  const waiting = setupRunning(chosen);
  useEffect(() => {
    if (!waiting) return;
    const ac = new AbortController();
    const t = setInterval(() => {
      workspacesApi.list(projectId, ac.signal).then(
        (l) => setList(l.filter((w) => w.status === 'open')),
        () => undefined,
      );
    }, SETUP_POLL_MS);
    return () => {
      ac.abort();
      clearInterval(t);
    };
  }, [waiting, projectId]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (choice) {
      if (chosen && !setupRunning(chosen)) onChosen(chosen);
      return;
    }
    const problem = workspaceNameProblem(name);
    if (problem) {
      setError(problem);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const made = await workspacesApi.create(projectId, name);
      if (!setupRunning(made)) {
        onChosen(made);
        return;
      }
      // Its setup line runs first: the dialog stays, with the new workspace chosen, until it ends.
      setList((l) => [made, ...(l ?? []).filter((x) => x.id !== made.id)]);
      setChoice(made.id);
      setName('');
      setBusy(false);
    } catch (err) {
      const ae = err instanceof ApiError ? err : null;
      setError(ae?.status === 409 && ae.code === 'E_CONFLICT' ? `The name “${name}” is taken. Choose another name.` : (err as Error).message);
      setBusy(false);
    }
  };

  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, onCancel);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && !busy && onCancel()}>
      <div ref={boxRef} className="modal modal-small" role="dialog" aria-modal="true" aria-labelledby={`${id}-t`} onKeyDown={onKeyDown} data-testid="start-in-workspace-dialog">
        <h2 id={`${id}-t`}>Start {agentName} in a workspace</h2>
        <p className="build-help">The conversation works in the workspace’s own checkout and branch; the project folder changes only when you merge.</p>
        {list === null && !loadError ? (
          <p role="status">
            <Spinner /> Loading workspaces…
          </p>
        ) : null}
        {loadError ? <p role="alert">{loadError}</p> : null}
        {list !== null && !loadError ? (
          <form onSubmit={submit}>
            <fieldset className="build-choice">
              <legend>Workspace</legend>
              {list.map((w) => (
                <label key={w.id} className="build-check">
                  <input type="radio" name={`${id}-ws`} value={w.id} checked={choice === w.id} onChange={() => setChoice(w.id)} /> {w.name} (<code>{w.branch}</code>)
                  {setupRunning(w) ? ' — setup running' : ''}
                </label>
              ))}
              <label className="build-check">
                <input type="radio" name={`${id}-ws`} value="" checked={choice === ''} onChange={() => setChoice('')} data-testid="start-new-workspace" /> A new workspace
              </label>
            </fieldset>
            {choice === '' ? (
              <label className="build-field">
                Name of the new workspace
                <input value={name} onChange={(e) => setName(e.target.value)} aria-describedby={`${id}-rule ${id}-err`} aria-invalid={!!error} spellCheck={false} autoComplete="off" data-testid="start-workspace-name" />
                <span id={`${id}-rule`} className="build-help">
                  {WORKSPACE_NAME_RULE}
                </span>
              </label>
            ) : null}
            <p id={`${id}-err`} className="build-error" role="alert">
              {error}
            </p>
            {waiting ? (
              <p id={`${id}-wait`} className="build-help" role="status" data-testid="start-in-workspace-wait">
                <Spinner /> {chosen?.name}’s setup line is still running: the agent can start once it ends.
              </p>
            ) : null}
            <div className="modal-actions">
              <button type="button" className="button" onClick={onCancel} disabled={busy}>
                Cancel
              </button>
              <button type="submit" className="button button-primary" disabled={busy || waiting} aria-describedby={waiting ? `${id}-wait` : undefined} data-testid="start-in-workspace-go">
                {busy ? <Spinner /> : null} Start
              </button>
            </div>
          </form>
        ) : (
          <div className="modal-actions">
            <button type="button" className="button" onClick={onCancel}>
              Close
            </button>
          </div>
        )}
      </div>
    </div>
  );
}

'use client';

import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { ProjectView } from '@/types/api';
import { ApiError } from '../_lib/api';
import { cloneProgressText, isCloneOnly, remotesApi, type CloneView } from '../_lib/remotes';
import { Spinner } from './icons';
import './remotes.css';

type Field = 'url' | 'branch' | 'token' | 'id';

export interface GitProjectFormProps {
  /** The clone is ready and holds a BMAD install: the project. */
  onReady: (project: ProjectView) => void;
  /** The clone is ready without a BMAD install: the dialog offers to install one into it. */
  onNeedsInstall: (id: string) => void;
  onBusy: (busy: boolean) => void;
  onCancel: () => void;
}

const POLL_MS = 700;

/** `https://host/team/my-app.git` → `my-app`, as the server names a project it clones. */
function idFromUrl(url: string): string {
  const last = url.trim().replace(/[?#].*$/, '').replace(/\/+$/, '').split(/[/:]/).pop() ?? '';
  return last.replace(/\.git$/, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64);
}

/**
 * "From a Git repository": URL, branch and token; the server answers at once and clones after, so
 * the form polls the project and shows git's own phase and percentage until it is ready or failed.
 * The token goes to the server once and is never shown again.
 */
export function GitProjectForm({ onReady, onNeedsInstall, onBusy, onCancel }: GitProjectFormProps) {
  const id = useId();
  const [values, setValues] = useState<Record<Field, string>>({ url: '', branch: '', token: '', id: '' });
  const [fieldErrors, setFieldErrors] = useState<Partial<Record<Field, string>>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [clone, setClone] = useState<CloneView | null>(null);
  const [busy, setBusyState] = useState(false);
  const inputs = useRef<Partial<Record<Field, HTMLInputElement | null>>>({});
  const alive = useRef(true);

  useEffect(() => {
    alive.current = true;
    inputs.current.url?.focus();
    return () => {
      alive.current = false;
    };
  }, []);

  const setBusy = (b: boolean) => {
    setBusyState(b);
    onBusy(b);
  };

  const showFieldError = (field: Field, message: string) => {
    setFieldErrors({ [field]: message });
    setTimeout(() => inputs.current[field]?.focus(), 0);
  };

  /** Polls the project until its clone is no longer running. */
  const follow = async (projectId: string) => {
    for (;;) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (!alive.current) return;
      let v;
      try {
        v = await remotesApi.projectOrClone(projectId);
      } catch (e) {
        if ((e as ApiError).code === 'E_NETWORK') continue;
        throw e;
      }
      if (!alive.current) return;
      const state = v.clone ?? null;
      if (state) setClone(state);
      if (state?.status === 'failed') {
        setBusy(false);
        setFormError(`The clone failed: ${state.message ?? 'git gave no reason.'}`);
        return;
      }
      if (state?.status === 'ready' || (!isCloneOnly(v) && !state)) {
        setBusy(false);
        if (isCloneOnly(v)) onNeedsInstall(projectId);
        else onReady(v);
        return;
      }
    }
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    setFormError(null);
    setFieldErrors({});
    const url = values.url.trim();
    if (!url) {
      showFieldError('url', 'Enter the repository’s URL.');
      return;
    }
    const projectId = values.id.trim() || idFromUrl(url);
    setBusy(true);
    setClone(null);
    try {
      const started = await remotesApi.clone({
        ...(values.id.trim() ? { id: values.id.trim() } : {}),
        git: { url, ...(values.branch.trim() ? { branch: values.branch.trim() } : {}), ...(values.token ? { token: values.token } : {}) },
      });
      // The token went to the server; it is not kept here.
      setValues((v) => ({ ...v, token: '' }));
      setClone(started.clone);
      await follow(started.id || projectId);
    } catch (err) {
      if (!alive.current) return;
      setBusy(false);
      const ae = err instanceof ApiError ? err : null;
      if (ae?.code === 'E_REMOTE_URL') showFieldError('url', ae.message);
      else if (ae?.code === 'E_REMOTE_AUTH') showFieldError('token', ae.message);
      else if (ae?.code === 'E_REMOTE_NOT_FOUND' && ae.field === 'branch') showFieldError('branch', ae.message);
      else if (ae?.code === 'E_PROJECT_EXISTS') showFieldError('id', `A project named “${projectId}” already exists. Give this one another name.`);
      else if (ae?.code === 'E_VALIDATION' && ae.field === 'id') showFieldError('id', ae.message);
      else setFormError(ae?.message ?? 'The repository could not be cloned.');
    }
  };

  const field = (key: Field, label: string, opts: { hint?: string; type?: string; placeholder?: string; autoComplete?: string; required?: boolean }) => {
    const error = fieldErrors[key];
    const describedBy = [opts.hint ? `${id}-${key}-hint` : '', error ? `${id}-${key}-error` : ''].filter(Boolean).join(' ');
    return (
      <div className="form-field">
        <label htmlFor={`${id}-${key}`}>{label}</label>
        <input
          ref={(el) => {
            inputs.current[key] = el;
          }}
          id={`${id}-${key}`}
          name={key}
          type={opts.type ?? 'text'}
          value={values[key]}
          onChange={(e) => setValues((v) => ({ ...v, [key]: e.target.value }))}
          placeholder={opts.placeholder}
          required={opts.required}
          autoComplete={opts.autoComplete ?? 'off'}
          spellCheck={false}
          aria-invalid={error ? true : undefined}
          aria-describedby={describedBy || undefined}
          readOnly={busy}
          data-testid={`git-${key}`}
        />
        {opts.hint ? (
          <p id={`${id}-${key}-hint`} className="form-hint">
            {opts.hint}
          </p>
        ) : null}
        {error ? (
          <p id={`${id}-${key}-error`} className="form-error" data-testid={`git-${key}-error`}>
            {error}
          </p>
        ) : null}
      </div>
    );
  };

  return (
    <form onSubmit={(e) => void submit(e)} noValidate data-testid="git-project-form">
      {field('url', 'Repository URL', { hint: 'https://… or git@host:team/app.git. The server clones it into the projects folder.', placeholder: 'https://github.com/team/app.git', required: true })}
      {field('branch', 'Branch (optional)', { hint: 'The base branch; empty: the repository’s default branch.' })}
      {field('token', 'Access token (optional)', { type: 'password', autoComplete: 'new-password', hint: 'Needed for a private repository. Stored encrypted on the server and never shown again.' })}
      {field('id', 'Project name (optional)', { hint: `Letters, digits, “.”, “_” or “-”; empty: the repository’s name${values.url.trim() ? ` (${idFromUrl(values.url) || '…'})` : ''}.` })}
      {formError ? (
        <p className="notice notice-error" role="alert" data-testid="git-error">
          {formError}
        </p>
      ) : null}
      <div className="form-status" role="status" aria-live="polite" data-testid="clone-progress">
        {busy ? (
          <>
            <Spinner /> {clone ? cloneProgressText(clone) : 'Asking the repository…'}
          </>
        ) : null}
      </div>
      {busy && clone ? (
        <progress className="clone-progress" max={100} value={clone.percent ?? undefined} aria-label="Clone progress">
          {clone.percent ?? ''}
        </progress>
      ) : null}
      <div className="modal-actions">
        <button type="button" className="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="submit" className="button button-primary" aria-disabled={busy || undefined} data-testid="git-clone">
          {busy ? 'Cloning…' : 'Clone repository'}
        </button>
      </div>
    </form>
  );
}

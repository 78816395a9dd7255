'use client';

import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import type { ProjectView } from '@/types/api';
import { ApiError, api } from '../_lib/api';
import { modalKeys } from '../_lib/focus';
import type { NewProjectInput } from '../_lib/types';
import { Spinner } from './icons';

type Field = 'name' | 'userName' | 'communicationLanguage' | 'documentLanguage';

const FIELDS: { key: Field; label: string; hint?: string; autoComplete?: string }[] = [
  { key: 'name', label: 'Project name', hint: 'Letters, digits, “.”, “_” or “-”; it also names the project’s folder.' },
  { key: 'userName', label: 'Your name (optional)', hint: 'How the agents address you.', autoComplete: 'name' },
  { key: 'communicationLanguage', label: 'Chat language (optional)', hint: 'The language agents talk to you in, e.g. English.' },
  { key: 'documentLanguage', label: 'Document language (optional)', hint: 'The language of the documents they write.' },
];

export interface NewProjectDialogProps {
  onCreated: (project: ProjectView) => void;
  onCancel: () => void;
}

/**
 * Creates a project through BMAD's installer. The install takes seconds and cannot be called off
 * on the server, so the dialog stays open (and says so) until it answers.
 */
export function NewProjectDialog({ onCreated, onCancel }: NewProjectDialogProps) {
  const id = useId();
  const boxRef = useRef<HTMLFormElement>(null);
  const inputs = useRef<Partial<Record<Field, HTMLInputElement | null>>>({});
  const [values, setValues] = useState<Record<Field, string>>({ name: '', userName: '', communicationLanguage: '', documentLanguage: '' });
  const [fieldErrors, setFieldErrors] = useState<Partial<Record<Field, string>>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const mounted = useRef(true);

  useEffect(() => {
    mounted.current = true;
    const previous = document.activeElement as HTMLElement | null;
    inputs.current.name?.focus();
    return () => {
      mounted.current = false;
      previous?.focus?.();
    };
  }, []);

  const showFieldError = (field: Field, message: string) => {
    setFieldErrors({ [field]: message });
    // After the render that marks it invalid, so the reader hears the message with the field.
    setTimeout(() => inputs.current[field]?.focus(), 0);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    setFormError(null);
    const name = values.name.trim();
    if (!name) {
      showFieldError('name', 'Enter a name for the project.');
      return;
    }
    setFieldErrors({});
    const input: NewProjectInput = { name };
    for (const f of ['userName', 'communicationLanguage', 'documentLanguage'] as const) {
      const v = values[f].trim();
      if (v) input[f] = v;
    }
    setBusy(true);
    try {
      const project = await api.createProject(input);
      if (mounted.current) onCreated(project);
    } catch (err) {
      if (!mounted.current) return;
      setBusy(false);
      const apiErr = err instanceof ApiError ? err : null;
      if (apiErr?.code === 'E_PROJECT_EXISTS') {
        showFieldError('name', `A project named “${name}” already exists. Choose another name.`);
      } else if (apiErr?.code === 'E_VALIDATION' && apiErr.field && FIELDS.some((f) => f.key === apiErr.field)) {
        showFieldError(apiErr.field as Field, apiErr.message);
      } else {
        setFormError(apiErr?.message ?? 'The project could not be created.');
      }
    }
  };

  const onKeyDown = (e: KeyboardEvent) =>
    modalKeys(e, boxRef.current, () => {
      if (!busy) onCancel();
    });

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && !busy && onCancel()}>
      <form
        ref={boxRef}
        className="modal modal-form"
        role="dialog"
        aria-modal="true"
        aria-labelledby={`${id}-t`}
        aria-busy={busy}
        onKeyDown={onKeyDown}
        onSubmit={(e) => void submit(e)}
        noValidate
        data-testid="new-project-dialog"
      >
        <h2 id={`${id}-t`}>New project</h2>
        <p className="form-lead">BMAD’s installer sets up the method in a new project folder. Its agents share the documents they write.</p>
        {FIELDS.map((f) => {
          const error = fieldErrors[f.key];
          const describedBy = [f.hint ? `${id}-${f.key}-hint` : '', error ? `${id}-${f.key}-error` : ''].filter(Boolean).join(' ');
          return (
            <div key={f.key} className="form-field">
              <label htmlFor={`${id}-${f.key}`}>{f.label}</label>
              <input
                ref={(el) => {
                  inputs.current[f.key] = el;
                }}
                id={`${id}-${f.key}`}
                name={f.key}
                value={values[f.key]}
                onChange={(e) => setValues((v) => ({ ...v, [f.key]: e.target.value }))}
                required={f.key === 'name'}
                maxLength={f.key === 'name' ? 64 : f.key === 'userName' ? 100 : 40}
                autoComplete={f.autoComplete ?? 'off'}
                spellCheck={false}
                aria-invalid={error ? true : undefined}
                aria-describedby={describedBy || undefined}
                readOnly={busy}
              />
              {f.hint ? (
                <p id={`${id}-${f.key}-hint`} className="form-hint">
                  {f.hint}
                </p>
              ) : null}
              {error ? (
                <p id={`${id}-${f.key}-error`} className="form-error" data-testid={`${f.key}-error`}>
                  {error}
                </p>
              ) : null}
            </div>
          );
        })}
        {formError ? (
          <p className="notice notice-error" role="alert">
            {formError}
          </p>
        ) : null}
        <p className="form-status" role="status" aria-live="polite">
          {busy ? (
            <>
              <Spinner /> Installing BMAD… this takes a few seconds.
            </>
          ) : null}
        </p>
        <div className="modal-actions">
          <button type="button" className="button" onClick={onCancel} disabled={busy}>
            Cancel
          </button>
          {/* Not disabled while busy: a disabled button would drop the keyboard focus it holds. */}
          <button type="submit" className="button button-primary" aria-disabled={busy || undefined}>
            {busy ? 'Creating…' : 'Create project'}
          </button>
        </div>
      </form>
    </div>
  );
}

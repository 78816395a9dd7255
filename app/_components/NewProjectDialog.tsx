'use client';

import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import type { InstallableReleaseView, ProjectView } from '@/types/api';
import { ApiError, api } from '../_lib/api';
import { modalKeys } from '../_lib/focus';
import { useEscape } from '../_lib/escape';
import type { NewProjectInput } from '../_lib/types';
import { Spinner } from './icons';
import { GitProjectForm } from './GitProjectForm';

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

/** Before the server lists its releases: the default it installs. */
const FALLBACK_RELEASE: InstallableReleaseView = { version: '6.12.0', default: true, tools: [{ id: 'claude-code', name: 'Claude Code', preferred: true }], modules: ['bmm'] };
const DEFAULT_TOOLS = ['claude-code'];

/**
 * Creates a project through BMAD's installer, with the release and the tools (IDE folders) the
 * person picks. The install takes seconds and cannot be called off on the server, so the dialog
 * stays open and shows the installer's steps as they happen until it answers.
 */
export function NewProjectDialog({ onCreated, onCancel }: NewProjectDialogProps) {
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const inputs = useRef<Partial<Record<Field, HTMLInputElement | null>>>({});
  const [values, setValues] = useState<Record<Field, string>>({ name: '', userName: '', communicationLanguage: '', documentLanguage: '' });
  const [fieldErrors, setFieldErrors] = useState<Partial<Record<Field, string>>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [releases, setReleases] = useState<InstallableReleaseView[]>([FALLBACK_RELEASE]);
  const [version, setVersion] = useState(FALLBACK_RELEASE.version);
  const [tools, setTools] = useState<string[]>(DEFAULT_TOOLS);
  const [steps, setSteps] = useState<string[]>([]);
  // Where the project comes from: BMAD's installer, or a Git repository cloned (then, without an install, given one).
  const [source, setSource] = useState<'install' | 'git'>('install');
  const [inClone, setInClone] = useState<string | null>(null);
  const mounted = useRef(true);

  useEffect(() => {
    const ctrl = new AbortController();
    api.installer(ctrl.signal).then(
      (list) => {
        if (!list.length) return;
        setReleases(list);
        setVersion((list.find((r) => r.default) ?? list[0]).version);
      },
      () => undefined,
    );
    return () => ctrl.abort();
  }, []);
  const release = releases.find((r) => r.version === version) ?? releases[0];
  // The installer's recommended tools first; the others behind "More tools".
  const preferred = release.tools.filter((t) => t.preferred || tools.includes(t.id));
  const others = release.tools.filter((t) => !preferred.includes(t));

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
    if (!tools.length) {
      setFieldErrors({});
      setFormError('Pick at least one tool: BMAD installs its skills into a tool’s folder.');
      return;
    }
    setFieldErrors({});
    const input: NewProjectInput = { name, bmadVersion: release.version, tools: tools.filter((t) => release.tools.some((x) => x.id === t)), ...(inClone ? { inClone: true } : {}) };
    for (const f of ['userName', 'communicationLanguage', 'documentLanguage'] as const) {
      const v = values[f].trim();
      if (v) input[f] = v;
    }
    setBusy(true);
    setSteps([]);
    try {
      const project = await api.createProjectWithSteps(input, (text) => {
        if (mounted.current) setSteps((list) => [...list, text]);
      });
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
  useEscape(true, () => {
    if (!busy) onCancel();
  });

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && !busy && onCancel()}>
      {/* The dialog is a box around the form: a form element may not take the dialog role. */}
      <div ref={boxRef} className="modal modal-form" role="dialog" aria-modal="true" aria-labelledby={`${id}-t`} aria-busy={busy} onKeyDown={onKeyDown} data-testid="new-project-dialog">
        <h2 id={`${id}-t`}>New project</h2>
        {inClone ? null : (
          <fieldset className="form-field project-source" disabled={busy}>
            <legend>Start from</legend>
            <label className="source-choice">
              <input type="radio" name={`${id}-source`} checked={source === 'install'} onChange={() => setSource('install')} data-testid="source-install" />
              <span className="source-dot" aria-hidden="true" /> A new folder (BMAD’s installer)
            </label>
            <label className="source-choice">
              <input type="radio" name={`${id}-source`} checked={source === 'git'} onChange={() => setSource('git')} data-testid="source-git" />
              <span className="source-dot" aria-hidden="true" /> A Git repository
            </label>
          </fieldset>
        )}
        {source === 'git' ? (
          <GitProjectForm
            onReady={onCreated}
            onNeedsInstall={(cloned) => {
              setInClone(cloned);
              setValues((v) => ({ ...v, name: cloned }));
              setSource('install');
            }}
            onBusy={setBusy}
            onCancel={onCancel}
          />
        ) : (
      <form onSubmit={(e) => void submit(e)} noValidate>
        <p className="form-lead" data-testid="install-lead">
          {inClone
            ? `The repository is cloned as “${inClone}” but holds no BMAD install. BMAD’s installer sets up the method in it, and the install is committed on its branch.`
            : 'BMAD’s installer sets up the method in a new project folder. Its agents share the documents they write.'}
        </p>
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
                readOnly={busy || (f.key === 'name' && !!inClone)}
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
        <div className="form-field">
          <label htmlFor={`${id}-version`}>BMAD version</label>
          <select id={`${id}-version`} value={version} disabled={busy} onChange={(e) => setVersion(e.target.value)} aria-describedby={`${id}-version-hint`} data-testid="bmad-version">
            {releases.map((r) => (
              <option key={r.version} value={r.version}>
                {r.version}
                {r.default ? ' (current)' : ''}
              </option>
            ))}
          </select>
          <p id={`${id}-version-hint`} className="form-hint">
            The current release installs the method as Agent Skills; 6.0.4 is for teams still on the older method.
          </p>
        </div>
        <fieldset className="form-field form-tools" disabled={busy}>
          <legend>Open it in</legend>
          <p className="form-hint">BMAD also writes its skills into these tools’ folders, so the project opens there too.</p>
          <ul className="tool-list">
            {preferred.map((t) => (
              <ToolChoice key={t.id} tool={t} checked={tools.includes(t.id)} onChange={(on) => setTools((list) => (on ? [...list, t.id] : list.filter((x) => x !== t.id)))} />
            ))}
          </ul>
          {others.length ? (
            <details className="tool-more">
              <summary>More tools ({others.length})</summary>
              <ul className="tool-list">
                {others.map((t) => (
                  <ToolChoice key={t.id} tool={t} checked={tools.includes(t.id)} onChange={(on) => setTools((list) => (on ? [...list, t.id] : list.filter((x) => x !== t.id)))} />
                ))}
              </ul>
            </details>
          ) : null}
        </fieldset>
        {formError ? (
          <p className="notice notice-error" role="alert">
            {formError}
          </p>
        ) : null}
        <p className="form-status" role="status" aria-live="polite">
          {busy ? (
            <>
              <Spinner /> Installing BMAD {release.version}… {steps.length ? steps[steps.length - 1] : 'this takes a few seconds.'}
            </>
          ) : null}
        </p>
        {steps.length ? (
          <ol className="install-steps" aria-label="Installer steps" data-testid="install-steps">
            {steps.map((step, i) => (
              <li key={i}>{step}</li>
            ))}
          </ol>
        ) : null}
        <div className="modal-actions">
          <button type="button" className="button" onClick={onCancel} disabled={busy}>
            Cancel
          </button>
          {/* Not disabled while busy: a disabled button would drop the keyboard focus it holds. */}
          <button type="submit" className="button button-primary" aria-disabled={busy || undefined}>
            {busy ? 'Creating…' : inClone ? 'Install BMAD' : 'Create project'}
          </button>
        </div>
      </form>
        )}
      </div>
    </div>
  );
}

function ToolChoice({ tool, checked, onChange }: { tool: { id: string; name: string }; checked: boolean; onChange: (on: boolean) => void }) {
  return (
    <li>
      <label className="tool-choice">
        <input type="checkbox" name="tools" value={tool.id} checked={checked} onChange={(e) => onChange(e.target.checked)} data-testid="tool-choice" />
        <span className="tool-box" aria-hidden="true" />
        <span>{tool.name}</span>
      </label>
    </li>
  );
}

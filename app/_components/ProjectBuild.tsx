'use client';

import './build.css';
import { useCallback, useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { ApiError } from '../_lib/api';
import { modalKeys } from '../_lib/focus';
import { relativeTime } from '../_lib/format';
import {
  WORKSPACE_NAME_RULE,
  personName,
  shortSha,
  workspaceNameProblem,
  workspacesApi,
  type BuildSettingsView,
  type RepositoryView,
  type WorkspaceView,
  workspaceStateText,
} from '../_lib/workspaces';
import { WorkspacePanel } from './WorkspacePanel';
import { RemoteSettings } from './RemoteSettings';
import { PlusIcon, Spinner } from './icons';

/** The repository line: branch, head and whether the checkout has uncommitted changes. */
export function RepositoryLine({ repository }: { repository: RepositoryView | null | undefined }) {
  if (repository === undefined) return null;
  if (repository === null) {
    return (
      <p className="build-repo" data-testid="build-repository">
        This project folder is not a git repository, so it has no workspaces. Make it one (<code>git init</code> and a first commit) to build in
        workspaces.
      </p>
    );
  }
  return (
    <p className="build-repo" data-testid="build-repository">
      Git repository: {repository.branch ? (
        <>
          branch <code>{repository.branch}</code>
        </>
      ) : (
        'detached HEAD'
      )}
      {repository.head ? (
        <>
          {' '}
          at <code>{shortSha(repository.head)}</code>
        </>
      ) : (
        ' (no commit yet)'
      )}
      , {repository.clean ? 'clean' : 'with uncommitted changes (dirty)'}.
    </p>
  );
}

const STATUS_WORDS: Record<WorkspaceView['status'], string> = { open: 'open', merged: 'merged', discarded: 'discarded', closed: 'closed upstream' };

/** A list item's setup in a few words (the list carries no output: the workspace's page shows it). */
function setupWords(w: WorkspaceView): string | null {
  const s = w.setup;
  if (!s) return null;
  if (s.status === 'running') return 'setup running';
  if (s.status === 'failed') return `setup failed${typeof s.exitCode === 'number' ? ` (exit code ${s.exitCode})` : ''}`;
  return null;
}

/** How often the list is read again while a workspace's setup runs. */
const LIST_POLL_MS = 2000;

/** Key/value rows of the build's environment variables, edited as a list. */
function EnvRows({ rows, onChange, disabled }: { rows: [string, string][]; onChange: (rows: [string, string][]) => void; disabled: boolean }) {
  return (
    <fieldset className="build-env" disabled={disabled}>
      <legend>Environment variables for commands (not secrets: models and logs see them)</legend>
      {rows.map(([k, v], i) => (
        <div key={i} className="build-env-row">
          <label>
            <span className="visually-hidden">Name of variable {i + 1}</span>
            <input value={k} placeholder="NAME" onChange={(e) => onChange(rows.map((r, j) => (j === i ? [e.target.value, r[1]] : r)))} spellCheck={false} />
          </label>
          <label>
            <span className="visually-hidden">Value of variable {i + 1}</span>
            <input value={v} placeholder="value" onChange={(e) => onChange(rows.map((r, j) => (j === i ? [r[0], e.target.value] : r)))} spellCheck={false} />
          </label>
          <button type="button" className="button button-small" onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            Remove<span className="visually-hidden"> variable {k || i + 1}</span>
          </button>
        </div>
      ))}
      <button type="button" className="button button-small" onClick={() => onChange([...rows, ['', '']])}>
        <PlusIcon /> Add a variable
      </button>
    </fieldset>
  );
}

/** Fields whose error shows under the field itself. */
const INLINE_FIELDS = ['baseBranch', 'setup', 'test', 'appendOnly'];

/** The build settings: read for everyone who sees them, a form for whoever may change them. */
export function BuildSettingsSection({ projectId, repository, canEdit = true, onChange }: { projectId: string; repository?: RepositoryView | null; canEdit?: boolean; onChange?: (b: BuildSettingsView) => void }) {
  const id = useId();
  const [build, setBuild] = useState<BuildSettingsView | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const [form, setForm] = useState<{ enabled: boolean; baseBranch: string; setup: string; env: [string, string][]; test: string; appendOnly: string }>({
    enabled: false,
    baseBranch: '',
    setup: '',
    env: [],
    test: '',
    appendOnly: '',
  });
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<{ message: string; field?: string } | null>(null);
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;

  useEffect(() => {
    const ac = new AbortController();
    setBuild(null);
    setLoadError(null);
    workspacesApi.build(projectId, ac.signal).then(
      (b) => {
        setBuild(b);
        onChangeRef.current?.(b);
      },
      (e: Error) => {
        if (e.name !== 'AbortError') setLoadError(e.message);
      },
    );
    return () => ac.abort();
  }, [projectId]);

  const startEdit = () => {
    if (!build) return;
    setForm({
      enabled: build.enabled,
      baseBranch: build.baseBranch ?? '',
      setup: build.setup ?? '',
      env: Object.entries(build.env ?? {}),
      test: build.test ?? '',
      appendOnly: (build.appendOnly ?? []).join('\n'),
    });
    setSaveError(null);
    setEditing(true);
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    const names = form.env.map(([k]) => k.trim()).filter(Boolean);
    if (new Set(names).size !== names.length) {
      setSaveError({ message: 'Two variables have the same name.', field: 'env' });
      return;
    }
    setSaving(true);
    setSaveError(null);
    try {
      const env = Object.fromEntries(form.env.filter(([k]) => k.trim()).map(([k, v]) => [k.trim(), v]));
      const next = await workspacesApi.saveBuild(projectId, {
        enabled: form.enabled,
        baseBranch: form.baseBranch.trim() || null,
        setup: form.setup.trim() || null,
        env,
        test: form.test.trim() || null,
        appendOnly: form.appendOnly
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean),
      });
      setBuild(next);
      onChangeRef.current?.(next);
      setEditing(false);
    } catch (err) {
      const ae = err instanceof ApiError ? err : null;
      const message =
        ae && (ae.status === 403 || ae.code === 'E_FORBIDDEN')
          ? 'Only the project’s owner or an admin can change the build settings.'
          : (err as Error).message;
      setSaveError({ message, ...(ae?.field ? { field: ae.field } : {}) });
    } finally {
      setSaving(false);
    }
  };

  if (loadError) {
    return (
      <p className="build-error" role="alert">
        Could not read the build settings: {loadError}
      </p>
    );
  }
  if (!build) {
    return (
      <p role="status">
        <Spinner /> Reading the build settings…
      </p>
    );
  }
  const fieldError = (f: string) => (saveError?.field === f ? saveError.message : null);
  if (editing) {
    return (
      <form className="build-form" onSubmit={save} aria-labelledby={`${id}-h`} data-testid="build-form">
        <h3 id={`${id}-h`} className="visually-hidden">
          Change the build settings
        </h3>
        <label className="build-check">
          <input type="checkbox" checked={form.enabled} onChange={(e) => setForm((f) => ({ ...f, enabled: e.target.checked }))} data-testid="build-enabled" /> Build enabled: agents may work in workspaces and
          run commands there
        </label>
        <label className="build-field">
          Base branch
          <input
            value={form.baseBranch}
            onChange={(e) => setForm((f) => ({ ...f, baseBranch: e.target.value }))}
            placeholder={repository?.branch ?? 'the branch checked out'}
            aria-describedby={`${id}-base-help`}
            aria-invalid={!!fieldError('baseBranch')}
            spellCheck={false}
            data-testid="build-base"
          />
          <span id={`${id}-base-help`} className="build-help">
            Workspaces branch from it and merge into it. Empty: the branch the project folder has checked out{repository?.branch ? ` (${repository.branch})` : ''}.
          </span>
          {fieldError('baseBranch') ? <span className="field-error">{fieldError('baseBranch')}</span> : null}
        </label>
        <label className="build-field">
          Setup line
          <input
            value={form.setup}
            onChange={(e) => setForm((f) => ({ ...f, setup: e.target.value }))}
            placeholder="npm ci"
            aria-describedby={`${id}-setup-help`}
            aria-invalid={!!fieldError('setup')}
            spellCheck={false}
            data-testid="build-setup"
          />
          <span id={`${id}-setup-help`} className="build-help">
            One shell line run once in each new workspace, with network (for example <code>npm ci</code> or <code>uv sync</code>). Commands agents run later have no network.
          </span>
          {fieldError('setup') ? <span className="field-error">{fieldError('setup')}</span> : null}
        </label>
        <label className="build-field">
          Test line
          <input
            value={form.test}
            onChange={(e) => setForm((f) => ({ ...f, test: e.target.value }))}
            placeholder="npm test"
            aria-describedby={`${id}-test-help`}
            aria-invalid={!!fieldError('test')}
            spellCheck={false}
            data-testid="build-test"
          />
          <span id={`${id}-test-help`} className="build-help">
            One shell line that runs the project’s tests in a workspace, without network; the autopilot runs it on the merged result before a story merges.
          </span>
          {fieldError('test') ? <span className="field-error">{fieldError('test')}</span> : null}
        </label>
        <label className="build-field">
          Append-only files
          <textarea
            value={form.appendOnly}
            onChange={(e) => setForm((f) => ({ ...f, appendOnly: e.target.value }))}
            placeholder="docs/decisions.md"
            rows={3}
            aria-describedby={`${id}-append-help`}
            aria-invalid={!!fieldError('appendOnly')}
            spellCheck={false}
            data-testid="build-append-only"
          />
          <span id={`${id}-append-help`} className="build-help">
            One path per line, relative to the project: files that parallel work only adds lines to. A merge keeps both sides’ lines instead of a conflict. The sprint’s <code>deferred-work.md</code> always is one.
          </span>
          {fieldError('appendOnly') ? <span className="field-error">{fieldError('appendOnly')}</span> : null}
        </label>
        <EnvRows rows={form.env} onChange={(env) => setForm((f) => ({ ...f, env }))} disabled={saving} />
        {saveError && (!saveError.field || !INLINE_FIELDS.includes(saveError.field)) ? (
          <p className="build-error" role="alert">
            {saveError.message}
          </p>
        ) : null}
        {saveError?.field && INLINE_FIELDS.includes(saveError.field) ? (
          <p className="visually-hidden" role="alert">
            {saveError.message}
          </p>
        ) : null}
        <div className="build-actions">
          <button type="button" className="button" onClick={() => setEditing(false)} disabled={saving}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={saving} data-testid="build-save">
            {saving ? <Spinner /> : null} Save build settings
          </button>
        </div>
      </form>
    );
  }
  const env = Object.entries(build.env ?? {});
  return (
    <div className="build-settings" data-testid="build-settings">
      <p data-testid="build-state">
        Build is <strong>{build.enabled ? 'enabled' : 'off'}</strong>
        {build.enabled ? '' : ': no agent can run commands or work in a workspace'}.
      </p>
      <dl className="build-dl">
        <dt>Base branch</dt>
        <dd>{build.baseBranch ? <code>{build.baseBranch}</code> : `the branch checked out${repository?.branch ? ` (${repository.branch})` : ''}`}</dd>
        <dt>Setup line</dt>
        <dd>{build.setup ? <code>{build.setup}</code> : 'none'}</dd>
        <dt>Test line</dt>
        <dd data-testid="build-test-shown">{build.test ? <code>{build.test}</code> : 'none'}</dd>
        <dt>Append-only files</dt>
        <dd data-testid="build-append-only-shown">
          {(build.appendOnly ?? []).length
            ? (build.appendOnly ?? []).map((p) => (
                <code key={p} className="build-env-var">
                  {p}
                </code>
              ))
            : 'deferred-work.md only'}
        </dd>
        <dt>Variables</dt>
        <dd>
          {env.length
            ? env.map(([k, v]) => (
                <code key={k} className="build-env-var">
                  {k}={v}
                </code>
              ))
            : 'none'}
        </dd>
      </dl>
      {canEdit ? (
        <button type="button" className="button button-small" onClick={startEdit} data-testid="build-edit">
          Change build settings
        </button>
      ) : (
        <p className="build-help">Only the project’s owner or an admin can change these.</p>
      )}
    </div>
  );
}

/** Asks for a new workspace's name; a taken name or a wrong one is said in words. */
export function NewWorkspaceDialog({ projectId, onCancel, onCreated }: { projectId: string; onCancel: () => void; onCreated: (w: WorkspaceView) => void }) {
  const id = useId();
  const boxRef = useRef<HTMLDivElement>(null);
  const inputRef = useRef<HTMLInputElement>(null);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null;
    inputRef.current?.focus();
    return () => previous?.focus?.();
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const problem = workspaceNameProblem(name);
    if (problem) {
      setError(problem);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onCreated(await workspacesApi.create(projectId, name));
    } catch (err) {
      const ae = err instanceof ApiError ? err : null;
      if (ae?.status === 409 && ae.code === 'E_CONFLICT') setError(`The name “${name}” is taken: another workspace (or the branch bmad/${name}) has it. Choose another name.`);
      else if (ae?.code === 'E_BUILD_DISABLED') setError('Build is off for this project: its owner has to enable it first.');
      else if (ae?.code === 'E_NOT_A_REPOSITORY') setError('The project folder is not a git repository.');
      else setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const onKeyDown = (e: KeyboardEvent) => modalKeys(e, boxRef.current, onCancel);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && !busy && onCancel()}>
      <div ref={boxRef} className="modal modal-small" role="dialog" aria-modal="true" aria-labelledby={`${id}-t`} onKeyDown={onKeyDown} data-testid="new-workspace-dialog">
        <h2 id={`${id}-t`}>New workspace</h2>
        <form onSubmit={submit}>
          <label className="build-field">
            Name
            <input
              ref={inputRef}
              value={name}
              onChange={(e) => setName(e.target.value)}
              aria-describedby={`${id}-rule ${id}-err`}
              aria-invalid={!!error}
              spellCheck={false}
              autoComplete="off"
              data-testid="workspace-name"
            />
          </label>
          <p id={`${id}-rule`} className="build-help">
            {WORKSPACE_NAME_RULE} The workspace is a checkout of its own; the project folder is untouched until you merge.
          </p>
          <p id={`${id}-err`} className="build-error" role="alert">
            {error}
          </p>
          {busy ? (
            <p role="status">
              <Spinner /> Making the workspace (a checkout of the base branch; its setup line runs after)…
            </p>
          ) : null}
          <div className="modal-actions">
            <button type="button" className="button" onClick={onCancel} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className="button button-primary" disabled={busy} data-testid="workspace-create">
              Create workspace
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}

export interface ProjectBuildProps {
  projectId: string;
  /** From GET /api/projects/:id: undefined while unknown, null when the folder is not a repository. */
  repository?: RepositoryView | null;
  /** false: the settings show read-only. */
  canEdit?: boolean;
  onOpenConversation?: (id: string) => void;
}

/** The project's Build section: its settings, its workspaces, and one workspace's page. */
export function ProjectBuild({ projectId, repository, canEdit, onOpenConversation }: ProjectBuildProps) {
  const headingId = useId();
  const [build, setBuild] = useState<BuildSettingsView | null>(null);
  const [list, setList] = useState<WorkspaceView[] | null>(null);
  const [listError, setListError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [openId, setOpenId] = useState<string | null>(null);
  const [version, setVersion] = useState(0);

  const enabled = !!build?.enabled;
  const isRepo = repository !== null;

  useEffect(() => {
    setOpenId(null);
    setList(null);
  }, [projectId]);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setList(await workspacesApi.list(projectId, signal));
        setListError(null);
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;
        setList([]);
        setListError((e as ApiError).code === 'E_BUILD_DISABLED' ? null : (e as Error).message);
      }
    },
    [projectId],
  );

  useEffect(() => {
    if (!enabled || !isRepo) return;
    const ac = new AbortController();
    void load(ac.signal);
    return () => ac.abort();
  }, [enabled, isRepo, load, version]);

  // A setup that runs ends by itself: the list is read again until none runs.
  const anySetupRunning = !openId && !!list?.some((w) => w.setup?.status === 'running');
  useEffect(() => {
    if (!anySetupRunning) return;
    const t = setInterval(() => void load(), LIST_POLL_MS);
    return () => clearInterval(t);
  }, [anySetupRunning, load]);

  return (
    <section className="build" aria-labelledby={headingId} data-testid="project-build">
      <h2 id={headingId} className="build-title">
        Build
      </h2>
      <RepositoryLine repository={repository} />
      {repository ? <RemoteSettings projectId={projectId} canEdit={!!canEdit} /> : null}
      <BuildSettingsSection projectId={projectId} repository={repository} canEdit={canEdit} onChange={setBuild} />
      {enabled && isRepo ? (
        openId ? (
          <WorkspacePanel
            projectId={projectId}
            workspaceId={openId}
            onBack={() => {
              setOpenId(null);
              setVersion((v) => v + 1);
            }}
            onChanged={() => setVersion((v) => v + 1)}
            onOpenConversation={onOpenConversation}
          />
        ) : (
          <div className="workspaces" data-testid="workspaces">
            <div className="workspaces-head">
              <h3>Workspaces</h3>
              <button type="button" className="button button-small" onClick={() => setCreating(true)} data-testid="new-workspace">
                <PlusIcon /> New workspace
              </button>
            </div>
            {list === null ? (
              <p role="status">
                <Spinner /> Loading workspaces…
              </p>
            ) : null}
            {listError ? <p role="alert">Could not load the workspaces: {listError}</p> : null}
            {list && list.length === 0 && !listError ? <p className="build-help">No workspace yet. Each one is a branch of its own, reviewed and merged here.</p> : null}
            {list && list.length > 0 ? (
              <ul className="workspace-list">
                {list.map((w) => {
                  const state = workspaceStateText(w, relativeTime);
                  const setup = setupWords(w);
                  return (
                    <li key={w.id} className="workspace-item" data-testid="workspace-item" data-workspace-id={w.id} data-status={w.status}>
                      <button type="button" className="link-button workspace-open" onClick={() => setOpenId(w.id)}>
                        {w.name}
                      </button>{' '}
                      <span className={`ws-status ws-${w.status}`}>{STATUS_WORDS[w.status] ?? w.status}</span>
                      {setup ? (
                        <>
                          {' '}
                          <span className={`ws-status ws-setup-${w.setup?.status}`} data-testid="workspace-item-setup">
                            {setup}
                          </span>
                        </>
                      ) : null}
                      <span className="workspace-meta-line">
                        <code>{w.branch}</code>
                        {state ? (
                          <>
                            {' · '}
                            <span data-testid="workspace-item-state">{state}</span>
                          </>
                        ) : null}{' '}
                        · made by {personName(w.createdBy)}
                        {w.createdAt ? ` ${relativeTime(w.createdAt)}` : ''}
                      </span>
                    </li>
                  );
                })}
              </ul>
            ) : null}
          </div>
        )
      ) : null}
      {creating ? (
        <NewWorkspaceDialog
          projectId={projectId}
          onCancel={() => setCreating(false)}
          onCreated={(w) => {
            setCreating(false);
            setList((l) => [w, ...(l ?? []).filter((x) => x.id !== w.id)]);
            setOpenId(w.id);
          }}
        />
      ) : null}
    </section>
  );
}

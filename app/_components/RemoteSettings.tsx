'use client';

import { useEffect, useId, useState, type FormEvent } from 'react';
import { ApiError } from '../_lib/api';
import { relativeTime } from '../_lib/format';
import { FORGE_NAMES, baseStateText, remotesApi, type RemotePatch, type RemoteView } from '../_lib/remotes';
import { Spinner } from './icons';

interface Form {
  url: string;
  forge: string;
  apiUrl: string;
  mode: 'pull-request' | 'push';
  token: string;
  removeToken: boolean;
  webhookSecret: string;
  removeWebhookSecret: boolean;
}

const emptyForm = (r: RemoteView | null): Form => ({
  url: r?.url ?? '',
  forge: r?.forge ?? '',
  apiUrl: r?.apiUrl ?? '',
  mode: r?.mode ?? 'pull-request',
  token: '',
  removeToken: false,
  webhookSecret: '',
  removeWebhookSecret: false,
});

/**
 * The project's remote repository in the Build section: where the server's base stands against
 * the remote's (behind, ahead), the last fetch, Fetch; and for owners and admins the settings.
 * Secrets are write-only: the form says whether one is set and can replace or remove it, never
 * show it.
 */
export function RemoteSettings({ projectId, canEdit }: { projectId: string; canEdit: boolean }) {
  const id = useId();
  const [remote, setRemote] = useState<RemoteView | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [fetching, setFetching] = useState(false);
  const [fetchNote, setFetchNote] = useState<{ ok: boolean; text: string } | null>(null);
  const [editing, setEditing] = useState(false);
  const [form, setForm] = useState<Form>(emptyForm(null));
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<{ message: string; field?: string } | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    setRemote(undefined);
    setLoadError(null);
    remotesApi.get(projectId, ac.signal).then(setRemote, (e: Error) => {
      if (e.name !== 'AbortError') setLoadError(e.message);
    });
    return () => ac.abort();
  }, [projectId]);

  const fetchNow = async () => {
    setFetching(true);
    setFetchNote(null);
    try {
      const out = await remotesApi.fetch(projectId);
      const words = out.local === 'blocked' ? ' The project folder’s own changes keep its base from following.' : '';
      setFetchNote({ ok: true, text: `Fetched: the base is ${baseStateText(out.base)}.${words}` });
      setRemote(await remotesApi.get(projectId));
    } catch (e) {
      const ae = e instanceof ApiError ? e : null;
      setFetchNote({ ok: false, text: ae?.status === 403 ? 'Only the project’s owners and editors can fetch.' : (e as Error).message });
      setRemote(await remotesApi.get(projectId).catch(() => remote ?? null));
    } finally {
      setFetching(false);
    }
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaving(true);
    setSaveError(null);
    const patch: RemotePatch = { url: form.url.trim(), forge: form.forge || null, apiUrl: form.apiUrl.trim() || null, mode: form.mode };
    if (form.removeToken) patch.token = null;
    else if (form.token) patch.token = form.token;
    if (form.removeWebhookSecret) patch.webhookSecret = null;
    else if (form.webhookSecret) patch.webhookSecret = form.webhookSecret;
    // A new remote with no forge named: the server guesses it from the host.
    if (!remote && !form.forge) delete patch.forge;
    try {
      setRemote(await remotesApi.put(projectId, patch));
      setEditing(false);
      setForm(emptyForm(null));
    } catch (err) {
      const ae = err instanceof ApiError ? err : null;
      setSaveError({ message: ae?.status === 403 ? 'Only the project’s owner or an admin can change its remote.' : (err as Error).message, ...(ae?.field ? { field: ae.field } : {}) });
    } finally {
      setSaving(false);
    }
  };

  const removeRemote = async () => {
    if (!window.confirm('Remove the project’s remote? Its token and settings are deleted; the repository on the server stays as it is.')) return;
    setSaving(true);
    try {
      setRemote(await remotesApi.put(projectId, { url: null }));
      setEditing(false);
    } catch (err) {
      setSaveError({ message: (err as Error).message });
    } finally {
      setSaving(false);
    }
  };

  if (loadError) {
    return (
      <p className="build-error" data-testid="remote-error">
        Could not read the remote: {loadError}
      </p>
    );
  }
  if (remote === undefined) return null;

  if (editing) {
    const err = (f: string) => (saveError?.field === f ? saveError.message : null);
    return (
      <form className="build-form" onSubmit={(e) => void save(e)} aria-labelledby={`${id}-h`} data-testid="remote-form">
        <h3 id={`${id}-h`}>{remote ? 'Change the remote' : 'Set up a remote'}</h3>
        <label className="build-field">
          Repository URL
          <input value={form.url} onChange={(e) => setForm((f) => ({ ...f, url: e.target.value }))} placeholder="https://github.com/team/app.git" required spellCheck={false} aria-invalid={!!err('url')} data-testid="remote-url" />
          {err('url') ? <span className="field-error">{err('url')}</span> : null}
        </label>
        <label className="build-field">
          Forge
          <select value={form.forge} onChange={(e) => setForm((f) => ({ ...f, forge: e.target.value }))} data-testid="remote-forge">
            <option value="">{remote ? 'None (plain git)' : 'Guess from the host'}</option>
            {Object.entries(FORGE_NAMES).map(([k, name]) => (
              <option key={k} value={k}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label className="build-field">
          API URL (self-hosted forges)
          <input value={form.apiUrl} onChange={(e) => setForm((f) => ({ ...f, apiUrl: e.target.value }))} placeholder="https://git.example.com/api/v1" spellCheck={false} aria-invalid={!!err('apiUrl')} />
          {err('apiUrl') ? <span className="field-error">{err('apiUrl')}</span> : null}
        </label>
        <fieldset className="build-field">
          <legend>How work reaches the remote</legend>
          <label className="build-check">
            <input type="radio" name={`${id}-mode`} checked={form.mode === 'pull-request'} onChange={() => setForm((f) => ({ ...f, mode: 'pull-request' }))} /> Pull requests (review on the forge)
          </label>
          <label className="build-check">
            <input type="radio" name={`${id}-mode`} checked={form.mode === 'push'} onChange={() => setForm((f) => ({ ...f, mode: 'push' }))} data-testid="remote-mode-push" /> Push: merges made here are pushed to the base
          </label>
        </fieldset>
        <label className="build-field">
          Access token {remote?.tokenSet ? '(set; leave empty to keep it)' : '(optional)'}
          <input type="password" autoComplete="new-password" value={form.token} disabled={form.removeToken} onChange={(e) => setForm((f) => ({ ...f, token: e.target.value }))} aria-invalid={!!err('token')} data-testid="remote-token" />
          {err('token') ? <span className="field-error">{err('token')}</span> : null}
        </label>
        {remote?.tokenSet ? (
          <label className="build-check">
            <input type="checkbox" checked={form.removeToken} onChange={(e) => setForm((f) => ({ ...f, removeToken: e.target.checked }))} /> Remove the token
          </label>
        ) : null}
        <label className="build-field">
          Webhook secret {remote?.webhookSecretSet ? '(set; leave empty to keep it)' : '(optional)'}
          <input type="password" autoComplete="new-password" value={form.webhookSecret} disabled={form.removeWebhookSecret} onChange={(e) => setForm((f) => ({ ...f, webhookSecret: e.target.value }))} />
        </label>
        {remote?.webhookSecretSet ? (
          <label className="build-check">
            <input type="checkbox" checked={form.removeWebhookSecret} onChange={(e) => setForm((f) => ({ ...f, removeWebhookSecret: e.target.checked }))} /> Remove the webhook secret
          </label>
        ) : null}
        {saveError && !['url', 'apiUrl', 'token'].includes(saveError.field ?? '') ? (
          <p className="build-error" role="alert">
            {saveError.message}
          </p>
        ) : null}
        <div className="build-actions">
          {remote ? (
            <button type="button" className="button" onClick={() => void removeRemote()} disabled={saving}>
              Remove the remote
            </button>
          ) : null}
          <button type="button" className="button" onClick={() => setEditing(false)} disabled={saving}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={saving} data-testid="remote-save">
            {saving ? <Spinner /> : null} Save the remote
          </button>
        </div>
      </form>
    );
  }

  const startEdit = () => {
    setForm(emptyForm(remote));
    setSaveError(null);
    setEditing(true);
  };

  if (!remote) {
    return canEdit ? (
      <p className="build-repo" data-testid="remote-none">
        No remote repository.{' '}
        <button type="button" className="link-button" onClick={startEdit} data-testid="remote-edit">
          Set up a remote
        </button>{' '}
        to fetch the team’s work before each workspace and push the sprint status.
      </p>
    ) : null;
  }
  const last = remote.lastFetch;
  return (
    <div className="build-settings" data-testid="remote-settings">
      <dl className="build-dl">
        <dt>Remote</dt>
        <dd>
          <code data-testid="remote-url-shown">{remote.url}</code>
          {remote.forge ? ` (${FORGE_NAMES[remote.forge] ?? remote.forge})` : ''}; {remote.mode === 'push' ? 'merges are pushed' : 'work goes out as pull requests'}; token {remote.tokenSet ? 'set' : 'not set'}
        </dd>
        <dt>Base</dt>
        <dd data-testid="remote-base">{baseStateText(remote.base)}</dd>
        <dt>Last fetch</dt>
        <dd data-testid="remote-last-fetch">
          {last ? `${relativeTime(last.at)}${last.ok ? '' : `, failed: ${last.message ?? last.code ?? 'no reason given'}`}` : 'never'}
        </dd>
        {remote.statusBranch ? (
          <>
            <dt>Sprint status</dt>
            <dd>
              on <code>{remote.statusBranch}</code> (the base is protected)
            </dd>
          </>
        ) : null}
      </dl>
      <div className="build-actions">
        <button type="button" className="button button-small" onClick={() => void fetchNow()} disabled={fetching} data-testid="remote-fetch">
          {fetching ? <Spinner /> : null} Fetch
        </button>
        {canEdit ? (
          <button type="button" className="button button-small" onClick={startEdit} data-testid="remote-edit">
            Change the remote
          </button>
        ) : null}
      </div>
      <p className={fetchNote && !fetchNote.ok ? 'build-error' : 'build-help'} role="status" aria-live="polite" data-testid="remote-fetch-note">
        {fetchNote?.text ?? ''}
      </p>
    </div>
  );
}

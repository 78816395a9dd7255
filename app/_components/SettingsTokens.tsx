'use client';

import { useId, useState, type FormEvent } from 'react';
import type { ProjectView } from '@/types/api';
import { accountsApi, type Token } from '../_lib/accounts';
import { copyText } from '../_lib/clipboard';
import { projectLabel } from '../_lib/projects';
import { ConfirmDialog } from './ConfirmDialog';
import { useLoad } from './useLoad';

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString() : 'never');
const tokenName = (t: Token) => t.name ?? 'token';

/** The caller's API tokens: make one (shown once), see them, revoke one after saying which. */
export function Tokens({ projects }: { projects: ProjectView[] }) {
  const id = useId();
  const { data, error, reload, setError } = useLoad(accountsApi.tokens);
  const [name, setName] = useState('');
  const [days, setDays] = useState('90');
  const [project, setProject] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<Token | null>(null);
  const [busy, setBusy] = useState(false);
  const labelOf = (projectId: string) => {
    const p = projects.find((x) => x.id === projectId);
    return p ? projectLabel(p) : projectId;
  };

  const create = async (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return setError('Name the token (what it is for).');
    try {
      const expiresAt = days ? new Date(Date.now() + Number(days) * 86_400_000).toISOString() : undefined;
      const made = await accountsApi.createToken({ name: name.trim(), ...(expiresAt ? { expiresAt } : {}), ...(project ? { projectIds: [project] } : {}) });
      setSecret(made.token);
      setCopied(false);
      setName('');
      await reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const revoke = async (t: Token) => {
    setBusy(true);
    try {
      await accountsApi.revokeToken(t.id);
      await reload();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
      setRevoking(null);
    }
  };

  return (
    <section aria-labelledby={`${id}-t`} data-testid="tokens" id="tokens">
      <h2 id={`${id}-t`}>API tokens</h2>
      <p className="form-hint">
        For curl and CI: send it as <code>Authorization: Bearer …</code>. A token does what you may, and only in its project when you pick one.
      </p>
      <form className="settings-row" onSubmit={(e) => void create(e)} noValidate>
        <div className="form-field">
          <label htmlFor={`${id}-name`}>Token name</label>
          <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} maxLength={32} autoComplete="off" />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-exp`}>Expires</label>
          <select id={`${id}-exp`} value={days} onChange={(e) => setDays(e.target.value)}>
            <option value="30">in 30 days</option>
            <option value="90">in 90 days</option>
            <option value="365">in a year</option>
            <option value="">never</option>
          </select>
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-proj`}>Projects</label>
          <select id={`${id}-proj`} value={project} onChange={(e) => setProject(e.target.value)}>
            <option value="">all of mine</option>
            {projects.map((p) => (
              <option key={p.id} value={p.id}>
                only {projectLabel(p)}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" className="button button-primary">
          Create token
        </button>
      </form>
      {secret ? (
        <div className="notice" role="status" data-testid="token-secret">
          <p>Copy the token now: it is shown this once.</p>
          <code className="token-secret">{secret}</code>
          <div className="settings-row">
            <button
              type="button"
              className="button"
              onClick={() =>
                void copyText(secret).then(
                  (ok) => setCopied(ok),
                  () => setCopied(false),
                )
              }
            >
              {copied ? 'Copied' : 'Copy token'}
            </button>
            <button type="button" className="button" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      ) : null}
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : null}
      {data && data.length === 0 ? <p className="settings-item-sub">No tokens yet.</p> : null}
      <ul className="settings-list" aria-label="Your tokens">
        {(data ?? []).map((t: Token) => (
          <li key={t.id} className="settings-item" data-testid="token-item">
            <span className="settings-item-text">
              <span>{tokenName(t)}</span>
              <span className="settings-item-sub">
                {t.start ? `${t.start}… · ` : ''}created {when(t.createdAt)} · expires {when(t.expiresAt)} · last used {when(t.lastUsedAt)}
                {t.projectIds ? ` · only ${t.projectIds.map(labelOf).join(', ')}` : ''}
              </span>
            </span>
            <button type="button" className="button button-danger" aria-label={`Revoke token ${tokenName(t)}`} onClick={() => setRevoking(t)}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      {revoking ? (
        <ConfirmDialog title={`Revoke token “${tokenName(revoking)}”?`} confirmLabel="Revoke token" danger busy={busy} onConfirm={() => void revoke(revoking)} onCancel={() => setRevoking(null)}>
          <p>
            Scripts and CI jobs that send {revoking.start ? <code>{revoking.start}…</code> : 'it'} stop working at once: they are told the token was revoked. This cannot be undone.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

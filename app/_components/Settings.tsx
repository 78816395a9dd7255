'use client';

import { useCallback, useEffect, useId, useState, type FormEvent } from 'react';
import type { ProjectView } from '@/types/api';
import { api } from '../_lib/api';
import { accountsApi, type Member, type Person, type Token } from '../_lib/accounts';
import { copyText } from '../_lib/clipboard';
import { useMe } from './AuthGate';

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString() : 'never');

function useLoad<T>(load: () => Promise<T>) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const reload = useCallback(async () => {
    try {
      setData(await load());
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [load]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, reload, setError };
}

/** The account page: who you are, your API tokens, people (admins) and project members. */
export function Settings() {
  const { me } = useMe();
  const [projects, setProjects] = useState<ProjectView[]>([]);
  useEffect(() => {
    api.projects().then(setProjects, () => setProjects([]));
  }, []);
  if (!me)
    return (
      <main className="settings" id="main">
        <h1>Account</h1>
        <p>Accounts are off on this server (AUTH=off): there are no people, tokens or members.</p>
        <a className="button" href="/">
          Back to chats
        </a>
      </main>
    );
  return (
    <main className="settings" id="main">
      <div className="settings-head">
        <div>
          <h1>Account</h1>
          <p className="settings-item-sub" data-testid="me">
            {me.name} · {me.email} · {me.role}
          </p>
        </div>
        <div className="settings-row">
          <a className="button" href="/">
            Back to chats
          </a>
          <button
            type="button"
            className="button"
            data-testid="sign-out"
            onClick={() =>
              void accountsApi.signOut().finally(() => {
                window.location.href = '/';
              })
            }
          >
            Sign out
          </button>
        </div>
      </div>
      <Tokens projects={projects} />
      {me.role === 'admin' ? <People /> : null}
      <Members projects={projects} />
    </main>
  );
}

function Tokens({ projects }: { projects: ProjectView[] }) {
  const id = useId();
  const { data, error, reload, setError } = useLoad(accountsApi.tokens);
  const [name, setName] = useState('');
  const [days, setDays] = useState('90');
  const [project, setProject] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);

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

  return (
    <section aria-labelledby={`${id}-t`} data-testid="tokens">
      <h2 id={`${id}-t`}>API tokens</h2>
      <p className="form-hint">For curl and CI: send it as <code>Authorization: Bearer …</code>. A token does what you may, and only in its project when you pick one.</p>
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
                only {p.name}
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
              <span>{t.name ?? 'token'}</span>
              <span className="settings-item-sub">
                {t.start ? `${t.start}… · ` : ''}created {when(t.createdAt)} · expires {when(t.expiresAt)} · last used {when(t.lastUsedAt)}
                {t.projectIds ? ` · only ${t.projectIds.join(', ')}` : ''}
              </span>
            </span>
            <button
              type="button"
              className="button button-danger"
              aria-label={`Revoke token ${t.name ?? ''}`}
              onClick={() => void accountsApi.revokeToken(t.id).then(reload, (e) => setError((e as Error).message))}
            >
              Revoke
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

function People() {
  const id = useId();
  const { me } = useMe();
  const { data, error, reload, setError } = useLoad(accountsApi.people);
  const [form, setForm] = useState({ email: '', name: '', password: '', role: 'member' as 'admin' | 'member' });
  const [done, setDone] = useState<string | null>(null);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    try {
      const p = await accountsApi.createPerson({ ...form, email: form.email.trim(), name: form.name.trim() });
      setDone(`${p.email} can sign in now.`);
      setForm({ email: '', name: '', password: '', role: 'member' });
      await reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <section aria-labelledby={`${id}-t`} data-testid="people">
      <h2 id={`${id}-t`}>People</h2>
      <form className="settings-row" onSubmit={(e) => void create(e)} noValidate>
        <div className="form-field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} autoComplete="off" maxLength={100} />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-email`}>Email</label>
          <input id={`${id}-email`} type="email" value={form.email} onChange={(e) => setForm({ ...form, email: e.target.value })} autoComplete="off" />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-pw`}>Password</label>
          <input id={`${id}-pw`} type="password" value={form.password} onChange={(e) => setForm({ ...form, password: e.target.value })} autoComplete="new-password" minLength={8} />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-role`}>Role</label>
          <select id={`${id}-role`} value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value as 'admin' | 'member' })}>
            <option value="member">member</option>
            <option value="admin">admin</option>
          </select>
        </div>
        <button type="submit" className="button button-primary">
          Add person
        </button>
      </form>
      {done ? <p role="status">{done}</p> : null}
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : null}
      <ul className="settings-list" aria-label="People">
        {(data ?? []).map((p: Person) => (
          <li key={p.id} className="settings-item" data-testid="person-item">
            <span className="settings-item-text">
              <span>{p.name}</span>
              <span className="settings-item-sub">{p.email}</span>
            </span>
            {p.id === me?.id ? (
              <span className="settings-item-sub">{p.role} (you)</span>
            ) : (
              <>
                <label className="visually-hidden" htmlFor={`${id}-r-${p.id}`}>
                  Role of {p.name}
                </label>
                <select
                  id={`${id}-r-${p.id}`}
                  value={p.role}
                  onChange={(e) => void accountsApi.setRole(p.id, e.target.value as Person['role']).then(reload, (err) => setError((err as Error).message))}
                >
                  <option value="member">member</option>
                  <option value="admin">admin</option>
                </select>
              </>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Members({ projects }: { projects: ProjectView[] }) {
  const id = useId();
  const [projectId, setProjectId] = useState('');
  const current = projectId || projects[0]?.id || '';
  const load = useCallback(() => (current ? accountsApi.members(current) : Promise.resolve([] as Member[])), [current]);
  const { data, error, reload, setError } = useLoad(load);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Member['projectRole']>('editor');

  if (projects.length === 0) return null;
  const act = (p: Promise<unknown>) => void p.then(reload, (e) => setError((e as Error).message));

  return (
    <section aria-labelledby={`${id}-t`} data-testid="members">
      <h2 id={`${id}-t`}>Project members</h2>
      <div className="form-field">
        <label htmlFor={`${id}-proj`}>Project</label>
        <select id={`${id}-proj`} value={current} onChange={(e) => setProjectId(e.target.value)}>
          {projects.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </div>
      <form
        className="settings-row"
        onSubmit={(e) => {
          e.preventDefault();
          if (email.trim()) act(accountsApi.setMember(current, email.trim(), role).then(() => setEmail('')));
        }}
        noValidate
      >
        <div className="form-field">
          <label htmlFor={`${id}-email`}>Email of the person</label>
          <input id={`${id}-email`} type="email" value={email} onChange={(e) => setEmail(e.target.value)} autoComplete="off" />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-role`}>Role</label>
          <select id={`${id}-role`} value={role} onChange={(e) => setRole(e.target.value as Member['projectRole'])}>
            <option value="owner">owner</option>
            <option value="editor">editor</option>
            <option value="viewer">viewer</option>
          </select>
        </div>
        <button type="submit" className="button button-primary">
          Add member
        </button>
      </form>
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : null}
      {data && data.length === 0 ? <p className="settings-item-sub">No members: only admins see this project.</p> : null}
      <ul className="settings-list" aria-label="Members">
        {(data ?? []).map((m) => (
          <li key={m.id} className="settings-item" data-testid="member-item">
            <span className="settings-item-text">
              <span>{m.name}</span>
              <span className="settings-item-sub">{m.email}</span>
            </span>
            <span className="settings-row">
              <label className="visually-hidden" htmlFor={`${id}-r-${m.id}`}>
                Role of {m.name}
              </label>
              <select id={`${id}-r-${m.id}`} value={m.projectRole} onChange={(e) => act(accountsApi.setMember(current, m.email, e.target.value as Member['projectRole']))}>
                <option value="owner">owner</option>
                <option value="editor">editor</option>
                <option value="viewer">viewer</option>
              </select>
              <button type="button" className="button" aria-label={`Remove ${m.name}`} onClick={() => act(accountsApi.removeMember(current, m.email))}>
                Remove
              </button>
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

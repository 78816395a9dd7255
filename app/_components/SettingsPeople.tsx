'use client';

import { useId, useState, type FormEvent } from 'react';
import { accountsApi, personLabel, type Person } from '../_lib/accounts';
import { ConfirmDialog } from './ConfirmDialog';
import { useMe } from './AuthGate';
import { useLoad } from './useLoad';

type Pending = { kind: 'deactivate' | 'delete' | 'password'; person: Person };

/** Everyone with an account (admins only): add a person, change a role, set a password, deactivate or delete. */
export function People() {
  const id = useId();
  const { me } = useMe();
  const { data, error, reload, setError } = useLoad(accountsApi.people);
  const [form, setForm] = useState({ email: '', name: '', password: '', role: 'member' as 'admin' | 'member' });
  const [done, setDone] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [newPassword, setNewPassword] = useState('');
  const [busy, setBusy] = useState(false);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    try {
      const p = await accountsApi.createPerson({ ...form, email: form.email.trim(), name: form.name.trim() });
      setDone(`${p.email} can sign in now.`);
      setForm({ email: '', name: '', password: '', role: 'member' });
      setError(null);
      await reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const act = async (what: () => Promise<unknown>, message: string) => {
    setBusy(true);
    setDone(null);
    try {
      await what();
      setError(null);
      setDone(message);
      setPending(null);
      await reload();
    } catch (err) {
      setError((err as Error).message);
      setPending(null);
    } finally {
      setBusy(false);
    }
  };

  const confirm = () => {
    if (!pending) return;
    const p = pending.person;
    if (pending.kind === 'deactivate') void act(() => accountsApi.setActive(p.id, false), `${p.name} is deactivated: signed out everywhere, tokens revoked.`);
    else if (pending.kind === 'delete') void act(() => accountsApi.removePerson(p.id), `${p.name} is deleted.`);
    else {
      if (newPassword.length < 8) return setError('The new password needs at least 8 characters.');
      void act(() => accountsApi.setPassword(p.id, newPassword), `${p.name} has a new password; tell them, they were signed out.`).then(() => setNewPassword(''));
    }
  };

  return (
    <section aria-labelledby={`${id}-t`} data-testid="people" id="people">
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
          <li key={p.id} className="settings-item" data-testid="person-item" data-status={p.status}>
            <span className="settings-item-text">
              <span>{personLabel(p)}</span>
              <span className="settings-item-sub">
                {p.email}
                {p.id === me?.id ? ` · ${p.role} (you)` : ''}
              </span>
            </span>
            {p.id === me?.id ? null : (
              <span className="settings-row">
                <label className="visually-hidden" htmlFor={`${id}-r-${p.id}`}>
                  Role of {p.name}
                </label>
                <select id={`${id}-r-${p.id}`} value={p.role} onChange={(e) => void act(() => accountsApi.setRole(p.id, e.target.value as Person['role']), `${p.name} is ${e.target.value} now.`)}>
                  <option value="member">member</option>
                  <option value="admin">admin</option>
                </select>
                <button type="button" className="button" aria-label={`Set password for ${p.name}`} onClick={() => setPending({ kind: 'password', person: p })}>
                  Set password
                </button>
                {p.status === 'active' ? (
                  <button type="button" className="button" aria-label={`Deactivate ${p.name}`} onClick={() => setPending({ kind: 'deactivate', person: p })}>
                    Deactivate
                  </button>
                ) : (
                  <button type="button" className="button" aria-label={`Reactivate ${p.name}`} onClick={() => void act(() => accountsApi.setActive(p.id, true), `${p.name} can sign in again.`)}>
                    Reactivate
                  </button>
                )}
                <button type="button" className="button button-danger" aria-label={`Delete ${p.name}`} onClick={() => setPending({ kind: 'delete', person: p })}>
                  Delete
                </button>
              </span>
            )}
          </li>
        ))}
      </ul>
      {pending?.kind === 'deactivate' ? (
        <ConfirmDialog title={`Deactivate ${pending.person.name}?`} confirmLabel="Deactivate" danger busy={busy} onConfirm={confirm} onCancel={() => setPending(null)}>
          <p>
            {pending.person.name} ({pending.person.email}) is signed out everywhere at once and their API tokens stop working. They cannot sign in until you reactivate them. Their
            conversations stay, marked “(deactivated)”.
          </p>
        </ConfirmDialog>
      ) : null}
      {pending?.kind === 'delete' ? (
        <ConfirmDialog title={`Delete ${pending.person.name}?`} confirmLabel="Delete person" danger busy={busy} onConfirm={confirm} onCancel={() => setPending(null)}>
          <p>
            {pending.person.name} ({pending.person.email}) loses their account, sessions, tokens and project memberships. Their conversations stay, marked “(removed)”. This cannot
            be undone; deactivating can.
          </p>
        </ConfirmDialog>
      ) : null}
      {pending?.kind === 'password' ? (
        <ConfirmDialog
          title={`New password for ${pending.person.name}`}
          confirmLabel="Set password"
          busy={busy}
          onConfirm={confirm}
          onCancel={() => {
            setPending(null);
            setNewPassword('');
          }}
        >
          <p>They are signed out everywhere and sign in with this one; tell it to them.</p>
          <div className="form-field">
            <label htmlFor={`${id}-newpw`}>New password</label>
            <input id={`${id}-newpw`} type="password" value={newPassword} onChange={(e) => setNewPassword(e.target.value)} autoComplete="new-password" minLength={8} />
          </div>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

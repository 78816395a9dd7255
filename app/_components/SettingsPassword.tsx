'use client';

import { useId, useState, type FormEvent } from 'react';
import { accountsApi } from '../_lib/accounts';

/** Changing one's own password: the current one, then the new one twice. */
export function OwnPassword() {
  const id = useId();
  const [form, setForm] = useState({ current: '', next: '', again: '' });
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(false);
    if (!form.current || !form.next) return setError('Fill in your current and your new password.');
    if (form.next.length < 8) return setError('The new password needs at least 8 characters.');
    if (form.next !== form.again) return setError('The two new passwords differ.');
    setBusy(true);
    try {
      await accountsApi.changeOwnPassword(form.current, form.next);
      setForm({ current: '', next: '', again: '' });
      setError(null);
      setDone(true);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby={`${id}-t`} data-testid="own-password" id="password">
      <h2 id={`${id}-t`}>Your password</h2>
      <form className="settings-row" onSubmit={(e) => void submit(e)} noValidate>
        <div className="form-field">
          <label htmlFor={`${id}-cur`}>Current password</label>
          <input id={`${id}-cur`} type="password" value={form.current} onChange={(e) => setForm({ ...form, current: e.target.value })} autoComplete="current-password" />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-new`}>New password</label>
          <input id={`${id}-new`} type="password" value={form.next} onChange={(e) => setForm({ ...form, next: e.target.value })} autoComplete="new-password" minLength={8} />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-again`}>New password again</label>
          <input id={`${id}-again`} type="password" value={form.again} onChange={(e) => setForm({ ...form, again: e.target.value })} autoComplete="new-password" minLength={8} />
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          Change password
        </button>
      </form>
      <p className="form-hint">Your other signed-in browsers are signed out; this one stays.</p>
      {done ? <p role="status">Password changed.</p> : null}
      {error ? (
        <p className="notice notice-error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}

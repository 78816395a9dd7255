'use client';

import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { ApiError } from '../_lib/api';
import { accountsApi, type AuthInfo } from '../_lib/accounts';

/**
 * The sign-in page, with the single sign-on button when the server has one; on a new server, the
 * form that creates the first admin instead.
 */
export function SignIn({ info, onSignedIn }: { info: AuthInfo; onSignedIn: () => void }) {
  const id = useId();
  const [signingUp, setSigningUp] = useState(false);
  const firstRun = info.needsSetup;
  // The form asks for a name when it makes an account: the first admin, or a self sign-up.
  const creating = firstRun || signingUp;
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const emailRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    emailRef.current?.focus();
    if (new URLSearchParams(window.location.search).get('signin') === 'failed') setError('Single sign-on did not sign you in. Ask an admin whether your account exists here.');
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    setError(null);
    if (!email.trim() || !password || (creating && !name.trim())) {
      setError(creating ? 'Enter your name, email and a password.' : 'Enter your email and password.');
      return;
    }
    if (creating && password.length < 8) {
      setError('The password needs at least 8 characters.');
      return;
    }
    setBusy(true);
    try {
      if (firstRun) await accountsApi.createAdmin({ email: email.trim(), name: name.trim(), password });
      else if (signingUp) await accountsApi.signUp({ email: email.trim(), name: name.trim(), password });
      else await accountsApi.signIn(email.trim(), password);
      onSignedIn();
    } catch (err) {
      setBusy(false);
      if (err instanceof ApiError && err.code === 'E_CONFLICT' && firstRun) {
        setError('Someone else created the admin a moment ago. Reload to sign in.');
      } else setError((err as Error).message);
    }
  };

  return (
    <main className="auth-page" id="main">
      <form className="auth-card" onSubmit={(e) => void submit(e)} noValidate aria-labelledby={`${id}-t`} data-testid={firstRun ? 'first-run' : 'sign-in'}>
        <h1 id={`${id}-t`}>{firstRun ? 'Create the admin account' : signingUp ? 'Create your account' : 'Sign in to BMAD Orchestrator'}</h1>
        {firstRun ? <p className="form-lead">This server is new. The account you create now is its admin: you will add the other people.</p> : null}
        {creating ? (
          <div className="form-field">
            <label htmlFor={`${id}-name`}>Your name</label>
            <input id={`${id}-name`} name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="name" maxLength={100} required />
          </div>
        ) : null}
        <div className="form-field">
          <label htmlFor={`${id}-email`}>Email</label>
          <input ref={emailRef} id={`${id}-email`} name="email" type="email" value={email} onChange={(e) => setEmail(e.target.value)} autoComplete={creating ? 'email' : 'username'} required />
        </div>
        <div className="form-field">
          <label htmlFor={`${id}-password`}>Password</label>
          <input
            id={`${id}-password`}
            name="password"
            type="password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            autoComplete={creating ? 'new-password' : 'current-password'}
            minLength={creating ? 8 : undefined}
            required
          />
          {creating ? <p className="form-hint">At least 8 characters.</p> : null}
        </div>
        {error ? (
          <p className="notice notice-error" role="alert" data-testid="auth-error">
            {error}
          </p>
        ) : null}
        <button type="submit" className="button button-primary auth-submit" aria-disabled={busy || undefined}>
          {firstRun ? (busy ? 'Creating…' : 'Create admin account') : signingUp ? (busy ? 'Creating…' : 'Create account') : busy ? 'Signing in…' : 'Sign in'}
        </button>
        {!firstRun && info.signUp ? (
          <button
            type="button"
            className="button auth-submit"
            onClick={() => {
              setSigningUp((v) => !v);
              setError(null);
            }}
          >
            {signingUp ? 'I have an account: sign in' : 'Create an account'}
          </button>
        ) : null}
        {!creating && info.sso ? (
          <>
            <p className="auth-or">or</p>
            <button type="button" className="button auth-submit" data-testid="sso" onClick={() => void accountsApi.signInWithSso(info.sso!.providerId).catch((e) => setError((e as Error).message))}>
              Sign in with single sign-on
            </button>
          </>
        ) : null}
      </form>
    </main>
  );
}

'use client';

import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { accountsApi, type AuthInfo, type Me } from '../_lib/accounts';
import { SignIn } from './SignIn';
import './accounts.css';

/** Who is signed in; null in the single-user mode (AUTH=off) and before the answer. */
const MeContext = createContext<{ me: Me | null; info: AuthInfo | null }>({ me: null, info: null });

export function useMe() {
  return useContext(MeContext);
}

type State = { kind: 'loading' } | { kind: 'error'; message: string } | { kind: 'signin'; info: AuthInfo } | { kind: 'ready'; info: AuthInfo; me: Me | null };

/**
 * Shows its children to someone signed in (or to everyone with accounts off); otherwise the
 * sign-in page, or the first-run form that creates the admin.
 */
export function AuthGate({ children }: { children: ReactNode }) {
  const [state, setState] = useState<State>({ kind: 'loading' });

  const load = useCallback(async () => {
    try {
      const info = await accountsApi.info();
      if (!info.auth) return setState({ kind: 'ready', info, me: null });
      const me = info.needsSetup ? null : await accountsApi.me();
      setState(me ? { kind: 'ready', info, me } : { kind: 'signin', info });
    } catch (e) {
      setState({ kind: 'error', message: (e as Error).message });
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  if (state.kind === 'loading') return null;
  if (state.kind === 'error')
    return (
      <main className="auth-page" id="main">
        <p className="notice notice-error" role="alert">
          {state.message}
        </p>
        <button type="button" className="button" onClick={() => void load()}>
          Try again
        </button>
      </main>
    );
  if (state.kind === 'signin') return <SignIn info={state.info} onSignedIn={() => void load()} />;
  return <MeContext.Provider value={{ me: state.me, info: state.info }}>{children}</MeContext.Provider>;
}

'use client';

import { useMe } from './AuthGate';

/** The top bar's way to the account page (password, tokens, people, members, sign-out); nothing without accounts. */
export function AccountMenu() {
  const { me } = useMe();
  if (!me) return null;
  const initial = (me.name || me.email || '?').trim().charAt(0).toUpperCase();
  return (
    <a className="account-link" href="/settings" title={`Account of ${me.name || me.email}: password, tokens${me.role === 'admin' ? ', people' : ''}`} data-testid="account-link">
      <span className="account-initial" aria-hidden="true">
        {initial}
      </span>
      <span className="account-label">Account</span>
    </a>
  );
}

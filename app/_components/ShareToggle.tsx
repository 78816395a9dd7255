'use client';

import { useEffect, useState } from 'react';
import { api } from '../_lib/api';
import { accountsApi } from '../_lib/accounts';
import { useMe } from './AuthGate';

/**
 * Shares a project conversation with the project's members (read-only), or makes it private again.
 * Shown to its owner only, with accounts on (a reader sees the read-only line instead).
 */
export function ShareToggle({ conversationId }: { conversationId: string }) {
  const { me } = useMe();
  const [state, setState] = useState<{ shared: boolean; canShare: boolean } | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!me) return;
    const ctrl = new AbortController();
    setState(null);
    api.conversation(conversationId, ctrl.signal).then(
      (d) => {
        // The server says who may change it (its owner only); an older answer without canWrite, its owner.
        setState({ shared: !!d.shared, canShare: !!d.projectId && (d.canWrite ?? d.ownerId === me.id) });
      },
      () => undefined,
    );
    return () => ctrl.abort();
  }, [conversationId, me]);

  if (!me || !state?.canShare) return null;
  const toggle = async () => {
    setError(null);
    try {
      await accountsApi.share(conversationId, !state.shared);
      setState({ ...state, shared: !state.shared });
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <button
      type="button"
      className="button button-small share-toggle"
      aria-pressed={state.shared}
      title={error ?? (state.shared ? "The project's members can read this conversation" : 'Only you (and admins) can read this conversation')}
      onClick={() => void toggle()}
      data-testid="share-toggle"
    >
      {state.shared ? 'Shared' : 'Share'}
    </button>
  );
}

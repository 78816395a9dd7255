import type { TurnLease } from '../../store/conversations/types';
import type { ChatDeps } from './deps';
import { SERVER_SHUTDOWN } from './shutdown-reason';

/** The abort reason of a Stop asked for through the store (stored as stopped, like the client's own). */
export const REMOTE_STOP: Error = Object.assign(new Error('Stopped through POST /api/conversations/:id/stop.'), { name: 'AbortError' });

/**
 * The turn's signal: the request's, or a Stop asked for through the store (POST
 * /api/conversations/:id/stop on any instance), which stops the turn as the client's own Stop
 * does. A lease lost to another instance (this one stalled past its expiry) ends it as interrupted.
 */
export function watchRemoteStop(deps: Pick<ChatDeps, 'store'>, lease: TurnLease, signal: AbortSignal): { signal: AbortSignal; end: () => void } {
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  if (signal.aborted) forward();
  else signal.addEventListener('abort', forward, { once: true });
  const unwatch = deps.store.watchTurn(lease, (why) => controller.abort(why === 'lost' ? SERVER_SHUTDOWN : REMOTE_STOP));
  return {
    signal: controller.signal,
    end: () => {
      unwatch();
      signal.removeEventListener('abort', forward);
    },
  };
}

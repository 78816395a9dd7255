import type { TurnEvent } from '../../model/loop';
import type { ModelPrice } from '../../core/models';
import type { ChatDeps } from './deps';
import { newId } from './ids';
import { openTurn, type ChatRequest } from './open-turn';
import { recordTurn, type RunningTurn } from './record-turn';
import { watchRemoteStop } from './remote-stop';

export type { ChatRequest };

export interface TurnHandle {
  conversationId: string;
  /** Id of the assistant message this turn answers with. */
  messageId: string;
  /** Id of the stored user message this turn answers (the existing one for a regenerate). */
  userMessageId: string;
  /** The profile the turn runs on, and the model name it sends. */
  profile: string;
  model: string;
  price?: ModelPrice;
  events: AsyncGenerator<TurnEvent>;
  /**
   * For a streamed turn: how many characters of answer text (all steps together) the reader has
   * been sent. A turn the user stops stores its answer only up to there, so the history never
   * holds words the screen did not show. Unreported (a JSON turn), the whole partial answer is kept.
   */
  reportTextSent(chars: number): void;
}

/**
 * Starts one turn: opens it (validation, lock, regenerate or edit, the user message stored) and
 * returns its events, which record it as it runs; the lock is released when the events end (or
 * the consumer stops reading them).
 */
export async function startTurn(deps: ChatDeps, req: ChatRequest, signal: AbortSignal): Promise<TurnHandle> {
  const opened = await openTurn(deps, req);
  const { conversationId, userMessageId, profile } = opened;
  const messageId = newId('msg');
  const sent: RunningTurn['sent'] = { chars: null };
  const remote = watchRemoteStop(deps, opened.lease, signal);
  const events = recordTurn(deps, { ...opened, messageId, signal: remote.signal, unwatch: remote.end, sent });
  return {
    conversationId,
    messageId,
    userMessageId,
    profile: profile.name,
    model: profile.model,
    ...(profile.price ? { price: profile.price } : {}),
    events,
    reportTextSent: (chars) => {
      sent.chars = chars;
    },
  };
}

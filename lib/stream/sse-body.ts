import type { TurnEvent } from '../loop/types';
import { sse, UiStreamEncoder, type StreamModel } from './index';

export interface SseBodyOptions {
  messageId: string;
  conversationId: string;
  /** Named in `data-conversation`; its prices give `data-usage` a cost. */
  model?: StreamModel;
  events: AsyncIterable<TurnEvent>;
  /**
   * Tokens that continue an answer already on screen are gathered into one write per this many
   * milliseconds. The first token of an answer, tool activity, step changes and the end of the turn
   * are written at once, so neither the first token nor the last is delayed; a fast model's tokens
   * cost one write per window instead of one each. With 0, only events that are ready together
   * in the same turn of the event loop share a write.
   */
  coalesceMs?: number;
  /** Runs once when the body ends, however it ends. */
  onEnd?: () => void;
  /** Runs when the reader goes away before the end, before the events are closed. */
  onCancel?: () => void;
}

const DEFAULT_COALESCE_MS = 20;

const encoder = new TextEncoder();

/** The streamed answer of one turn: UI message stream chunks as Server-Sent Events, ending with [DONE]. */
export function sseBody(options: SseBodyOptions): ReadableStream<Uint8Array> {
  const windowMs = Math.max(0, options.coalesceMs ?? DEFAULT_COALESCE_MS);
  const ui = new UiStreamEncoder(options.messageId, options.model);
  const iterator = options.events[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<TurnEvent>> | null = null;
  let buffered: string[] = [];
  let lastWrite = -Infinity;
  /** When what is buffered must be written. */
  let deadline = Infinity;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    options.onEnd?.();
  };

  /** Resolves with null when the buffer must go out; one per window, shared by the events in it. */
  let closing: { at: number; promise: Promise<null>; cancel: () => void } | null = null;
  const stopClosing = () => {
    closing?.cancel();
    closing = null;
  };

  const write = (ctrl: ReadableStreamDefaultController<Uint8Array>) => {
    stopClosing();
    ctrl.enqueue(encoder.encode(buffered.join('')));
    buffered = [];
    lastWrite = performance.now();
    deadline = Infinity;
  };

  /**
   * The next event, or null when the deadline comes first (what is buffered must go out then). A
   * deadline already due still takes every event that is ready before the next turn of the event
   * loop, so the events that end a turn, which come back to back, share one write.
   */
  const nextEvent = async (): Promise<IteratorResult<TurnEvent> | null> => {
    const next = (pending ??= iterator.next());
    if (!buffered.length) {
      pending = null;
      return next;
    }
    if (!closing || closing.at !== deadline) {
      stopClosing();
      const waitMs = deadline - performance.now();
      let cancel = () => undefined as void;
      const promise = new Promise<null>((resolve) => {
        if (waitMs <= 0) {
          const t = setImmediate(() => resolve(null));
          cancel = () => clearImmediate(t);
        } else {
          const t = setTimeout(() => resolve(null), waitMs);
          cancel = () => clearTimeout(t);
        }
      });
      closing = { at: deadline, promise, cancel };
    }
    const winner = await Promise.race([next, closing.promise]);
    if (winner) pending = null;
    return winner;
  };

  return new ReadableStream<Uint8Array>({
    start() {
      // Written with whatever the turn yields before it first waits (the step start), in one write.
      for (const chunk of ui.begin(options.conversationId)) buffered.push(sse(chunk));
      deadline = performance.now();
    },
    async pull(ctrl) {
      try {
        // A pull that enqueues nothing is not called again, so keep going until a write is made.
        for (;;) {
          const next = await nextEvent();
          if (next === null) return write(ctrl);
          if (next.done) {
            buffered.push(sse('[DONE]'));
            write(ctrl);
            ctrl.close();
            end();
            return;
          }
          const chunks = ui.encode(next.value);
          if (!chunks.length) continue;
          for (const chunk of chunks) buffered.push(sse(chunk));
          // Only tokens that continue an answer already showing may wait for the window; the first
          // token of an answer, tool activity and step changes go out now.
          const now = performance.now();
          const continues = chunks.every((c) => c.type === 'text-delta');
          deadline = Math.min(deadline, continues ? lastWrite + windowMs : now);
        }
      } catch (e) {
        stopClosing();
        end();
        throw e;
      }
    },
    async cancel() {
      stopClosing();
      options.onCancel?.();
      end();
      // Let the events run their cleanup (persist, release the turn lock).
      await iterator.return?.(undefined);
    },
  });
}

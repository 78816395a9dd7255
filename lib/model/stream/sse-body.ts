import type { TurnEvent } from '../loop/types';
import { sse, UiStreamEncoder, type StreamModel } from './index';

/**
 * How a turn's events are written as server-sent events: the UI message stream by default;
 * another wire format (OpenAI's chunks) brings its own. Frames are whole SSE events.
 */
export interface SseEncoder {
  /** Written at once, before the first event. */
  begin(): string[];
  /** One event's frames; `continues`: only answer text that continues what was written (it may wait for the window). */
  encode(event: TurnEvent): { frames: string[]; continues: boolean };
  /** Written when the events end. */
  end(): string[];
}

/** The UI message stream of POST /api/chat. */
function uiEncoder(options: Pick<SseBodyOptions, 'messageId' | 'conversationId' | 'userMessageId' | 'model'>): SseEncoder {
  const ui = new UiStreamEncoder(options.messageId, options.model);
  return {
    begin: () => ui.begin(options.conversationId, options.userMessageId).map(sse),
    encode: (event) => {
      const chunks = ui.encode(event);
      return { frames: chunks.map(sse), continues: chunks.length > 0 && chunks.every((c) => c.type === 'text-delta') };
    },
    end: () => [sse('[DONE]')],
  };
}

export interface SseBodyOptions {
  messageId: string;
  conversationId: string;
  /** The stored user message this turn answers; sent as a `data-user-message` part. */
  userMessageId?: string;
  /** Named in `data-conversation`; its prices give `data-usage` a cost. */
  model?: StreamModel;
  events: AsyncIterable<TurnEvent>;
  /** The wire format; the UI message stream (with `messageId`, `conversationId`, `userMessageId`, `model`) when absent. */
  encoder?: SseEncoder;
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
  /** Runs when the reader goes away before the end (cancel, or `readerGone`), before the events are drained. */
  onCancel?: () => void;
  /**
   * Fires when the reader is gone even though nobody cancels the body (a client that disconnects
   * while a server stops pulling); handled as a cancel.
   */
  readerGone?: AbortSignal;
  /**
   * Called when a read has taken written answer text, with the characters of text-delta taken
   * so far (the whole turn). Text the reader never got (still gathered for the window, or queued
   * unread, when it went away) is not counted, so a stopped turn can store exactly what was sent.
   */
  onTextWritten?: (chars: number) => void;
}

const DEFAULT_COALESCE_MS = 20;

const encoder = new TextEncoder();

/** The streamed answer of one turn: UI message stream chunks (or the encoder's frames) as Server-Sent Events, ending with [DONE]. */
export function sseBody(options: SseBodyOptions): ReadableStream<Uint8Array> {
  const windowMs = Math.max(0, options.coalesceMs ?? DEFAULT_COALESCE_MS);
  const enc = options.encoder ?? uiEncoder(options);
  const iterator = options.events[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<TurnEvent>> | null = null;
  let buffered: string[] = [];
  let bufferedText = 0;
  /** Text of the last write while it waits in the stream's queue for a read. */
  let queuedText = 0;
  let deliveredText = 0;
  /** The reader went away: nothing more is written, the events are drained to their end. */
  let detached = false;
  let drained: Promise<void> | null = null;
  let lastWrite = -Infinity;
  /** When what is buffered must be written. */
  let deadline = Infinity;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    unlisten();
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
    queuedText += bufferedText;
    bufferedText = 0;
    // Room left in the queue means a waiting read took the write at once.
    if ((ctrl.desiredSize ?? 0) > 0) confirmDelivered();
  };

  /** What is written counts once a read took it: text held or queued when the reader goes is not. */
  const confirmDelivered = () => {
    if (!queuedText) return;
    deliveredText += queuedText;
    queuedText = 0;
    options.onTextWritten?.(deliveredText);
  };

  /**
   * The reader is gone. The events are read to their end rather than closed with return(), so the
   * turn (already told to stop by onCancel) gets to store its partial answer and how it ended, and
   * to release its lock, however the model call or tools were placed at that moment.
   */
  const detach = (): Promise<void> => {
    if (drained) return drained;
    detached = true;
    stopClosing();
    buffered = [];
    bufferedText = 0;
    queuedText = 0;
    options.onCancel?.();
    drained = (async () => {
      try {
        for (;;) {
          const next = pending ?? iterator.next();
          pending = null;
          if ((await next).done) break;
        }
      } catch {
        // The events' own cleanup already ran; nothing is left to tell.
      } finally {
        end();
      }
    })();
    return drained;
  };
  const onReaderGone = () => void detach();
  if (options.readerGone?.aborted) queueMicrotask(onReaderGone);
  else options.readerGone?.addEventListener('abort', onReaderGone, { once: true });
  const unlisten = () => options.readerGone?.removeEventListener('abort', onReaderGone);

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
      buffered.push(...enc.begin());
      deadline = performance.now();
    },
    async pull(ctrl) {
      // A pull comes only once the queue is empty: the last write has been read.
      if (!detached) confirmDelivered();
      try {
        // A pull that enqueues nothing is not called again, so keep going until a write is made.
        for (;;) {
          if (detached) return;
          const next = await nextEvent();
          // The drain took over while this pull waited; what it got is the drain's to handle.
          if (detached) return;
          if (next === null) return write(ctrl);
          if (next.done) {
            buffered.push(...enc.end());
            write(ctrl);
            ctrl.close();
            end();
            return;
          }
          const { frames, continues } = enc.encode(next.value);
          if (!frames.length) continue;
          buffered.push(...frames);
          if (next.value.type === 'text-delta') bufferedText += next.value.delta.length;
          // Only tokens that continue an answer already showing may wait for the window; the first
          // token of an answer, tool activity and step changes go out now.
          const now = performance.now();
          deadline = Math.min(deadline, continues ? lastWrite + windowMs : now);
        }
      } catch (e) {
        stopClosing();
        if (detached) return;
        end();
        throw e;
      }
    },
    async cancel() {
      await detach();
    },
  });
}

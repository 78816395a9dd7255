import type { TurnEvent } from '../loop/types';
import { sse, UiStreamEncoder } from './index';
import { sseBody } from './sse-body';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Events of a plain answer, `gapMs` apart. */
async function* answer(deltas: string[], gapMs: number, log: string[] = []): AsyncGenerator<TurnEvent> {
  try {
    yield { type: 'step-start', iteration: 1 };
    for (const delta of deltas) {
      await sleep(gapMs);
      yield { type: 'text-delta', delta };
    }
    yield { type: 'assistant-message', content: deltas.join(''), toolCalls: [], usage: { promptTokens: 1, completionTokens: 2 } };
    yield { type: 'step-finish', iteration: 1, usage: { promptTokens: 1, completionTokens: 2 } };
    yield { type: 'finish', stopReason: 'stop', usage: { promptTokens: 1, completionTokens: 2 }, iterations: 1 };
  } finally {
    log.push('events closed');
  }
}

/** Every write of the body as text, with the time it arrived. */
async function writes(body: ReadableStream<Uint8Array>): Promise<{ text: string; at: number }[]> {
  const out: { text: string; at: number }[] = [];
  const decoder = new TextDecoder();
  const t0 = performance.now();
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out;
    out.push({ text: decoder.decode(value), at: performance.now() - t0 });
  }
}

function frames(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => f.replace(/^data: /, ''))
    .map((d) => (d === '[DONE]' ? d : JSON.parse(d)));
}

const deltas = Array.from({ length: 12 }, (_, i) => `w${i} `);

describe('sseBody', () => {
  it('sends the UI message stream frames in order, ending with [DONE]', async () => {
    const ended: string[] = [];
    const out = await writes(sseBody({ messageId: 'm1', conversationId: 'c1', events: answer(['Hel', 'lo'], 1), onEnd: () => ended.push('end') }));
    const all = frames(out.map((w) => w.text).join(''));
    expect(all.map((f) => (typeof f === 'string' ? f : (f as { type: string }).type))).toEqual([
      'start',
      'data-conversation',
      'start-step',
      'text-start',
      'text-delta',
      'text-delta',
      'text-end',
      'finish-step',
      'data-usage',
      'data-stop',
      'finish',
      '[DONE]',
    ]);
    expect(all[1]).toEqual({ type: 'data-conversation', data: { conversationId: 'c1' } });
    expect(ended).toEqual(['end']);
  });

  it('writes the start with the step, then gathers tokens that arrive within the window', async () => {
    const out = await writes(sseBody({ messageId: 'm', conversationId: 'c', events: answer(deltas, 2), coalesceMs: 200 }));
    const text = out.map((w) => w.text).join('');
    expect(frames(text).filter((f) => (f as { type?: string }).type === 'text-delta')).toHaveLength(12);
    // The step opens before the turn first waits, so it shares the first write.
    expect(frames(out[0].text).map((f) => (f as { type: string }).type)).toEqual(['start', 'data-conversation', 'start-step']);
    // 15 events with frames; one write each would be 13 or more.
    expect(out.length).toBeLessThan(8);
    expect(out[out.length - 1].text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('sends the first token of an answer without waiting for the window', async () => {
    async function* slowStart(): AsyncGenerator<TurnEvent> {
      // The step opens before the model call; the first token comes after its think time.
      yield { type: 'step-start', iteration: 1 };
      await sleep(50);
      yield { type: 'text-delta', delta: 'first' };
      await sleep(200);
      yield { type: 'finish', stopReason: 'stop', usage: { promptTokens: 0, completionTokens: 0 }, iterations: 1 };
    }
    const out = await writes(sseBody({ messageId: 'm', conversationId: 'c', events: slowStart(), coalesceMs: 5000 }));
    // Held for the window, the token would have gone out with the end of the turn.
    const first = out.find((w) => w.text.includes('"first"'))!;
    expect(first.text).not.toContain('[DONE]');
    expect(out.indexOf(first)).toBeLessThan(out.length - 1);
  });

  it('with a zero window writes events that come apart on their own', async () => {
    const out = await writes(sseBody({ messageId: 'm', conversationId: 'c', events: answer(['a', 'b', 'c', 'd'], 30), coalesceMs: 0 }));
    expect(out.filter((w) => w.text.includes('"text-delta"'))).toHaveLength(4);
  });

  it('loses, repeats and reorders nothing, whatever the timing', async () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let run = 0; run < 5; run++) {
      const events: TurnEvent[] = [{ type: 'step-start', iteration: 1 }];
      for (let i = 0; i < 60; i++) {
        if (rand() < 0.1) {
          const call = { id: `c${run}-${i}`, name: 'read_file', arguments: '{}' };
          events.push({ type: 'tool-call', call, input: {} }, { type: 'tool-result', call, result: { ok: true }, durationMs: 1 });
        } else events.push({ type: 'text-delta', delta: `d${i} ` });
      }
      events.push({ type: 'finish', stopReason: 'stop', usage: { promptTokens: 0, completionTokens: 0 }, iterations: 1 });
      const gaps = events.map(() => rand());
      async function* timed(): AsyncGenerator<TurnEvent> {
        for (let i = 0; i < events.length; i++) {
          const g = gaps[i];
          if (g < 0.3) await new Promise((r) => setImmediate(r));
          else if (g < 0.6) await sleep(Math.ceil(g * 6));
          else if (g < 0.8) await Promise.resolve();
          yield events[i];
        }
      }
      const expected = new UiStreamEncoder('m');
      const want = [...expected.begin('c'), ...events.flatMap((e) => expected.encode(e))].map(sse).join('') + sse('[DONE]');
      const out = await writes(sseBody({ messageId: 'm', conversationId: 'c', events: timed(), coalesceMs: 4 }));
      expect(out.map((w) => w.text).join('')).toBe(want);
    }
  });

  /** A turn that stops at its next step once told to, ending the way the loop ends a stopped turn. */
  function stoppable(log: string[]) {
    const controller = new AbortController();
    async function* events(): AsyncGenerator<TurnEvent> {
      try {
        yield { type: 'step-start', iteration: 1 };
        for (const delta of deltas) {
          await sleep(5);
          if (controller.signal.aborted) break;
          yield { type: 'text-delta', delta };
        }
        log.push('stored how it ended');
        yield { type: 'finish', stopReason: controller.signal.aborted ? 'aborted' : 'stop', usage: { promptTokens: 0, completionTokens: 0 }, iterations: 1 };
      } finally {
        log.push('events closed');
      }
    }
    return { controller, events: events() };
  }

  it('on cancel tells the owner, lets the events run to their end, and ends once', async () => {
    const log: string[] = [];
    const turn = stoppable(log);
    const body = sseBody({
      messageId: 'm',
      conversationId: 'c',
      events: turn.events,
      onCancel: () => {
        log.push('cancel');
        turn.controller.abort();
      },
      onEnd: () => log.push('end'),
    });
    const reader = body.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    expect(log).toEqual(['cancel', 'stored how it ended', 'events closed', 'end']);
  });

  it('treats readerGone as a cancel, with no cancel from the reader', async () => {
    const log: string[] = [];
    const turn = stoppable(log);
    const gone = new AbortController();
    let ended!: () => void;
    const done = new Promise<void>((r) => (ended = r));
    const body = sseBody({
      messageId: 'm',
      conversationId: 'c',
      events: turn.events,
      readerGone: gone.signal,
      onCancel: () => turn.controller.abort(),
      onEnd: () => ended(),
    });
    const reader = body.getReader();
    await reader.read();
    gone.abort();
    await done;
    expect(log).toEqual(['stored how it ended', 'events closed']);
  });

  it('counts the answer text it wrote, never what it still held when the reader went away', async () => {
    const counts: number[] = [];
    let received = '';
    const log: string[] = [];
    const turn = stoppable(log);
    const body = sseBody({
      messageId: 'm',
      conversationId: 'c',
      events: turn.events,
      coalesceMs: 60_000,
      onTextWritten: (n) => counts.push(n),
      onCancel: () => turn.controller.abort(),
    });
    const reader = body.getReader();
    const decoder = new TextDecoder();
    // The first token goes out at once; the following ones wait for a window that never ends.
    while (!received.includes('text-delta')) received += decoder.decode((await reader.read()).value);
    await sleep(40);
    await reader.cancel();
    const shown = frames(received)
      .filter((f) => (f as { type?: string }).type === 'text-delta')
      .map((f) => (f as { delta: string }).delta)
      .join('');
    expect(shown).toBe('w0 ');
    expect(counts).toEqual([shown.length]);
    expect(log).toContain('stored how it ended');
  });

  it('does not count a write that waits unread in the queue when the reader goes', async () => {
    const counts: number[] = [];
    let received = '';
    const turn = stoppable([]);
    const body = sseBody({
      messageId: 'm',
      conversationId: 'c',
      events: turn.events,
      coalesceMs: 0,
      onTextWritten: (n) => counts.push(n),
      onCancel: () => turn.controller.abort(),
    });
    const reader = body.getReader();
    const decoder = new TextDecoder();
    while (!received.includes('text-delta')) received += decoder.decode((await reader.read()).value);
    // The body reads ahead: the next token is written into the queue, where nobody takes it.
    await sleep(40);
    await reader.cancel();
    const shown = frames(received)
      .filter((f) => (f as { type?: string }).type === 'text-delta')
      .map((f) => (f as { delta: string }).delta)
      .join('');
    expect(counts.at(-1)).toBe(shown.length);
  });
});

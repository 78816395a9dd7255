import type { StreamChunk } from './types';

export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

/**
 * A tiny incremental Server-Sent Events parser (WHATWG rules: CR, LF or CRLF line ends,
 * multi-line `data`, comments). Own code rather than a dependency so the browser bundle stays
 * small and chunk boundaries anywhere — even between CR and LF — are handled.
 */
export function createSseParser(onEvent: (event: SseEvent) => void) {
  let buffer = '';
  let data: string[] = [];
  let eventName: string | undefined;
  let lastId: string | undefined;

  const dispatch = () => {
    if (data.length > 0) onEvent({ event: eventName, data: data.join('\n'), id: lastId });
    data = [];
    eventName = undefined;
  };

  const processLine = (line: string) => {
    if (line === '') return dispatch();
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') eventName = value;
    else if (field === 'id') lastId = value;
  };

  return {
    feed(text: string) {
      buffer += text;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== '\n' && c !== '\r') continue;
        // A CR at the very end may be the first half of a CRLF split across chunks.
        if (c === '\r' && i === buffer.length - 1) break;
        processLine(buffer.slice(start, i));
        if (c === '\r' && buffer[i + 1] === '\n') i++;
        start = i + 1;
      }
      buffer = buffer.slice(start);
    },
    /** The stream ended: flush what is left, leniently (a last event without a blank line still counts). */
    end() {
      if (buffer !== '') {
        processLine(buffer.replace(/\r$/, ''));
        buffer = '';
      }
      dispatch();
    },
  };
}

export interface ConsumeResult {
  /** The server sent the terminating `data: [DONE]`. */
  sawDone: boolean;
}

/**
 * Reads a UI message stream (SSE text in pieces) and hands each JSON chunk to `onChunk`.
 * Lines that are not JSON are skipped: one bad event must not lose the rest of the answer.
 */
export async function consumeUiMessageStream(
  source: AsyncIterable<string>,
  onChunk: (chunk: StreamChunk) => void,
): Promise<ConsumeResult> {
  let sawDone = false;
  const parser = createSseParser(({ data }) => {
    const trimmed = data.trim();
    if (trimmed === '') return;
    if (trimmed === '[DONE]') {
      sawDone = true;
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      return;
    }
    if (parsed && typeof parsed === 'object' && typeof (parsed as { type?: unknown }).type === 'string') {
      onChunk(parsed as StreamChunk);
    }
  });
  for await (const text of source) parser.feed(text);
  parser.end();
  return { sawDone };
}

/** Decodes a fetch body into text pieces (UTF-8 safe across chunk boundaries). */
export async function* readBodyText(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value) yield decoder.decode(value, { stream: true });
    }
    const rest = decoder.decode();
    if (rest) yield rest;
  } finally {
    reader.releaseLock();
  }
}

/** Splits a whole SSE text into chunks (for tests and recorded streams). */
export function parseUiMessageStreamText(text: string): { chunks: StreamChunk[]; sawDone: boolean } {
  const chunks: StreamChunk[] = [];
  let sawDone = false;
  const parser = createSseParser(({ data }) => {
    const trimmed = data.trim();
    if (trimmed === '[DONE]') {
      sawDone = true;
      return;
    }
    try {
      const parsed = JSON.parse(trimmed) as StreamChunk;
      if (parsed && typeof parsed.type === 'string') chunks.push(parsed);
    } catch {
      /* skipped like in the live reader */
    }
  });
  parser.feed(text);
  parser.end();
  return { chunks, sawDone };
}

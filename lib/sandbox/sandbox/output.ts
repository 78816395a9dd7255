/**
 * Keeps the first `headBytes` and the last `tailBytes` of a stream and counts the rest: memory stays
 * bounded by the two sizes whatever the stream's length (the tail is one ring buffer, allocated
 * when the head is full), and every byte is copied at most twice.
 */
export class HeadTail {
  private readonly head: Buffer[] = [];
  private headLen = 0;
  private ring: Buffer | null = null;
  private ringPos = 0;
  private ringFilled = 0;
  /** Every byte pushed, kept or not. */
  total = 0;

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headLen < this.headBytes) {
      const room = this.headBytes - this.headLen;
      const part = rest.length > room ? rest.subarray(0, room) : rest;
      this.head.push(Buffer.from(part));
      this.headLen += part.length;
      rest = rest.subarray(part.length);
    }
    if (!rest.length || this.tailBytes <= 0) return;
    this.ring ??= Buffer.alloc(this.tailBytes);
    // Only the last tailBytes of a large chunk can survive.
    if (rest.length > this.tailBytes) rest = rest.subarray(rest.length - this.tailBytes);
    let off = 0;
    while (off < rest.length) {
      const n = Math.min(rest.length - off, this.tailBytes - this.ringPos);
      rest.copy(this.ring, this.ringPos, off, off + n);
      this.ringPos = (this.ringPos + n) % this.tailBytes;
      off += n;
    }
    this.ringFilled = Math.min(this.tailBytes, this.ringFilled + rest.length);
  }

  /** Bytes dropped between the head and the tail. */
  get cut(): number {
    return this.total - this.headLen - this.ringFilled;
  }

  private tail(): Buffer {
    if (!this.ring || !this.ringFilled) return Buffer.alloc(0);
    if (this.ringFilled < this.tailBytes) return this.ring.subarray(0, this.ringFilled);
    return Buffer.concat([this.ring.subarray(this.ringPos), this.ring.subarray(0, this.ringPos)]);
  }

  /** Head and tail as text, with a marker where bytes were cut. */
  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = this.tail().toString('utf8');
    if (!this.cut) return head + tail;
    return `${head}\n[... ${this.cut.toLocaleString('en')} bytes cut ...]\n${tail}`;
  }
}

export interface TranscriptChunk {
  stream: 'stdout' | 'stderr';
  text: string;
}

/**
 * stdout and stderr in the order they came, bounded like HeadTail: the first `headBytes` and the
 * last `tailBytes` of both streams together, a marker chunk where the middle was cut.
 * Consecutive chunks of one stream are merged; each stream is decoded on its own, so a character
 * split between two reads stays whole.
 */
export class Transcript {
  private readonly head: Array<{ stream: TranscriptChunk['stream']; bufs: Buffer[] }> = [];
  private headLen = 0;
  /** The tail: pieces in order, each one stream's; the first may be cut at its front. */
  private readonly tail: Array<{ stream: TranscriptChunk['stream']; buf: Buffer }> = [];
  private tailStart = 0;
  private tailLen = 0;
  private cutBytes = 0;

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {}

  push(stream: TranscriptChunk['stream'], chunk: Buffer): void {
    let rest = chunk;
    if (this.headLen < this.headBytes) {
      const part = Buffer.from(rest.subarray(0, this.headBytes - this.headLen));
      const last = this.head[this.head.length - 1];
      if (last?.stream === stream) last.bufs.push(part);
      else this.head.push({ stream, bufs: [part] });
      this.headLen += part.length;
      rest = rest.subarray(part.length);
    }
    if (!rest.length || this.tailBytes <= 0) {
      this.cutBytes += rest.length;
      return;
    }
    if (rest.length > this.tailBytes) {
      this.cutBytes += rest.length - this.tailBytes;
      rest = rest.subarray(rest.length - this.tailBytes);
    }
    this.tail.push({ stream, buf: Buffer.from(rest) });
    this.tailLen += rest.length;
    // Whole pieces leave the front while over; the first one left may be cut at its front.
    while (this.tailLen > this.tailBytes) {
      const first = this.tail[this.tailStart];
      const over = this.tailLen - this.tailBytes;
      if (first.buf.length <= over) {
        this.tailStart++;
        this.tailLen -= first.buf.length;
        this.cutBytes += first.buf.length;
      } else {
        first.buf = first.buf.subarray(over);
        this.tailLen -= over;
        this.cutBytes += over;
      }
    }
    // Compacted now and then, so the array holds about what is kept.
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail.splice(0, this.tailStart);
      this.tailStart = 0;
    }
  }

  /** The chunks, each stream decoded as UTF-8, with `[... N bytes cut ...]` where the middle was cut. */
  chunks(): TranscriptChunk[] {
    const runs: Array<{ stream: TranscriptChunk['stream']; bufs: Buffer[] }> = this.head.map((h) => ({ stream: h.stream, bufs: [...h.bufs] }));
    const add = (stream: TranscriptChunk['stream'], buf: Buffer) => {
      const last = runs[runs.length - 1];
      if (last?.stream === stream) last.bufs.push(buf);
      else runs.push({ stream, bufs: [buf] });
    };
    const kept = this.tail.slice(this.tailStart);
    if (this.cutBytes) add(kept[0]?.stream ?? runs[runs.length - 1]?.stream ?? 'stdout', Buffer.from(`\n[... ${this.cutBytes.toLocaleString('en')} bytes cut ...]\n`));
    for (const t of kept) add(t.stream, t.buf);
    return runs.map((r) => ({ stream: r.stream, text: Buffer.concat(r.bufs).toString('utf8') })).filter((c) => c.text.length);
  }
}

const ESC = 0x1b;

/**
 * Text without ANSI escape sequences (colours, cursor moves, titles, hyperlinks): CSI (`ESC [` or
 * U+009B, parameters, a final byte), OSC/DCS/SOS/PM/APC strings (up to BEL or `ESC \`) and
 * two-or-more-character `ESC` sequences. One pass: every character is looked at a bounded
 * number of times, whatever the input (a megabyte of `ESC [` without an end included): an
 * unterminated string's end is searched for once and remembered.
 */
export function stripAnsi(text: string): string {
  if (text.indexOf('\x1b') < 0 && text.indexOf('\u009b') < 0) return text;
  const n = text.length;
  let out = '';
  let from = 0;
  // The first string terminator (BEL or ESC \) found so far, and how far the text was searched:
  // each character is searched once, so unterminated strings cost no more than one pass.
  let termAt = -1;
  let searched = 0;
  const nextTerminator = (i: number): number => {
    if (termAt >= i) return termAt;
    for (let j = Math.max(i, searched); j < n; j++) {
      const c = text.charCodeAt(j);
      if (c === 0x07 || (c === ESC && text.charCodeAt(j + 1) === 0x5c)) {
        searched = j + 1;
        termAt = j;
        return j;
      }
    }
    searched = n;
    return -1;
  };
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c !== ESC && c !== 0x9b) {
      i++;
      continue;
    }
    out += text.slice(from, i);
    let j = i + 1;
    const kind = c === 0x9b ? 0x5b : text.charCodeAt(j);
    if (c === 0x9b || kind === 0x5b) {
      // CSI: parameters 0x30-0x3F, intermediates 0x20-0x2F, one final byte 0x40-0x7E.
      if (c !== 0x9b) j++;
      while (j < n && text.charCodeAt(j) >= 0x30 && text.charCodeAt(j) <= 0x3f) j++;
      while (j < n && text.charCodeAt(j) >= 0x20 && text.charCodeAt(j) <= 0x2f) j++;
      if (j < n && text.charCodeAt(j) >= 0x40 && text.charCodeAt(j) <= 0x7e) j++;
    } else if (kind === 0x5d || kind === 0x50 || kind === 0x58 || kind === 0x5e || kind === 0x5f) {
      // OSC, DCS, SOS, PM, APC: up to BEL or ESC \; without one, only the introducer goes.
      const t = nextTerminator(j + 1);
      if (t >= 0) j = text.charCodeAt(t) === 0x07 ? t + 1 : t + 2;
      else j += 1;
    } else if (j < n) {
      // ESC, intermediates, one final byte.
      while (j < n && text.charCodeAt(j) >= 0x20 && text.charCodeAt(j) <= 0x2f) j++;
      if (j < n && text.charCodeAt(j) >= 0x30 && text.charCodeAt(j) <= 0x7e) j++;
    }
    i = j;
    from = j;
  }
  return out + text.slice(from);
}

/**
 * Passes a stream on but for its end mark (`\0@@eof` and the caller's secret): the last bytes
 * that could be the mark's beginning are held back until the next chunk shows they are not.
 * Linear in the output: each byte is looked at a bounded number of times.
 */
export class EndMark {
  private readonly mark: Buffer;
  private held: Buffer = Buffer.alloc(0);
  seen = false;

  constructor(secret: string) {
    this.mark = Buffer.from(`\0@@eof${secret}`);
  }

  /** What of `chunk` (and of what was held) is output. */
  push(chunk: Buffer): Buffer {
    if (this.seen) return Buffer.alloc(0);
    const buf = this.held.length ? Buffer.concat([this.held, chunk]) : chunk;
    const at = buf.indexOf(this.mark);
    if (at >= 0) {
      this.seen = true;
      this.held = Buffer.alloc(0);
      return buf.subarray(0, at);
    }
    // Hold back only a tail that is a beginning of the mark: it starts at the last NUL (the mark
    // holds one, first), within the mark's length of the end.
    const window = Math.max(0, buf.length - this.mark.length + 1);
    const nul = buf.subarray(window).lastIndexOf(0);
    const from = nul >= 0 ? window + nul : -1;
    const keep = from >= 0 && this.mark.subarray(0, buf.length - from).equals(buf.subarray(from)) ? buf.length - from : 0;
    this.held = keep ? Buffer.from(buf.subarray(buf.length - keep)) : Buffer.alloc(0);
    return keep ? buf.subarray(0, buf.length - keep) : buf;
  }

  /** What is held back, given up once the stream has ended without the mark. */
  rest(): Buffer {
    const r = this.held;
    this.held = Buffer.alloc(0);
    return r;
  }
}

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

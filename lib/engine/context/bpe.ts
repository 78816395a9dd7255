/**
 * Byte-pair counting in time linear in the text, for any text.
 *
 * gpt-tokenizer (the vocabularies and the pre-token regexes come from it) merges one pre-token
 * in time quadratic in its length, and each rank lookup decodes bytes to a string: 100,000
 * letters without a space take 25 s, 1 MB of base64 close to a second. This counter runs the same
 * algorithm (tiktoken's: split by the regex, then merge the lowest-ranked adjacent pair until none
 * is left) on bytes held as a latin1 string, with pair ranks in typed tables; and it merges a
 * pre-token longer than PIECE bytes in pieces that it joins only where the join is provably exact:
 *
 * - the encoding of a piece is the BPE of that piece, and any prefix of a BPE encoding is the BPE
 *   of its own bytes (no merge ever crossed one of its token boundaries);
 * - two BPE encodings joined where the last token of the left and the first of the right are a
 *   "compatible" pair (the BPE of their two tokens' bytes is exactly those two tokens) are the BPE
 *   of the joined bytes (the property github.com/github/rust-gems `bpe` builds its linear encoder
 *   on, Corollary IIIa there).
 *
 * So the count of a long pre-token is exact whenever every join is compatible; a join that is not
 * moves the cut one token back and tries again, and after too many retries the pre-token counts
 * as its byte length, which no BPE encoding exceeds (every token holds at least one byte). Either
 * way the count is never below the exact one, so a budget built on it stays on the safe side.
 */

/** Pre-tokens up to this many bytes are merged whole: the quadratic merge is cheap at this size. */
export const PIECE = 128;
/** Tokens of a piece nearest its cut end are re-encoded with the next piece: they saw a false end. */
const BACK = 3;

export interface Vocabulary {
  /** Rank → the token's bytes as a latin1 string (holes where a rank is unused). */
  readonly bytes: readonly (string | undefined)[];
  /** Bytes (latin1 string) → rank. */
  readonly rank: ReadonlyMap<string, number>;
  /** Byte value → the rank of its one-byte token. */
  readonly byte: Int32Array;
  /** The encoding's pre-token regex (global, unicode). */
  readonly split: RegExp;
  /** Two adjacent bytes → the rank of their two-byte token, or -1. */
  readonly bytePairs: Int32Array;
  /** Two adjacent tokens → the rank of their bytes joined (-1: none), as met. */
  readonly pairs: PairTable;
}

/** gpt-tokenizer's rank table: rank → text, or the raw bytes where the token is not valid UTF-8. */
export function vocabularyOf(decoder: readonly (string | readonly number[] | undefined)[], split: RegExp): Vocabulary {
  const bytes: (string | undefined)[] = new Array(decoder.length);
  const rank = new Map<string, number>();
  decoder.forEach((v, i) => {
    if (v === undefined) return;
    const b = typeof v === 'string' ? latin1Of(v) : String.fromCharCode(...v);
    bytes[i] = b;
    rank.set(b, i);
  });
  const byte = new Int32Array(256);
  for (let i = 0; i < 256; i++) byte[i] = rank.get(String.fromCharCode(i)) ?? -1;
  const bytePairs = new Int32Array(65536);
  for (let i = 0; i < 65536; i++) bytePairs[i] = rank.get(String.fromCharCode(i >> 8, i & 255)) ?? -1;
  const flags = split.flags.includes('g') ? split.flags : `${split.flags}g`;
  return { bytes, rank, byte, bytePairs, split: new RegExp(split.source, flags), pairs: new PairTable() };
}

// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/;

/** UTF-8 bytes of text, one char per byte. */
export function latin1Of(text: string): string {
  return ASCII.test(text) ? text : Buffer.from(text, 'utf8').toString('latin1');
}

// A module binding, not a global: globals are slow to reach inside a vm context (jest runs one).
const imul = Math.imul;

/**
 * An open-addressing table (a, b) → rank in typed arrays: a merge looks up two pairs per step, and
 * a Map keyed by numbers past 2^31 (or a Map per left token) costs several times more. It forgets
 * everything when three quarters full, so it never holds more than SLOTS entries.
 */
class PairTable {
  private static readonly SLOTS = 1 << 20;
  private readonly left = new Int32Array(PairTable.SLOTS).fill(-1);
  private readonly right = new Int32Array(PairTable.SLOTS);
  private readonly value = new Int32Array(PairTable.SLOTS);
  private size = 0;

  /** The stored rank (-1: not a token), or -2 when the pair was never met. */
  get(a: number, b: number): number {
    const mask = PairTable.SLOTS - 1;
    for (let i = (imul(a, 0x9e3779b1) ^ imul(b, 0x85ebca6b)) & mask; ; i = (i + 1) & mask) {
      const l = this.left[i];
      if (l === -1) return -2;
      if (l === a && this.right[i] === b) return this.value[i];
    }
  }

  set(a: number, b: number, rank: number): void {
    const mask = PairTable.SLOTS - 1;
    if (this.size >= (PairTable.SLOTS >> 2) * 3) {
      this.left.fill(-1);
      this.size = 0;
    }
    let i = (imul(a, 0x9e3779b1) ^ imul(b, 0x85ebca6b)) & mask;
    while (this.left[i] !== -1) i = (i + 1) & mask;
    this.left[i] = a;
    this.right[i] = b;
    this.value[i] = rank;
    this.size++;
  }
}

/** No pair: above every rank. */
const NONE = 0x7fffffff;

function pairRank(v: Vocabulary, a: number, b: number): number {
  let r = v.pairs.get(a, b);
  if (r === -2) {
    r = v.rank.get(v.bytes[a]! + v.bytes[b]!) ?? -1;
    v.pairs.set(a, b, r);
  }
  return r < 0 ? NONE : r;
}

// Scratch for merge (never re-entered): the parts as a linked list over the byte positions.
let scratch = { ids: new Int32Array(0), next: new Int32Array(0), prev: new Int32Array(0), ranks: new Int32Array(0) };

/**
 * tiktoken's merge of one short byte string: token ranks, in order. The rank of a pair is the
 * id of the token it makes, so a part is known by its id alone. Quadratic in the length (each
 * step looks for the lowest pair), which callers keep to a few hundred bytes.
 */
function merge(v: Vocabulary, b: string): number[] {
  const whole = v.rank.get(b);
  if (whole !== undefined) return [whole];
  const n = b.length;
  if (scratch.ids.length < n) {
    const size = Math.max(n, 256);
    scratch = { ids: new Int32Array(size), next: new Int32Array(size), prev: new Int32Array(size), ranks: new Int32Array(size) };
  }
  const { ids, next, prev, ranks } = scratch;
  for (let i = 0; i < n; i++) {
    ids[i] = v.byte[b.charCodeAt(i)];
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  for (let i = 0; i + 1 < n; i++) {
    const r = v.bytePairs[(b.charCodeAt(i) << 8) | b.charCodeAt(i + 1)];
    ranks[i] = r < 0 ? NONE : r;
  }
  ranks[n - 1] = NONE;
  for (;;) {
    let min = NONE;
    let at = -1;
    // Ties go to the leftmost pair, as in tiktoken.
    for (let i = 0; i !== -1; i = next[i]) {
      if (ranks[i] < min) {
        min = ranks[i];
        at = i;
      }
    }
    if (at < 0) break;
    ids[at] = min;
    const after = next[next[at]];
    next[at] = after;
    if (after !== -1) prev[after] = at;
    ranks[at] = after === -1 ? NONE : pairRank(v, min, ids[after]);
    const before = prev[at];
    if (before !== -1) ranks[before] = pairRank(v, ids[before], min);
  }
  const out: number[] = [];
  for (let i = 0; i !== -1; i = next[i]) out.push(ids[i]);
  return out;
}

const compatible = new WeakMap<Vocabulary, Map<number, boolean>>();

/** Is [a, b] the BPE of a's bytes followed by b's? */
function isCompatible(v: Vocabulary, a: number, b: number): boolean {
  let memo = compatible.get(v);
  if (!memo) compatible.set(v, (memo = new Map()));
  const key = a * 0x400000 + b;
  let ok = memo.get(key);
  if (ok === undefined) {
    const m = merge(v, v.bytes[a]! + v.bytes[b]!);
    ok = m.length === 2 && m[0] === a && m[1] === b;
    if (memo.size > 200_000) memo.clear();
    memo.set(key, ok);
  }
  return ok;
}

/**
 * The count of one long pre-token (bytes), a piece at a time: `step` merges pieces until about
 * `budget` bytes were merged; `done` once the whole pre-token is counted.
 */
class LongCount {
  private readonly kept: number[] = [];
  private cut = 0;
  private size = PIECE;
  private lastPiece = '';
  private lastIds: number[] = [];
  // A failed join costs one more merge; this many for the whole pre-token is plenty (they are rare).
  private retries: number;
  result: number | undefined;

  constructor(
    private readonly v: Vocabulary,
    private readonly b: string,
  ) {
    this.retries = 16 + (b.length >> 6);
  }

  step(budget: number): number {
    const { v, b, kept } = this;
    let spent = 0;
    while (this.cut < b.length) {
      if (spent >= budget) return spent;
      const end = Math.min(b.length, this.cut + this.size);
      // Runs of one character repeat the same piece: its merge is reused.
      const piece = b.slice(this.cut, end);
      if (piece !== this.lastPiece) {
        this.lastIds = merge(v, piece);
        this.lastPiece = piece;
      }
      const ids = this.lastIds;
      spent += end - this.cut;
      if (kept.length && !isCompatible(v, kept[kept.length - 1], ids[0])) {
        if (--this.retries < 0) {
          this.result = b.length;
          return spent;
        }
        // The tokens before the cut are the BPE of their bytes, but the join is not: move the cut
        // back one token and merge a longer piece from there.
        this.cut -= v.bytes[kept.pop()!]!.length;
        this.size = Math.min(this.size * 2, MAX_PIECE);
        continue;
      }
      this.size = PIECE;
      const take = end === b.length ? ids.length : Math.max(1, ids.length - BACK);
      for (let i = 0; i < take; i++) {
        kept.push(ids[i]);
        this.cut += v.bytes[ids[i]]!.length;
      }
    }
    this.result = kept.length;
    return spent;
  }
}

/** A piece after a failed join grows up to this (its merge stays a few milliseconds). */
const MAX_PIECE = 2048;

/** Tokens of one pre-token given as bytes; never fewer than its exact BPE count. */
export function countBytes(v: Vocabulary, b: string): number {
  if (b.length <= PIECE) return merge(v, b).length;
  const long = new LongCount(v, b);
  long.step(Infinity);
  return long.result!;
}

/**
 * Counts text in slices: `step()` counts pre-tokens until about `budget` bytes were merged and says
 * whether it is done, so a caller can give the event loop a turn between slices.
 */
export class Counter {
  total = 0;
  private readonly re: RegExp;
  private long: LongCount | undefined;
  constructor(
    private readonly v: Vocabulary,
    private readonly text: string,
    private readonly cache: Map<string, number>,
  ) {
    this.re = new RegExp(v.split.source, v.split.flags);
  }

  step(budget = Infinity): boolean {
    let spent = 0;
    for (;;) {
      if (this.long) {
        spent += this.long.step(budget - spent);
        if (this.long.result === undefined) return false;
        this.total += this.long.result;
        this.long = undefined;
        if (spent >= budget) return false;
      }
      const m = this.re.exec(this.text);
      if (!m) return true;
      const piece = m[0];
      if (piece.length === 0) {
        this.re.lastIndex++;
        continue;
      }
      let n = this.cache.get(piece);
      if (n === undefined) {
        const b = latin1Of(piece);
        if (b.length > PIECE) {
          this.long = new LongCount(this.v, b);
          continue;
        }
        n = merge(this.v, b).length;
        if (piece.length <= 64) {
          if (this.cache.size >= 100_000) this.cache.clear();
          this.cache.set(piece, n);
        }
        spent += b.length;
      } else spent += 1;
      this.total += n;
      if (spent >= budget) return false;
    }
  }
}

/** Tokens of text, counted as plain text (special-token markers are just characters). */
export function countText(v: Vocabulary, text: string, cache: Map<string, number>): number {
  const c = new Counter(v, text, cache);
  c.step();
  return c.total;
}

import type { TokenizerName } from '../../core/models';
import { Counter, countText, vocabularyOf, type Vocabulary } from './bpe';

/** Counts tokens of text with one BPE vocabulary. */
export interface Tokenizer {
  readonly name: TokenizerName;
  /** Tokens of text, in time linear in its length, never fewer than the exact count. */
  count(text: string): number;
  /**
   * The same count, giving the event loop a turn every few milliseconds of work: for what may be
   * large (a request, a tool result, a script's output).
   */
  countAsync(text: string): Promise<number>;
}

type Encoding = { countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number };

// User text may hold "<|endoftext|>" and the like: it is text to count, never a control token.
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** The cache keeps its keys alive: it is bounded by the characters it holds, not by entries. */
const CACHE_MAX_CHARS = 16_000_000;
/** Texts up to this many characters are counted in one go (well under a millisecond of work). */
const SYNC_CHARS = 32_000;
/** Bytes merged between two turns of the event loop (a few milliseconds). */
const SLICE_BYTES = 64_000;

class CachedTokenizer implements Tokenizer {
  // Insertion order doubles as recency: a hit is moved to the end, the oldest entry goes first.
  private readonly cache = new Map<string, number>();
  private chars = 0;
  // Short pre-tokens repeat (words): their counts are kept apart from whole texts'.
  private readonly pieces = new Map<string, number>();

  constructor(
    readonly name: TokenizerName,
    private readonly vocabulary: Vocabulary | null,
    private readonly encoding: Encoding,
  ) {}

  get linear(): boolean {
    return this.vocabulary !== null;
  }

  count(text: string): number {
    if (!text) return 0;
    const hit = this.hit(text);
    if (hit !== undefined) return hit;
    return this.remember(text, this.vocabulary ? countText(this.vocabulary, text, this.pieces) : this.encoding.countTokens(text, AS_TEXT));
  }

  async countAsync(text: string): Promise<number> {
    if (!text || text.length <= SYNC_CHARS || !this.vocabulary) return this.count(text);
    const hit = this.hit(text);
    if (hit !== undefined) return hit;
    const counter = new Counter(this.vocabulary, text, this.pieces);
    while (!counter.step(SLICE_BYTES)) await new Promise<void>((resolve) => setImmediate(resolve));
    return this.remember(text, counter.total);
  }

  private hit(text: string): number | undefined {
    const hit = this.cache.get(text);
    if (hit !== undefined) {
      this.cache.delete(text);
      this.cache.set(text, hit);
    }
    return hit;
  }

  private remember(text: string, n: number): number {
    if (text.length > CACHE_MAX_CHARS / 8 || this.cache.has(text)) return n;
    this.cache.set(text, n);
    this.chars += text.length;
    for (const oldest of this.cache.keys()) {
      if (this.chars <= CACHE_MAX_CHARS) break;
      this.cache.delete(oldest);
      this.chars -= oldest.length;
    }
    return n;
  }
}

type RankTable = readonly (string | readonly number[] | undefined)[];

/**
 * The vocabulary inside gpt-tokenizer's encoding (its rank table is not public API). Null when a
 * version of the library keeps it elsewhere: counting then falls back to the library's own,
 * exact but quadratic in one pre-token — a test fails first, so an upgrade cannot do it quietly.
 */
function rankTableOf(module: object): RankTable | null {
  // The module's default export is the encoding (one level deeper when CommonJS is wrapped).
  type Shape = { default?: Shape; bytePairEncodingCoreProcessor?: { bytePairRankDecoder?: unknown } };
  for (let m: Shape | undefined = module as Shape, depth = 0; m && depth < 3; m = m.default, depth++) {
    const table = m.bytePairEncodingCoreProcessor?.bytePairRankDecoder;
    if (Array.isArray(table)) return table as RankTable;
  }
  return null;
}

const loaded = new Map<TokenizerName, Promise<CachedTokenizer>>();

/**
 * Loads a vocabulary once per process. Each costs 100–300 ms and 20–70 MB, so only the ones a
 * configured profile uses are ever loaded (the server warms them at start).
 */
export function loadTokenizer(name: TokenizerName): Promise<Tokenizer> {
  let p = loaded.get(name);
  if (!p) {
    // Literal specifiers, so the server build knows both files; neither loads until asked for.
    const encoding: Promise<Encoding> =
      name === 'o200k_base' ? import('gpt-tokenizer/encoding/o200k_base') : import('gpt-tokenizer/encoding/cl100k_base');
    p = Promise.all([encoding, import('gpt-tokenizer/encodingParams/constants')]).then(([e, c]) => {
      const table = rankTableOf(e);
      const split = name === 'o200k_base' ? c.O200K_TOKEN_SPLIT_REGEX : c.CL100K_TOKEN_SPLIT_REGEX;
      return new CachedTokenizer(name, table ? vocabularyOf(table, split) : null, e);
    });
    p.catch(() => loaded.delete(name));
    loaded.set(name, p);
  }
  return p;
}

/** Whether the linear counter runs (the library's internals were found), for the tests. */
export async function isLinear(name: TokenizerName): Promise<boolean> {
  await loadTokenizer(name);
  return (await loaded.get(name)!).linear;
}

/**
 * The vocabulary of OpenAI's models where it is public. Any other model's is unknown here:
 * cl100k_base, whose smaller vocabulary counts more tokens than o200k_base for the same text,
 * errs on the side of fitting.
 */
export function tokenizerFor(model: string, override?: TokenizerName): TokenizerName {
  if (override) return override;
  const name = model.toLowerCase().replace(/^openai\//, '');
  if (/^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)/.test(name)) return 'o200k_base';
  return 'cl100k_base';
}

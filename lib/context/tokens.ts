import type { TokenizerName } from '../models';

/** Counts tokens of text with one BPE vocabulary. */
export interface Tokenizer {
  readonly name: TokenizerName;
  count(text: string): number;
}

type Encoding = { countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number };

// User text may hold "<|endoftext|>" and the like: it is text to count, never a control token.
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** The cache keeps its keys alive: it is bounded by the characters it holds, not by entries. */
const CACHE_MAX_CHARS = 4_000_000;

class CachedTokenizer implements Tokenizer {
  // Insertion order doubles as recency: a hit is moved to the end, the oldest entry goes first.
  private readonly cache = new Map<string, number>();
  private chars = 0;

  constructor(
    readonly name: TokenizerName,
    private readonly encoding: Encoding,
  ) {}

  count(text: string): number {
    if (!text) return 0;
    const hit = this.cache.get(text);
    if (hit !== undefined) {
      this.cache.delete(text);
      this.cache.set(text, hit);
      return hit;
    }
    const n = this.encoding.countTokens(text, AS_TEXT);
    if (text.length > CACHE_MAX_CHARS / 8) return n;
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

const loaded = new Map<TokenizerName, Promise<Tokenizer>>();

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
    p = encoding.then((e) => new CachedTokenizer(name, e));
    p.catch(() => loaded.delete(name));
    loaded.set(name, p);
  }
  return p;
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

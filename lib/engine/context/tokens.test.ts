import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import cl100kLib from 'gpt-tokenizer/encoding/cl100k_base';
import o200kLib from 'gpt-tokenizer/encoding/o200k_base';
import { isLinear, loadTokenizer, type Tokenizer } from './index';

// The library's own count: exact, and quadratic in one pre-token, so only for affordable sizes.
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const exact = { cl100k_base: (s: string) => cl100kLib.countTokens(s, AS_TEXT), o200k_base: (s: string) => o200kLib.countTokens(s, AS_TEXT) };

let tokenizers: Tokenizer[];
beforeAll(async () => {
  tokenizers = await Promise.all([loadTokenizer('cl100k_base'), loadTokenizer('o200k_base')]);
});

// A seeded generator, so a failure names inputs that can be made again.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
const letters = (n: number, r = rng(n)) => Array.from({ length: n }, () => String.fromCharCode(97 + Math.floor(r() * 26))).join('');
const minifiedJs = (() => {
  const file = readFileSync(path.join(process.cwd(), 'node_modules/next/dist/compiled/react-dom/cjs/react-dom-client.production.js'), 'utf8').replace(/\s+/g, ' ');
  return (n: number) => file.repeat(Math.ceil(n / file.length)).slice(0, n);
})();

/** CPU time of the counting thread, which a loaded machine does not inflate the way it does wall time. */
function cpuMs(f: () => void): number {
  const before = process.cpuUsage();
  f();
  const d = process.cpuUsage(before);
  return (d.user + d.system) / 1000;
}

describe('linear token counting', () => {
  it('runs the linear counter on both vocabularies (the library internals it reads are there)', async () => {
    expect(await isLinear('cl100k_base')).toBe(true);
    expect(await isLinear('o200k_base')).toBe(true);
  });

  // Long pre-tokens (runs without whitespace) of every kind the issue names, and the awkward
  // ones: whitespace runs (whose BPE depends on the run's end), multi-byte letters, emoji.
  const cases: [string, string][] = [
    ['one letter', 'a'.repeat(20_000)],
    ['"="', '='.repeat(20_000)],
    ['random letters', letters(20_000)],
    ['base64', randomBytes(15_000).toString('base64')],
    ['minified JS', minifiedJs(100_000)],
    ['spaces', `${' '.repeat(4_999)}x`],
    ['newlines and tabs', '\n\t '.repeat(3_000)],
    ['upper case', 'ABCDEFGHIJ'.repeat(2_000)],
    ['CJK', '漢字かな交じり文'.repeat(400)],
    ['emoji', '😀🎉'.repeat(800)],
    ['mixed', `Ab${letters(300)}ÄÖü${'=-'.repeat(100)}\n`.repeat(30)],
    ['prose', 'The quick brown fox jumps over the lazy dog; 12345 times. '.repeat(500)],
    ['special markers as text', 'a <|endoftext|> b <|im_start|>'.repeat(100)],
  ];
  it.each(cases)('counts %s exactly as the library does (where the library is still affordable)', (_, text) => {
    for (const t of tokenizers) expect(t.count(text)).toBe(exact[t.name](text));
  });

  it('never counts fewer tokens than the exact count, over many generated pre-tokens of every size', () => {
    const r = rng(7);
    const alphabets = ['ab', 'abc', 'a', 'xyz', 'aaaab', '=-', '= ', ' \n', 'ABab', 'aé', '漢字', 'a1', "a's", 'QWERTYqwerty', '+/=Aa0'];
    let equal = 0;
    let total = 0;
    for (let i = 0; i < 150; i++) {
      const alphabet = alphabets[i % alphabets.length];
      const n = 100 + Math.floor(r() * 1_500);
      let s = '';
      // Runs of one character mixed with random ones: what makes the merge order interesting.
      while (s.length < n) {
        const c = alphabet[Math.floor(r() * alphabet.length)];
        s += r() < 0.3 ? c.repeat(1 + Math.floor(r() * 200)) : c;
      }
      for (const t of tokenizers) {
        const want = exact[t.name](s);
        const got = t.count(s);
        expect({ input: i, got: got >= want }).toEqual({ input: i, got: true });
        total++;
        if (got === want) equal++;
      }
    }
    // The joins are exact by construction; the byte-length fallback stays the rare exception.
    expect(equal / total).toBeGreaterThan(0.95);
  });

  const megabyte: [string, () => string][] = [
    ['one letter', () => 'a'.repeat(1_000_000)],
    ['"="', () => '='.repeat(1_000_000)],
    ['random letters', () => letters(1_000_000)],
    ['base64', () => randomBytes(750_000).toString('base64')],
    ['minified JS', () => minifiedJs(1_000_000)],
    ['spaces', () => ' '.repeat(1_000_000)],
    ['CJK', () => '漢字かな交じり文'.repeat(125_000)],
  ];
  // A server has counted before (it warms its tokenizers at start): so has this process.
  beforeAll(() => {
    for (const t of tokenizers) t.count(`${letters(50_000, rng(5))} ${randomBytes(30_000).toString('base64')}`);
  });
  // Never below the exact count: the tests above, at sizes the library can still count, and the
  // joins' argument in bpe.ts; here the time, and the same count a slice at a time.
  // The bound is loose on purpose: a linear count takes a few hundred milliseconds, a quadratic one
  // minutes, and a loaded machine (other test workers, GC threads counted as the process's CPU)
  // must not turn the first into a failure.
  it.each(megabyte)('counts 1 MB of %s in seconds, not minutes', async (_, make) => {
    const text = make();
    for (const t of tokenizers) {
      let n = 0;
      const ms = cpuMs(() => (n = t.count(text)));
      expect({ tokenizer: t.name, ms: Math.round(ms), under5s: ms < 5_000 }).toMatchObject({ under5s: true });
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThanOrEqual(Buffer.byteLength(text));
    }
  });

  it('gives the event loop a turn every few milliseconds while it counts a megabyte', async () => {
    const t = tokenizers[0];
    const text = letters(1_000_000, rng(99));
    const started = performance.now();
    let last = started;
    let longest = 0;
    let ticks = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      ticks++;
    }, 5);
    const n = await t.countAsync(text);
    const total = performance.now() - started;
    clearInterval(timer);
    expect(n).toBe(t.count(text));
    // A blocked loop shows one gap as long as the whole count; a yielding one many short gaps.
    // Measured against the count's own length, so a loaded machine slows both alike.
    expect(ticks).toBeGreaterThan(3);
    expect(longest).toBeLessThan(Math.max(150, total / 3));
  });
});

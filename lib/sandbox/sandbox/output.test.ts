import { EndMark, stripAnsi, Transcript } from './output';

describe('stripAnsi', () => {
  it('removes colours, cursor moves, titles, hyperlinks and single ESC sequences, keeping the text', () => {
    expect(stripAnsi('\x1b[31mred\x1b[0m plain \x1b[1;32;4mbold\x1b[m')).toBe('red plain bold');
    expect(stripAnsi('a\x1b[2K\x1b[1Gb\x1b[?25lc\x1b[?25h')).toBe('abc');
    expect(stripAnsi('\x1b]0;window title\x07after')).toBe('after');
    expect(stripAnsi('\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ text')).toBe('link text');
    expect(stripAnsi('\x1bP1$r0m\x1b\\x')).toBe('x');
    expect(stripAnsi('\x1b(Bkeep\x1b7\x1b8\x1b=\x1bc')).toBe('keep');
    expect(stripAnsi('\u009b31mc1\u009b0m')).toBe('c1');
    expect(stripAnsi('tab\tnew\nline\r\n')).toBe('tab\tnew\nline\r\n');
    expect(stripAnsi('lone escape at the end \x1b')).toBe('lone escape at the end ');
    expect(stripAnsi('ünïcødé ✓ \x1b[33m⚠\x1b[0m')).toBe('ünïcødé ✓ ⚠');
  });

  it('stays linear on hostile input: a megabyte of unterminated sequences', () => {
    const cases = [
      '\x1b['.repeat(500_000),
      '\x1b]'.repeat(500_000),
      `${'\x1b]'.repeat(250_000)}\x07${'x'.repeat(10)}`,
      '\x1b[1;2;3;4;5;6;7;8'.repeat(60_000),
      '\x1bP'.repeat(500_000),
      `${'\x1b[31m'.repeat(100_000)}${'\x1b'.repeat(500_000)}`,
    ];
    for (const text of cases) {
      const started = performance.now();
      const out = stripAnsi(text);
      expect(performance.now() - started).toBeLessThan(500);
      expect(out).not.toContain('\x1b');
    }
    // An unterminated OSC takes only its introducer: the text after it stays.
    expect(stripAnsi('\x1b]no end here')).toBe('no end here');
  });
});

describe('Transcript', () => {
  it('keeps chunks in order, merging runs of one stream', () => {
    const t = new Transcript(1000, 1000);
    t.push('stdout', Buffer.from('a'));
    t.push('stdout', Buffer.from('b'));
    t.push('stderr', Buffer.from('E'));
    t.push('stdout', Buffer.from('c'));
    expect(t.chunks()).toEqual([
      { stream: 'stdout', text: 'ab' },
      { stream: 'stderr', text: 'E' },
      { stream: 'stdout', text: 'c' },
    ]);
  });

  it('is bounded to its head and tail whatever comes, marking the cut, and keeps characters whole', () => {
    const t = new Transcript(10, 10);
    t.push('stdout', Buffer.from('0123456789HEAD-OVER'));
    for (let i = 0; i < 100_000; i++) t.push(i % 2 ? 'stderr' : 'stdout', Buffer.from('x'));
    t.push('stderr', Buffer.from('TAIL-END!!'));
    const chunks = t.chunks();
    expect(chunks[0]).toEqual({ stream: 'stdout', text: '0123456789' });
    expect(chunks[chunks.length - 1].text.endsWith('TAIL-END!!')).toBe(true);
    expect(chunks.map((c) => c.text).join('')).toContain(`[... ${(9 + 100_000).toLocaleString('en')} bytes cut ...]`);
    const split = new Transcript(100, 100);
    const bytes = Buffer.from('é✓');
    for (const b of bytes) split.push('stdout', Buffer.from([b]));
    expect(split.chunks()).toEqual([{ stream: 'stdout', text: 'é✓' }]);
  });

  it('takes a flood of one-byte chunks in linear time', () => {
    const t = new Transcript(250_000, 250_000);
    const one = Buffer.from('y');
    const started = performance.now();
    for (let i = 0; i < 1_000_000; i++) t.push(i % 1000 ? 'stdout' : 'stderr', one);
    expect(performance.now() - started).toBeLessThan(5_000);
    const text = t.chunks().map((c) => c.text).join('');
    expect(Buffer.byteLength(text)).toBeLessThan(510_000);
  });
});

describe('EndMark', () => {
  const secret = '0123456789abcdef0123456789abcdef';
  const mark = Buffer.from(`\0@@eof${secret}`);
  const through = (chunks: Buffer[]) => {
    const m = new EndMark(secret);
    const out = chunks.map((c) => m.push(c));
    return { text: Buffer.concat([...out, m.rest()]), seen: m.seen };
  };

  it('passes output on whole and takes the mark off its end, wherever the chunks split it', () => {
    const output = Buffer.from('line one\n\0binary\0 and \0@@eo not the mark\nlast');
    const all = Buffer.concat([output, mark]);
    for (let a = 0; a <= all.length; a++) {
      for (let b = a; b <= all.length; b += 7) {
        const r = through([all.subarray(0, a), all.subarray(a, b), all.subarray(b)]);
        expect(r.seen).toBe(true);
        expect(r.text.equals(output)).toBe(true);
      }
    }
  });

  it('gives back what looked like the start of the mark when the stream ends without it', () => {
    const partial = Buffer.concat([Buffer.from('out'), mark.subarray(0, 20)]);
    const r = through([partial.subarray(0, 10), partial.subarray(10)]);
    expect(r.seen).toBe(false);
    expect(r.text.equals(partial)).toBe(true);
  });

  it('does not take a mark with another secret: a command cannot end the run early', () => {
    const forged = Buffer.from(`out\0@@eof${'f'.repeat(32)}more`);
    const r = through([forged]);
    expect(r.seen).toBe(false);
    expect(r.text.equals(forged)).toBe(true);
  });

  it('passes a megabyte of NULs and mark beginnings through whole', () => {
    const m = new EndMark(secret);
    const hostile = Buffer.from('\0@@eof0123'.repeat(100_000));
    let out = 0;
    for (let i = 0; i < hostile.length; i += 4096) out += m.push(hostile.subarray(i, i + 4096)).length;
    out += m.rest().length;
    expect(out).toBe(hostile.length);
  });
});

import { ansiClass, ansiRuns, PLAIN, stripAnsi } from './ansi';

const E = '\u001b';

describe('terminal colour codes', () => {
  it('turns SGR codes into styled runs and drops every other escape sequence', () => {
    const { runs, end } = ansiRuns(`${E}[1m${E}[32mPASS${E}[39m${E}[22m src/a.test.ts ${E}[31;1mFAIL${E}[0m plain`);
    expect(runs.map((r) => [r.text, ansiClass(r.style)])).toEqual([
      ['PASS', 'ansi-green ansi-bold'],
      [' src/a.test.ts ', ''],
      ['FAIL', 'ansi-red ansi-bold'],
      [' plain', ''],
    ]);
    expect(end).toEqual(PLAIN);
    // Cursor moves, erase, titles and hyperlinks (BEL or ESC \ ended), charset selection: gone.
    expect(stripAnsi(`a${E}[2K${E}[1Gb${E}]0;title${'\u0007'}c${E}]8;;http://x${E}\\link${E}]8;;${E}\\${E}(Bd${E}7e`)).toBe('abclinkde');
  });

  it('reads 256-colour and true-colour codes without taking their numbers for other codes', () => {
    const runs = ansiRuns(`${E}[38;5;9mred${E}[38;5;208morange${E}[38;2;1;31;4mrgb${E}[48;5;1mbg${E}[0m`).runs;
    expect(runs.map((r) => [r.text, r.style.fg, r.style.underline])).toEqual([
      ['red', 'red', false],
      // Colours the themes have no tone for keep the text's own colour; 2;1;31;4 is no underline.
      ['orangergbbg', null, false],
    ]);
  });

  it('goes on in the style a chunk ended in', () => {
    const first = ansiRuns(`${E}[33mwarn `);
    const second = ansiRuns(`still yellow${E}[m`, first.end);
    expect(second.runs).toEqual([{ text: 'still yellow', style: { ...PLAIN, fg: 'yellow' } }]);
    expect(second.end).toEqual(PLAIN);
  });

  it('keeps text that only looks like markup as text, and unended sequences do not swallow what follows', () => {
    expect(stripAnsi('<b onclick=x>&amp;</b>')).toBe('<b onclick=x>&amp;</b>');
    expect(stripAnsi(`a${E}]no end here`)).toBe('ano end here');
    expect(stripAnsi(`a${E}[12`)).toBe('a');
    expect(stripAnsi(`${E}${E}[31mx`)).toBe('x');
  });

  it('is linear on hostile input: megabytes of unended and endless sequences in well under a second each', () => {
    const cases = [`${E}]`.repeat(500_000), `${E}[`.repeat(500_000), `${E}[${'1;'.repeat(400_000)}m`, `${E}]${'x'.repeat(100)}\u0007`.repeat(10_000) + `${E}]`.repeat(200_000)];
    for (const text of cases) {
      const t = performance.now();
      ansiRuns(text);
      expect(performance.now() - t).toBeLessThan(2000);
    }
  });
});

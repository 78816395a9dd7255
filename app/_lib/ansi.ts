/**
 * Terminal output as text and styles: SGR colour codes (`ESC[31m`, `ESC[1;32m`, `ESC[38;5;9m`)
 * become styled runs, every other escape sequence (cursor moves, titles, hyperlinks) is dropped.
 * The result is plain strings and class names for React to render as text: no HTML is ever made
 * from the output. One pass over the text, each character looked at a bounded number of times:
 * linear in the output's size whatever it holds.
 */

/** The eight colours of a terminal, by SGR number (bright ones map onto them). */
export const ANSI_COLOURS = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'] as const;
export type AnsiColour = (typeof ANSI_COLOURS)[number];

export interface AnsiStyle {
  fg: AnsiColour | null;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
}

export interface AnsiRun {
  text: string;
  style: AnsiStyle;
}

export const PLAIN: AnsiStyle = Object.freeze({ fg: null, bold: false, dim: false, italic: false, underline: false });

const ESC = '\u001b';
/** How far an operating system command (`ESC ]` … BEL or `ESC \`) is looked for its end. */
const MAX_OSC = 512;
/** Parameters of one control sequence read at most (a longer one is dropped as it is). */
const MAX_PARAMS = 64;

/** The style after one SGR sequence's parameters (`1;31`, `0`, `38;5;196`); background colours are left out. */
export function applySgr(style: AnsiStyle, params: string): AnsiStyle {
  const codes = params === '' ? [0] : params.split(/[;:]/).slice(0, MAX_PARAMS).map((p) => (p === '' ? 0 : Number(p)));
  let s: AnsiStyle = { ...style };
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) s = { ...PLAIN };
    else if (c === 1) s.bold = true;
    else if (c === 2) s.dim = true;
    else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 22) s.bold = s.dim = false;
    else if (c === 23) s.italic = false;
    else if (c === 24) s.underline = false;
    else if (c >= 30 && c <= 37) s.fg = ANSI_COLOURS[c - 30]!;
    else if (c >= 90 && c <= 97) s.fg = ANSI_COLOURS[c - 90]!;
    else if (c === 39) s.fg = null;
    else if (c === 38 || c === 48) {
      // Extended colours: 5;n (256 colours) or 2;r;g;b. The first sixteen are the terminal's own;
      // the others have no colour of the page's themes, so the text keeps the default colour.
      const mode = codes[i + 1];
      if (mode === 5) {
        const n = codes[i + 2] ?? -1;
        if (c === 38) s.fg = n >= 0 && n < 8 ? ANSI_COLOURS[n]! : n >= 8 && n < 16 ? ANSI_COLOURS[n - 8]! : null;
        i += 2;
      } else if (mode === 2) {
        if (c === 38) s.fg = null;
        i += 4;
      } else i += 1;
    }
  }
  return s;
}

const sameStyle = (a: AnsiStyle, b: AnsiStyle) => a.fg === b.fg && a.bold === b.bold && a.dim === b.dim && a.italic === b.italic && a.underline === b.underline;

/**
 * The text's runs of one style, and the style it ends in (so the next chunk of the same stream
 * goes on in it). Escape sequences other than SGR are removed; a lone ESC is dropped.
 */
export function ansiRuns(text: string, start: AnsiStyle = PLAIN): { runs: AnsiRun[]; end: AnsiStyle } {
  const runs: AnsiRun[] = [];
  let style = start;
  let from = 0;
  const push = (t: string) => {
    if (!t) return;
    const last = runs[runs.length - 1];
    if (last && sameStyle(last.style, style)) last.text += t;
    else runs.push({ text: t, style });
  };
  let i = text.indexOf(ESC);
  if (i < 0) return { runs: text ? [{ text, style }] : [], end: style };
  // Where the next BEL and ESC \ are (-2: not looked for yet, -1: none left).
  let bel = -2;
  let st = -2;
  while (i >= 0) {
    push(text.slice(from, i));
    const next = text[i + 1];
    let end = i + 1;
    if (next === '[') {
      // CSI: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, one final byte 0x40–0x7E.
      let j = i + 2;
      while (j < text.length && j - i < MAX_PARAMS + 2 && text.charCodeAt(j) >= 0x30 && text.charCodeAt(j) <= 0x3f) j++;
      const params = text.slice(i + 2, j);
      while (j < text.length && text.charCodeAt(j) >= 0x20 && text.charCodeAt(j) <= 0x2f) j++;
      const final = text.charCodeAt(j);
      if (j < text.length && final >= 0x40 && final <= 0x7e) {
        if (final === 0x6d /* m */ && j === i + 2 + params.length) style = applySgr(style, params);
        end = j + 1;
      } else end = j;
    } else if (next === ']') {
      // OSC: up to BEL or ESC \ when one comes within MAX_OSC; else only ESC ] goes. The next of
      // each terminator is looked up again only once passed, so the text is scanned once for them.
      if (bel !== -1 && bel < i + 2) bel = text.indexOf('\u0007', i + 2);
      if (st !== -1 && st < i + 2) st = text.indexOf(`${ESC}\\`, i + 2);
      const stop = bel === -1 ? st : st === -1 ? bel : Math.min(bel, st);
      end = stop === -1 || stop - i > MAX_OSC ? i + 2 : stop === bel ? stop + 1 : stop + 2;
    } else if (next !== undefined && next.charCodeAt(0) >= 0x20 && next.charCodeAt(0) <= 0x2f) {
      // ESC, intermediate bytes, one final byte (`ESC ( B` selects a character set): dropped.
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) >= 0x20 && text.charCodeAt(j) <= 0x2f) j++;
      end = j < text.length && text.charCodeAt(j) >= 0x30 && text.charCodeAt(j) <= 0x7e ? j + 1 : j;
    } else if (next !== undefined && next !== ESC) {
      // A two-character escape (ESC 7, ESC =, ESC M): dropped.
      end = i + 2;
    }
    from = end;
    i = text.indexOf(ESC, from);
  }
  push(text.slice(from));
  return { runs, end: style };
}

/** The text without any escape sequence. */
export function stripAnsi(text: string): string {
  return ansiRuns(text).runs.map((r) => r.text).join('');
}

/** Class names for a run's style (`ansi-red ansi-bold`), empty for plain text. */
export function ansiClass(style: AnsiStyle): string {
  const c: string[] = [];
  if (style.fg) c.push(`ansi-${style.fg}`);
  if (style.bold) c.push('ansi-bold');
  if (style.dim) c.push('ansi-dim');
  if (style.italic) c.push('ansi-italic');
  if (style.underline) c.push('ansi-underline');
  return c.join(' ');
}

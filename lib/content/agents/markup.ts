/**
 * A forgiving scanner for the XML-ish markup inside agent files. Agent files are written by hand
 * in markdown, so stray `<`, unclosed tags, comments and fences are normal; this never throws and
 * keeps source offsets so callers can take the author's text verbatim.
 */

export interface MarkupElement {
  name: string;
  attrs: Record<string, string>;
  children: MarkupElement[];
  /** Offsets into the source: inner text is source.slice(innerStart, innerEnd). */
  start: number;
  innerStart: number;
  innerEnd: number;
  end: number;
}

// Void HTML tags never wrap content; treating them as open would swallow their siblings.
const VOID = new Set(['br', 'hr', 'img', 'input', 'meta', 'link', 'wbr', 'area', 'base', 'col', 'source']);

const NAME = /[A-Za-z_][\w.:-]*/y;
const ATTR_NAME = /[^\s=>/"'<]+/y;
const UNQUOTED = /[^\s>"'<]+/y;
const CLOSE = /<\/([A-Za-z_][\w.:-]*)\s*>/y;

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z]+);/g, (whole, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[body.toLowerCase()] ?? whole;
  });
}

function match(re: RegExp, src: string, at: number): RegExpExecArray | null {
  re.lastIndex = at;
  return re.exec(src);
}

function isSpace(ch: string | undefined): boolean {
  return ch === ' ' || ch === '\n' || ch === '\t' || ch === '\r' || ch === '\f';
}

interface OpenTag {
  name: string;
  attrs: Record<string, string>;
  end: number;
  selfClosing: boolean;
}

function readOpenTag(src: string, lt: number): OpenTag | null {
  const nm = match(NAME, src, lt + 1);
  if (!nm) return null;
  const name = nm[0];
  const attrs: Record<string, string> = {};
  let i = lt + 1 + name.length;
  for (;;) {
    while (isSpace(src[i])) i++;
    if (i >= src.length) return null;
    const ch = src[i];
    if (ch === '>') return { name, attrs, end: i + 1, selfClosing: false };
    if (ch === '/' && src[i + 1] === '>') return { name, attrs, end: i + 2, selfClosing: true };
    if (ch === '<') return null;
    const an = match(ATTR_NAME, src, i);
    if (!an) {
      i++;
      continue;
    }
    const attrName = an[0];
    i += attrName.length;
    let j = i;
    while (isSpace(src[j])) j++;
    if (src[j] !== '=') {
      attrs[attrName] = '';
      continue;
    }
    j++;
    while (isSpace(src[j])) j++;
    const q = src[j];
    if (q === '"' || q === "'") {
      const close = src.indexOf(q, j + 1);
      if (close < 0) return null;
      attrs[attrName] = decodeEntities(src.slice(j + 1, close));
      i = close + 1;
    } else {
      const uv = match(UNQUOTED, src, j);
      attrs[attrName] = uv ? decodeEntities(uv[0]) : '';
      i = uv ? j + uv[0].length : j;
    }
  }
}

/** Parses `src` into a forest of elements. Text is not materialised: use the offsets. */
export function parseMarkup(src: string): MarkupElement[] {
  const top: MarkupElement = { name: '#root', attrs: {}, children: [], start: 0, innerStart: 0, innerEnd: src.length, end: src.length };
  const stack: MarkupElement[] = [top];
  let i = 0;
  while (i < src.length) {
    const lt = src.indexOf('<', i);
    if (lt < 0) break;
    const next = src[lt + 1];
    if (src.startsWith('<!--', lt)) {
      const e = src.indexOf('-->', lt + 4);
      i = e < 0 ? src.length : e + 3;
      continue;
    }
    if (src.startsWith('<![CDATA[', lt)) {
      const e = src.indexOf(']]>', lt + 9);
      i = e < 0 ? src.length : e + 3;
      continue;
    }
    if (next === '?' || next === '!') {
      const e = src.indexOf('>', lt + 2);
      i = e < 0 ? src.length : e + 1;
      continue;
    }
    if (next === '/') {
      const m = match(CLOSE, src, lt);
      if (!m) {
        i = lt + 1;
        continue;
      }
      const name = m[1].toLowerCase();
      let k = stack.length - 1;
      while (k > 0 && stack[k].name.toLowerCase() !== name) k--;
      if (k > 0) {
        // Everything still open above the match was never closed: it ends where its parent does.
        for (let j = stack.length - 1; j > k; j--) {
          stack[j].innerEnd = lt;
          stack[j].end = lt;
        }
        stack[k].innerEnd = lt;
        stack[k].end = lt + m[0].length;
        stack.length = k;
      }
      i = lt + m[0].length;
      continue;
    }
    const tag = readOpenTag(src, lt);
    if (!tag) {
      i = lt + 1;
      continue;
    }
    const el: MarkupElement = {
      name: tag.name,
      attrs: tag.attrs,
      children: [],
      start: lt,
      innerStart: tag.end,
      innerEnd: tag.end,
      end: tag.end,
    };
    stack[stack.length - 1].children.push(el);
    if (!tag.selfClosing && !VOID.has(tag.name.toLowerCase())) stack.push(el);
    i = tag.end;
  }
  for (let j = stack.length - 1; j > 0; j--) {
    stack[j].innerEnd = src.length;
    stack[j].end = src.length;
  }
  return top.children;
}

/** Depth-first search (pre-order) for elements named `name`, case-insensitive. */
export function findAll(nodes: MarkupElement[], name: string, out: MarkupElement[] = []): MarkupElement[] {
  const want = name.toLowerCase();
  for (const n of nodes) {
    if (n.name.toLowerCase() === want) out.push(n);
    findAll(n.children, name, out);
  }
  return out;
}

export function findFirst(nodes: MarkupElement[], name: string): MarkupElement | undefined {
  const want = name.toLowerCase();
  for (const n of nodes) {
    if (n.name.toLowerCase() === want) return n;
    const hit = findFirst(n.children, name);
    if (hit) return hit;
  }
  return undefined;
}

/** Removes the common indentation and surrounding blank lines, keeping the author's line breaks. */
function dedent(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  while (lines.length && lines[0].trim() === '') lines.shift();
  while (lines.length && lines[lines.length - 1].trim() === '') lines.pop();
  const leadOf = (l: string) => l.length - l.trimStart().length;
  // Text that starts right after the opening tag has no indentation of its own; the
  // continuation lines tell how deep the author indented.
  const skipFirst = lines.length > 1 && leadOf(lines[0]) === 0;
  let indent = Infinity;
  lines.forEach((line, n) => {
    if (line.trim() === '' || (n === 0 && skipFirst)) return;
    const lead = leadOf(line);
    if (lead < indent) indent = lead;
  });
  if (!Number.isFinite(indent) || indent === 0) return lines.map((l) => l.trimEnd()).join('\n');
  return lines.map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)).trimEnd()).join('\n');
}

/**
 * The author's text inside an element: comments dropped, CDATA unwrapped, entities decoded,
 * nested markup kept as written (it is prose meant for the model).
 */
export function innerText(src: string, el: MarkupElement): string {
  const inner = src.slice(el.innerStart, el.innerEnd);
  let out = '';
  let i = 0;
  while (i < inner.length) {
    const c = inner.indexOf('<!--', i);
    const d = inner.indexOf('<![CDATA[', i);
    const next = c < 0 ? d : d < 0 ? c : Math.min(c, d);
    if (next < 0) {
      out += decodeEntities(inner.slice(i));
      break;
    }
    out += decodeEntities(inner.slice(i, next));
    if (next === c) {
      const e = inner.indexOf('-->', c + 4);
      i = e < 0 ? inner.length : e + 3;
    } else {
      const e = inner.indexOf(']]>', d + 9);
      out += inner.slice(d + 9, e < 0 ? inner.length : e);
      i = e < 0 ? inner.length : e + 3;
    }
  }
  return dedent(out);
}

export function collapseSpace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

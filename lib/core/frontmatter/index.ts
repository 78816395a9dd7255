import yaml from 'js-yaml';

export interface SplitMarkdown {
  /** The parsed YAML map; `{}` when the file has none. */
  data: Record<string, unknown>;
  /** The text after the closing `---`, or the whole file. */
  body: string;
  /** Set when the frontmatter was not valid YAML and was read line by line instead. */
  problem?: string;
}

// An empty frontmatter (`---` twice) must not run on to the first horizontal rule of the text.
const FENCE = /^---[ \t]*\r?\n(?:---|([\s\S]*?)\r?\n---)[ \t]*(?:\r?\n|$)/;

/**
 * Step files written by hand carry YAML mistakes (a `\'` inside single quotes); a model reading
 * the file would still see `key: 'value'`, so such frontmatter is read as one scalar per line.
 */
function lineByLine(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^([A-Za-z_][\w-]*):\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    let value = m[2].replace(/\s+#.*$/, '');
    const q = value[0];
    if ((q === '"' || q === "'") && value.length >= 2 && value.endsWith(q)) value = value.slice(1, -1).replace(/\\(['"])/g, '$1');
    out[m[1]] = value;
  }
  return out;
}

/** Splits a markdown file into its YAML frontmatter and body. Never throws. */
export function splitFrontmatter(text: string): SplitMarkdown {
  const src = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const m = FENCE.exec(src);
  if (!m) return { data: {}, body: src };
  const body = src.slice(m[0].length);
  if (m[1] === undefined) return { data: {}, body };
  try {
    const parsed = yaml.load(m[1], { schema: yaml.CORE_SCHEMA, json: true });
    if (parsed === null || parsed === undefined) return { data: {}, body };
    if (typeof parsed !== 'object' || Array.isArray(parsed)) return { data: {}, body, problem: 'the frontmatter is not a YAML map of keys' };
    return { data: parsed as Record<string, unknown>, body };
  } catch (e) {
    const reason = e instanceof yaml.YAMLException ? `${e.reason} (line ${e.mark.line + 2})` : 'unreadable YAML';
    return { data: lineByLine(m[1]), body, problem: `the frontmatter is not valid YAML (${reason}); it was read line by line` };
  }
}

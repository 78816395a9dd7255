import { parse, TomlError } from 'smol-toml';

export type TomlTable = Record<string, unknown>;

export type ParsedToml = { ok: true; data: TomlTable } | { ok: false; reason: string };

/** A TOML file's table; dates and times become their TOML text, so every value is JSON-safe. */
export function parseToml(text: string): ParsedToml {
  try {
    return { ok: true, data: plain(parse(text.startsWith('\uFEFF') ? text.slice(1) : text)) as TomlTable };
  } catch (e) {
    if (e instanceof TomlError) return { ok: false, reason: `${e.message.split('\n')[0]} (line ${e.line})` };
    return { ok: false, reason: 'unreadable TOML' };
  }
}

function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return Number(v);
  if (isTable(v)) {
    const out: TomlTable = {};
    // Plain objects from here on, so callers may spread and compare them freely.
    for (const [k, val] of Object.entries(v)) out[k] = plain(val);
    return out;
  }
  // smol-toml's offset-less dates and times are objects with their own toString.
  if (v && typeof v === 'object') return String(v);
  return v;
}

export function isTable(v: unknown): v is TomlTable {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  // smol-toml builds its tables without a prototype.
  const proto = Object.getPrototypeOf(v);
  return proto === null || proto === Object.prototype;
}

// BMAD's config_utils.py: an array of tables that all carry one of these (a non-empty string)
// is merged entry by entry.
const KEYED_FIELDS = ['code', 'id'] as const;

function keyedField(items: unknown[]): string | null {
  if (!items.length || !items.every(isTable)) return null;
  for (const field of KEYED_FIELDS) {
    if (items.every((item) => typeof (item as TomlTable)[field] === 'string' && (item as TomlTable)[field] !== '')) return field;
  }
  return null;
}

function mergeArrays(base: unknown[], override: unknown[]): unknown[] {
  const field = keyedField([...base, ...override]);
  if (!field) return [...base, ...override];
  const out: TomlTable[] = [];
  const at = new Map<string, number>();
  for (const item of [...base, ...override] as TomlTable[]) {
    const key = item[field] as string;
    const i = at.get(key);
    if (i === undefined) {
      at.set(key, out.length);
      out.push({ ...item });
    } else {
      out[i] = { ...item };
    }
  }
  return out;
}

/**
 * BMAD's structural merge (`_bmad/scripts/config_utils.py`): scalars override, tables deep-merge,
 * arrays of tables keyed by `code` or `id` replace matching entries and append new ones, other
 * arrays append.
 */
export function structuralMerge(base: unknown, override: unknown): unknown {
  if (isTable(base) && isTable(override)) {
    const out: TomlTable = { ...base };
    for (const [k, v] of Object.entries(override)) out[k] = k in out ? structuralMerge(out[k], v) : v;
    return out;
  }
  if (Array.isArray(base) && Array.isArray(override)) return mergeArrays(base, override);
  return override;
}

export function mergeLayers(layers: TomlTable[]): TomlTable {
  return layers.reduce<TomlTable>((acc, layer) => structuralMerge(acc, layer) as TomlTable, {});
}

/** The value at a dotted path (`modules.bmm`), or undefined. */
export function lookup(table: TomlTable, dotted: string): unknown {
  let cur: unknown = table;
  for (const part of dotted.split('.')) {
    if (!isTable(cur) || !(part in cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

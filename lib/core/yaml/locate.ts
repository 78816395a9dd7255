import { isMap, isScalar, type Document, type LineCounter } from 'yaml';

/** A path into a parsed YAML value, as zod reports an issue's. */
export type YamlPath = (string | number)[];

/**
 * The 1-based line where a path's value (or, for a missing key, its mapping) starts: what a
 * settings file's error names, so a person finds the field without counting.
 */
export function lineOf(doc: Document, lines: LineCounter, at: YamlPath, key?: string): number | undefined {
  for (let n = at.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : (doc.getIn(at.slice(0, n), true) as unknown);
    if (!node || typeof node !== 'object') continue;
    if (key !== undefined && n === at.length && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && p.key.value === key);
      const range = (pair?.key as { range?: [number, number, number] } | undefined)?.range;
      if (range) return lines.linePos(range[0]).line;
    }
    const range = (node as { range?: [number, number, number] }).range;
    if (range) return lines.linePos(range[0]).line;
  }
  return undefined;
}

/** The plain value at a path (undefined where the path leaves the value). */
export function valueAt(value: unknown, at: YamlPath): unknown {
  let v = value;
  for (const k of at) v = v && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined;
  return v;
}

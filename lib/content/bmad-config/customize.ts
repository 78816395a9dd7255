import { isTable, lookup, mergeLayers, parseToml, type TomlTable } from './toml';

/** One layer as read: its label (a virtual path) and its text, null when the file is absent. */
export interface Layer {
  path: string;
  text: string | null;
}

export interface Merged {
  data: TomlTable;
  /** Labels of the layers that were present and merged, in order. */
  merged: string[];
  /** Labels of the layers that were present but not valid TOML, so left out. */
  invalid: string[];
  /** Layers that could not be used (invalid TOML, a required one missing). */
  problems: string[];
}

/**
 * A skill's customization layers in BMAD's order (`load_customization` in config_utils.py): its
 * customize.toml, then the team's and the user's overrides under `_bmad/custom/`.
 */
export function customizationLayers(skillRoot: string, installRoot: string, skillName: string): string[] {
  return [`${skillRoot}/customize.toml`, `${installRoot}/custom/${skillName}.toml`, `${installRoot}/custom/${skillName}.user.toml`];
}

/** The central config's layers in BMAD's order (`load_central_config`). */
export function centralConfigLayers(installRoot: string): string[] {
  return [`${installRoot}/config.toml`, `${installRoot}/config.user.toml`, `${installRoot}/custom/config.toml`, `${installRoot}/custom/config.user.toml`];
}

/**
 * Merges layers in order. A layer that is not valid TOML is left out and named, like BMAD's
 * resolver refuses it; the others still merge, so one bad override never hides the defaults.
 */
export function mergeTomlLayers(layers: Layer[]): Merged {
  const tables: TomlTable[] = [];
  const merged: string[] = [];
  const invalid: string[] = [];
  const problems: string[] = [];
  for (const layer of layers) {
    if (layer.text === null) continue;
    const parsed = parseToml(layer.text);
    if (!parsed.ok) {
      invalid.push(layer.path);
      problems.push(`${layer.path} is not valid TOML (${parsed.reason}); it was left out`);
      continue;
    }
    tables.push(parsed.data);
    merged.push(layer.path);
  }
  return { data: mergeLayers(tables), merged, invalid, problems };
}

/** Scalars of the named tables of a merged central config (`core`, `modules.bmm`), later tables winning: config variables. */
export function configVariables(central: TomlTable, tables: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of tables) {
    const t = lookup(central, name);
    if (!isTable(t)) continue;
    for (const [k, v] of Object.entries(t)) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    }
  }
  return out;
}

/**
 * A customization value as prose, the way BMAD's renderer writes it: a list of strings as a
 * markdown list (`_None._` when empty), a list of tables one line each, a table as JSON.
 */
export function renderValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) {
    if (!value.length) return '_None._';
    return value
      .map((item) => {
        if (isTable(item)) {
          const code = typeof item.code === 'string' ? item.code : typeof item.id === 'string' ? item.id : '';
          const rest = Object.entries(item)
            .filter(([k]) => k !== 'code' && k !== 'id')
            .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
            .join('; ');
          return `- ${code ? `${code} — ` : ''}${rest}`;
        }
        const lines = String(typeof item === 'string' ? item : JSON.stringify(item)).split('\n');
        return [`- ${lines[0]}`, ...lines.slice(1).map((l) => `  ${l}`)].join('\n');
      })
      .join('\n');
  }
  return JSON.stringify(value);
}

// `{agent.icon}`, `{workflow.prd_output_path}`: a key of the skill's resolved customization.
const DOTTED = /\{(agent|workflow)\.([A-Za-z0-9_.-]+)\}/g;

/** Replaces `{agent.<key>}` / `{workflow.<key>}` with the resolved customization; unknown keys stay as written and are returned. */
export function substituteCustomization(text: string, customization: TomlTable, render: (v: unknown, key: string) => string = renderValue): { text: string; unknown: string[] } {
  const unknown = new Set<string>();
  const out = text.replace(DOTTED, (all, table: string, key: string) => {
    const v = lookup(customization, `${table}.${key}`);
    if (v === undefined) {
      unknown.add(`${table}.${key}`);
      return all;
    }
    return render(v, `${table}.${key}`);
  });
  return { text: out, unknown: [...unknown] };
}

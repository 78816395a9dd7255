import { z } from 'zod';

/** Upper bound a bundle may ask for; beyond this a bundle could exhaust server memory. */
export const MAX_FS_LIMIT_BYTES = 50 * 1024 * 1024;

/** Per-bundle or per-agent overrides of the file tools' size limits. */
export interface FsLimitOverrides {
  maxReadBytes?: number;
  maxWriteBytes?: number;
}

const bytes = z.number().int().positive().max(MAX_FS_LIMIT_BYTES);

// Ids travel in URLs, conversation records and file names.
export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * One agent of bundle.yaml. Only `id` and `file` are needed to run an agent; the rest is
 * presentation, and the catalog falls back to the agent file's `<agent name title>` or the id.
 */
export interface BundleAgentManifest {
  /** Where the agent sits in bundle.yaml (`agents[2]` or `agent`), so problems can point at it. */
  at: string;
  id: string;
  /** As written, relative to the bundle folder; the scanner checks it stays inside. */
  file: string;
  name?: string;
  title?: string;
  description?: string;
  icon?: string;
  entry_point?: boolean;
  tools?: { fs?: FsLimitOverrides };
}

/**
 * bundle.yaml as read. `agents` holds every agent that has a usable id and file, in manifest
 * order; a standalone bundle has at most one. Unknown keys are dropped: bundles written for
 * other tools carry their own (author, dependencies, …) and must still load.
 */
export interface BundleManifest {
  type: 'bundle' | 'standalone';
  name?: string;
  version?: string;
  description?: string;
  resources?: Record<string, unknown>;
  core_dependencies?: string[];
  tools?: { fs?: FsLimitOverrides };
  agents: BundleAgentManifest[];
}

/**
 * `ok: false` only when there is nothing to run (not a mapping, no agents listed). Otherwise the
 * manifest is usable and `problems` lists what was skipped or replaced by a fallback, as
 * sentences a bundle author can act on.
 */
export type ManifestResult = { ok: true; manifest: BundleManifest; problems: string[] } | { ok: false; problems: string[] };

type Mapping = Record<string, unknown>;

function isMapping(v: unknown): v is Mapping {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (isMapping(v)) return 'a mapping';
  return JSON.stringify(v) ?? String(v);
}

/**
 * A free-text field. Numbers and booleans are what YAML makes of `version: 1.0` or `name: 2024`;
 * authors meant text. Empty counts as absent.
 */
function readText(v: unknown, where: string, fallback: string, problems: string[]): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return v.trim() || undefined;
  problems.push(`${where} must be text, not ${kindOf(v)}; ${fallback}`);
  return undefined;
}

// YAML 1.2 reads `yes` and `"true"` as strings; authors mean the boolean.
const TRUE = new Set(['true', 'yes', 'on']);
const FALSE = new Set(['false', 'no', 'off']);

function readFlag(v: unknown, where: string, problems: string[]): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'boolean') return v;
  const s = typeof v === 'string' ? v.trim().toLowerCase() : '';
  if (TRUE.has(s)) return true;
  if (FALSE.has(s)) return false;
  problems.push(`${where} must be true or false, not ${kindOf(v)}; read as false`);
  return false;
}

/** `tools.fs` limits. A bad value falls back to the server's limit, which is the safe side. */
function readTools(v: unknown, where: string, problems: string[]): { fs?: FsLimitOverrides } | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isMapping(v)) {
    problems.push(`${where} must be a mapping; ignored`);
    return undefined;
  }
  if (v.fs === undefined || v.fs === null) return {};
  if (!isMapping(v.fs)) {
    problems.push(`${where}.fs must be a mapping; the server's limits apply`);
    return {};
  }
  const fs: FsLimitOverrides = {};
  for (const key of ['maxReadBytes', 'maxWriteBytes'] as const) {
    const raw = v.fs[key];
    if (raw === undefined || raw === null) continue;
    const parsed = bytes.safeParse(raw);
    if (parsed.success) fs[key] = parsed.data;
    else {
      problems.push(
        `${where}.fs.${key} must be a whole number of bytes from 1 to ${MAX_FS_LIMIT_BYTES}, not ${kindOf(raw)}; the server's limit applies`,
      );
    }
  }
  return { fs };
}

/** An agent entry, or null when it cannot be run (the reason is added to `problems`). */
function readAgent(v: unknown, at: string, standalone: boolean, problems: string[]): BundleAgentManifest | null {
  if (!isMapping(v)) {
    problems.push(`${at} must be a mapping with at least id and file, not ${kindOf(v)}; skipped`);
    return null;
  }
  const rawId = v.id;
  const id = typeof rawId === 'number' ? String(rawId) : typeof rawId === 'string' ? rawId.trim() : undefined;
  if (!id) {
    problems.push(`${at}.id is required; this agent is skipped`);
    return null;
  }
  if (!AGENT_ID_PATTERN.test(id)) {
    problems.push(
      `${at}.id must be 1-64 letters, digits, "-", "_" or "." (starting with a letter or digit), not ${JSON.stringify(id)}; this agent is skipped`,
    );
    return null;
  }
  const file = typeof v.file === 'string' ? v.file.trim() : '';
  if (!file) {
    const absent = v.file === undefined || v.file === null || (typeof v.file === 'string' && !v.file.trim());
    const why = absent ? 'is required' : `must be a path, not ${kindOf(v.file)}`;
    problems.push(`${at}.file ${why}; agent "${id}" is skipped`);
    return null;
  }
  const agent: BundleAgentManifest = { at, id, file };
  const name = readText(v.name, `${at}.name`, "the agent file's name or the id is used", problems);
  if (name) agent.name = name;
  const title = readText(v.title, `${at}.title`, "the agent file's title is used", problems);
  if (title) agent.title = title;
  const description = readText(v.description, `${at}.description`, 'ignored', problems);
  if (description) agent.description = description;
  const icon = readText(v.icon, `${at}.icon`, "the agent file's icon is used", problems);
  if (icon) agent.icon = icon;
  // A standalone agent is offered whatever it says, so its flag is not worth a complaint.
  if (!standalone) {
    const entry = readFlag(v.entry_point, `${at}.entry_point`, problems);
    if (entry !== undefined) agent.entry_point = entry;
  }
  const tools = readTools(v.tools, `${at}.tools`, problems);
  if (tools) agent.tools = tools;
  return agent;
}

type Shape = { type: 'bundle'; list: unknown[] } | { type: 'standalone'; one: unknown; at: string } | { error: string };

/**
 * Decides how the agents are laid out. `type` is a hint: what the manifest actually lists wins,
 * because a working agent under the "wrong" key is still a working agent.
 */
function readShape(data: Mapping, problems: string[]): Shape {
  const rawType = data.type;
  const typeText = typeof rawType === 'string' ? rawType.trim().toLowerCase() : rawType;
  let declared: 'bundle' | 'standalone' | undefined;
  if (typeText === 'bundle' || typeText === 'standalone') declared = typeText;
  else if (rawType !== undefined && rawType !== null) problems.push(`type must be "bundle" or "standalone", not ${kindOf(rawType)}`);

  const hasList = data.agents !== undefined && data.agents !== null;
  const hasOne = data.agent !== undefined && data.agent !== null;
  if (hasList && !Array.isArray(data.agents)) return { error: 'agents must be a list' };
  const list = (hasList ? data.agents : []) as unknown[];

  if (declared === 'standalone' && !hasOne && hasList) {
    // A one-item list under a standalone type is a common slip; the author's intent is clear.
    if (list.length === 1) {
      problems.push('a standalone bundle has one `agent:` mapping, not an `agents:` list; agents[0] is used as its agent');
      return { type: 'standalone', one: list[0], at: 'agents[0]' };
    }
    problems.push('a standalone bundle has one `agent:` mapping, not an `agents:` list; read as type: bundle');
    return { type: 'bundle', list };
  }
  if (declared === 'bundle' && !hasList && hasOne) {
    problems.push('a type: bundle lists its agents under `agents:`; the `agent:` mapping is read as a standalone agent');
    return { type: 'standalone', one: data.agent, at: 'agent' };
  }
  if (hasList && hasOne) {
    const type = declared ?? 'bundle';
    problems.push(
      type === 'bundle'
        ? '`agent:` is ignored: this bundle lists its agents under `agents:`'
        : '`agents:` is ignored: a standalone bundle has one `agent:`',
    );
    return type === 'bundle' ? { type, list } : { type, one: data.agent, at: 'agent' };
  }
  if (hasOne) return { type: 'standalone', one: data.agent, at: 'agent' };
  if (hasList) return { type: 'bundle', list };
  if (declared === 'bundle') return { error: 'agents is required: a list of the bundle\'s agents, each with at least id and file' };
  if (declared === 'standalone') return { error: 'agent is required: the bundle\'s one agent, with at least id and file' };
  return { error: 'no agents found: list them under `agents:` (type: bundle) or give one `agent:` (type: standalone)' };
}

/** Reads parsed bundle.yaml content: only what leaves nothing to run is fatal. */
export function validateManifest(data: unknown): ManifestResult {
  if (!isMapping(data)) return { ok: false, problems: ['must be a YAML mapping (key: value pairs)'] };
  const problems: string[] = [];
  const shape = readShape(data, problems);
  if ('error' in shape) return { ok: false, problems: [...problems, shape.error] };
  if (shape.type === 'bundle' && shape.list.length === 0) {
    return { ok: false, problems: [...problems, 'agents must list at least one agent'] };
  }

  const manifest: BundleManifest = { type: shape.type, agents: [] };
  const name = readText(data.name, 'name', 'the folder name is used', problems);
  if (name) manifest.name = name;
  const version = readText(data.version, 'version', 'ignored', problems);
  if (version) manifest.version = version;
  const description = readText(data.description, 'description', 'ignored', problems);
  if (description) manifest.description = description;

  if (isMapping(data.resources)) manifest.resources = data.resources;
  else if (data.resources !== undefined && data.resources !== null) problems.push('resources must be a mapping; ignored');

  const deps = data.core_dependencies;
  if (typeof deps === 'string' && deps.trim()) manifest.core_dependencies = [deps.trim()];
  else if (Array.isArray(deps)) {
    manifest.core_dependencies = [];
    deps.forEach((d, i) => {
      if (typeof d === 'string' && d.trim()) manifest.core_dependencies!.push(d.trim());
      else problems.push(`core_dependencies[${i}] must be a path, not ${kindOf(d)}; ignored`);
    });
  } else if (deps !== undefined && deps !== null) problems.push('core_dependencies must be a list of paths; ignored');

  const tools = readTools(data.tools, 'tools', problems);
  if (tools) manifest.tools = tools;

  if (shape.type === 'standalone') {
    const agent = readAgent(shape.one, shape.at, true, problems);
    if (agent) manifest.agents.push(agent);
  } else {
    shape.list.forEach((a, i) => {
      const agent = readAgent(a, `agents[${i}]`, false, problems);
      if (agent) manifest.agents.push(agent);
    });
  }
  return { ok: true, manifest, problems };
}

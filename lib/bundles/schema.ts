import { z } from 'zod';

/** Upper bound a bundle may ask for; beyond this a bundle could exhaust server memory. */
export const MAX_FS_LIMIT_BYTES = 50 * 1024 * 1024;

/** Per-bundle or per-agent overrides of the file tools' size limits. */
export interface FsLimitOverrides {
  maxReadBytes?: number;
  maxWriteBytes?: number;
}

const bytes = z.number().int().positive().max(MAX_FS_LIMIT_BYTES);

const tools = z.object({
  fs: z.object({ maxReadBytes: bytes.optional(), maxWriteBytes: bytes.optional() }).optional(),
});

// Ids travel in URLs, conversation records and file names.
export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const text = z.string().trim().min(1, 'must not be empty');

// YAML reads `entry_point: "true"` as a string; authors mean the boolean.
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

const agentFields = {
  id: z.string().regex(AGENT_ID_PATTERN, 'must be 1-64 letters, digits, "-", "_" or "." (starting with a letter or digit)'),
  name: text,
  title: text,
  file: text,
  description: text,
  icon: z.string().optional(),
  tools: tools.optional(),
};

export const bundleAgentSchema = z.object({ ...agentFields, entry_point: flag.optional() });
export const standaloneAgentSchema = z.object({ ...agentFields, entry_point: flag.optional() });

const common = {
  name: text,
  // YAML reads `version: 1.0` as a number.
  version: z.union([text, z.number().transform((n) => String(n))]),
  description: text,
  resources: z.record(z.string(), z.unknown()).optional(),
  core_dependencies: z.array(z.string()).optional(),
  tools: tools.optional(),
};

export const multiBundleSchema = z.object({
  type: z.literal('bundle'),
  ...common,
  agents: z.array(bundleAgentSchema).min(1, 'must list at least one agent'),
});

export const standaloneBundleSchema = z.object({
  type: z.literal('standalone'),
  ...common,
  agent: standaloneAgentSchema,
});

export type BundleAgentManifest = z.infer<typeof bundleAgentSchema>;
export type MultiBundleManifest = z.infer<typeof multiBundleSchema>;
export type StandaloneBundleManifest = z.infer<typeof standaloneBundleSchema>;
export type BundleManifest = MultiBundleManifest | StandaloneBundleManifest;

function pathOf(p: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of p) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out || '(root)';
}

function valueAt(data: unknown, p: readonly PropertyKey[]): unknown {
  let v: unknown = data;
  for (const seg of p) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[seg];
  }
  return v;
}

function describe(issue: z.core.$ZodIssue, data: unknown): string {
  const where = pathOf(issue.path);
  if (issue.path.length && valueAt(data, issue.path) === undefined) return `${where} is required`;
  if (issue.code === 'invalid_type') return `${where} must be ${issue.expected === 'array' ? 'a list' : `a ${issue.expected}`}`;
  if (issue.code === 'invalid_union') return `${where} has an invalid value`;
  return `${where} ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`;
}

export type ManifestResult = { ok: true; manifest: BundleManifest } | { ok: false; problems: string[] };

/** Validates parsed bundle.yaml content; problems are sentences a bundle author can act on. */
export function validateManifest(data: unknown): ManifestResult {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return { ok: false, problems: ['must be a YAML mapping (key: value pairs)'] };
  }
  const type = (data as { type?: unknown }).type;
  if (type === undefined) return { ok: false, problems: ['type is required ("bundle" or "standalone")'] };
  if (type !== 'bundle' && type !== 'standalone') {
    return { ok: false, problems: [`type must be "bundle" or "standalone", not ${JSON.stringify(type)}`] };
  }
  const schema = type === 'bundle' ? multiBundleSchema : standaloneBundleSchema;
  const parsed = schema.safeParse(data);
  if (parsed.success) return { ok: true, manifest: parsed.data };
  const problems = parsed.error.issues.map((i) => describe(i, data));
  if (type === 'standalone' && 'agents' in data && !('agent' in data)) {
    problems.push('a standalone bundle has one `agent:` mapping, not an `agents:` list (or use type: bundle)');
  }
  return { ok: false, problems };
}

import yaml from 'js-yaml';
import { z } from 'zod';
import { readForEdit, underWriteLock, writeBack } from './edit-target';
import { coerceArgs, defineTool } from './define';
import { fail, isFailure, sha256 } from '../../core/results';
import type { ToolResult } from '../../core/results';
import type { ResolvedPath } from '../../core/paths';
import type { ToolContext } from './types';

const OPS = ['stepsCompleted.append', 'variables.set', 'decisionLog.append', 'artifacts.append', 'currentNodeId.set', 'updatedAt.set'] as const;

const listOf = z.union([z.string(), z.number(), z.array(z.union([z.string(), z.number()]))]);

const updateSchema = z
  .object({
    'stepsCompleted.append': listOf.optional().describe('Step ids to add to stepsCompleted (duplicates are skipped).'),
    'variables.set': z.record(z.string(), z.unknown()).optional().describe('Keys merged into the variables map.'),
    'decisionLog.append': z
      .union([z.array(z.unknown()), z.record(z.string(), z.unknown()), z.string()])
      .optional()
      .describe('Entry or entries appended to decisionLog.'),
    'artifacts.append': listOf.optional().describe('Artifact paths to add to artifacts (duplicates are skipped).'),
    'currentNodeId.set': z.union([z.string(), z.number()]).optional().describe('New value of currentNodeId.'),
    'updatedAt.set': z.string().optional().describe('New value of updatedAt (ISO timestamp).'),
  })
  .strict();

const schema = z.object({
  file_path: z.string().min(1).describe('Markdown file with YAML frontmatter in the output folder, e.g. {output_folder}/workflow.md.'),
  patch: z.object({
    operation: z.literal('updateFrontmatter'),
    update: updateSchema,
    ifMatchSha256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be a 64-character hex sha256').optional(),
  }),
});

type Update = z.infer<typeof updateSchema>;

/** Accepts `{ stepsCompleted: { append: [...] } }` as well as the flat `{ "stepsCompleted.append": [...] }`. */
function flattenUpdate(update: unknown): unknown {
  if (!update || typeof update !== 'object' || Array.isArray(update)) return update;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(update)) {
    const nested = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
    const op = nested.length === 1 ? `${key}.${nested[0]}` : '';
    if (!key.includes('.') && (OPS as readonly string[]).includes(op)) out[op] = (value as Record<string, unknown>)[nested[0]];
    else out[key] = value;
  }
  return out;
}

function normalize(args: Record<string, unknown>): Record<string, unknown> {
  const out = coerceArgs(args, { aliases: { path: 'file_path', filePath: 'file_path' } });
  let patch = out.patch;
  if (typeof patch === 'string') {
    try {
      patch = JSON.parse(patch);
    } catch {
      return out;
    }
  }
  if (patch && typeof patch === 'object' && !Array.isArray(patch)) {
    const p = { ...(patch as Record<string, unknown>) };
    if (p.ifMatchSha256 === undefined && p.if_match_sha256 !== undefined) {
      p.ifMatchSha256 = p.if_match_sha256;
      delete p.if_match_sha256;
    }
    p.update = flattenUpdate(p.update);
    out.patch = p;
  }
  return out;
}

interface Split {
  prefix: string;
  yamlText: string;
  closing: string;
  body: string;
}

/** Finds frontmatter between a leading `---` line and the next `---` (or `...`) line; null when there is none. */
export function splitFrontmatter(text: string): Split | null | 'unclosed' {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const rest = text.slice(bom.length);
  const open = /^---[ \t]*(\r?\n)/.exec(rest);
  if (!open) return null;
  let pos = open[0].length;
  while (pos <= rest.length) {
    const nl = rest.indexOf('\n', pos);
    const lineEnd = nl === -1 ? rest.length : nl + 1;
    const line = rest.slice(pos, lineEnd).replace(/\r?\n$/, '');
    if (/^(---|\.\.\.)[ \t]*$/.test(line)) {
      return {
        prefix: bom + open[0],
        yamlText: rest.slice(open[0].length, pos),
        closing: rest.slice(pos, lineEnd),
        body: rest.slice(lineEnd),
      };
    }
    if (nl === -1) break;
    pos = lineEnd;
  }
  return 'unclosed';
}

function asList(value: string | number | Array<string | number>): Array<string | number> {
  return Array.isArray(value) ? value : [value];
}

function applyUpdate(fm: Record<string, unknown>, update: Update): string | null {
  const appendUnique = (key: 'stepsCompleted' | 'artifacts', items: Array<string | number>) => {
    const current = fm[key] ?? [];
    if (!Array.isArray(current)) return `frontmatter field ${key} is not a list`;
    const next = [...current];
    for (const item of items) if (!next.includes(item)) next.push(item);
    fm[key] = next;
    return null;
  };
  if (update['stepsCompleted.append'] !== undefined) {
    const problem = appendUnique('stepsCompleted', asList(update['stepsCompleted.append']));
    if (problem) return problem;
  }
  if (update['artifacts.append'] !== undefined) {
    const problem = appendUnique('artifacts', asList(update['artifacts.append']));
    if (problem) return problem;
  }
  if (update['decisionLog.append'] !== undefined) {
    const current = fm.decisionLog ?? [];
    if (!Array.isArray(current)) return 'frontmatter field decisionLog is not a list';
    const items = Array.isArray(update['decisionLog.append']) ? update['decisionLog.append'] : [update['decisionLog.append']];
    fm.decisionLog = [...current, ...items];
  }
  if (update['variables.set'] !== undefined) {
    const current = fm.variables ?? {};
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return 'frontmatter field variables is not a map';
    fm.variables = { ...(current as Record<string, unknown>), ...update['variables.set'] };
  }
  if (update['currentNodeId.set'] !== undefined) fm.currentNodeId = update['currentNodeId.set'];
  if (update['updatedAt.set'] !== undefined) fm.updatedAt = update['updatedAt.set'];
  return null;
}

export const applyPatchTool = defineTool({
  name: 'apply_patch',
  description:
    'Update the YAML frontmatter of a Markdown file in the output folder (workflow state) without touching its body. patch.operation is "updateFrontmatter"; patch.update holds any of: ' +
    OPS.join(', ') +
    '.',
  schema,
  normalize,
  async run(args, ctx): Promise<ToolResult> {
    const update = args.patch.update;
    if (!OPS.some((op) => update[op] !== undefined)) {
      return fail('E_INVALID_ARGS', `patch.update is empty; use any of: ${OPS.join(', ')}`);
    }
    return underWriteLock(args.file_path, ctx, (target) => patchFrontmatter(args, target, ctx));
  },
});

async function patchFrontmatter(args: z.infer<typeof schema>, target: ResolvedPath, ctx: ToolContext): Promise<ToolResult> {
  const update = args.patch.update;
  const raw = await readForEdit(target, ctx);
  if (isFailure(raw)) return raw;
  const sha256Before = sha256(raw);
  if (args.patch.ifMatchSha256 && args.patch.ifMatchSha256.toLowerCase() !== sha256Before) {
    return fail('E_PRECONDITION_FAILED', `${target.virtual} changed: its sha256 is ${sha256Before}. Read it again before patching.`, {
      path: target.virtual,
      details: { currentSha256: sha256Before },
    });
  }
  const text = raw.toString('utf8');
  const split = splitFrontmatter(text);
  if (split === 'unclosed') {
    return fail('E_INVALID_FRONTMATTER', `The frontmatter of ${target.virtual} has no closing --- line`, { path: target.virtual });
  }
  let fm: Record<string, unknown> = {};
  if (split) {
    let parsed: unknown;
    try {
      parsed = yaml.load(split.yamlText, { schema: yaml.CORE_SCHEMA });
    } catch (e) {
      const reason = e instanceof yaml.YAMLException ? e.reason : 'unreadable YAML';
      return fail('E_INVALID_FRONTMATTER', `The frontmatter of ${target.virtual} is not valid YAML: ${reason}`, { path: target.virtual });
    }
    if (parsed !== undefined && parsed !== null && (typeof parsed !== 'object' || Array.isArray(parsed))) {
      return fail('E_INVALID_FRONTMATTER', `The frontmatter of ${target.virtual} must be a YAML map`, { path: target.virtual });
    }
    fm = (parsed as Record<string, unknown> | null) ?? {};
  }
  const problem = applyUpdate(fm, update);
  if (problem) return fail('E_INVALID_FRONTMATTER', `Cannot update ${target.virtual}: ${problem}`, { path: target.virtual });

  const eol = split ? (split.prefix.endsWith('\r\n') ? '\r\n' : '\n') : text.includes('\r\n') ? '\r\n' : '\n';
  let dumped = yaml.dump(fm, { schema: yaml.CORE_SCHEMA, lineWidth: -1, noRefs: true });
  if (eol === '\r\n') dumped = dumped.replace(/\n/g, '\r\n');
  const next = split
    ? `${split.prefix}${dumped}${split.closing || `---${eol}`}${split.body}`
    : `---${eol}${dumped}---${eol}${text}`;
  const written = await writeBack(target, next, ctx, 'patched', 'apply_patch', raw);
  if (isFailure(written)) return written;
  return { ok: true, path: target.virtual, sha256Before, sha256After: written.sha256 };
}

import type { PathContext } from '../../core/paths';
import { basenameVirtual, dirnameVirtual, fileExists, joinVirtual, leadingVirtualPath, listFolder } from './files';
import { expandText, type VariableSources } from './variables';

/**
 * How BMAD step-file workflows start (6.0 to 6.2): the workflow.md body says where, in a
 * directive such as "Read fully and follow: `./steps/step-01-init.md`", "Load and execute
 * `steps/step-01-discover.md`", "Load step: `./steps/step-02-...md`" or "read fully and follow:
 * `{nextStep}`" with `nextStep` in the frontmatter. BMAD's own reference checker reads the same
 * directives. Frontmatter keys and the steps folder are fallbacks for workflows that only have those.
 */

export type FirstStep =
  | { kind: 'one'; path: string; foundBy: string }
  /** The body routes to one of several first steps (research: market, domain or technical). */
  | { kind: 'choices'; paths: string[]; foundBy: string }
  /** The body names a first step that cannot be loaded. */
  | { kind: 'broken'; name: string; reason: string };

const DIRECTIVE = /\b(load|follow|execute)\b/i;
const BACKTICKED = /`([^`\n]+)`/g;
const FIRST_STEP_KEY = /^(first|next|start|initial)_?step(_?file)?$/i;
const STEPS_FOLDER = /^(steps?|steps-.+|.+-steps)$/i;

/** A step file, not the start of a workflow: its next step is its own business. */
export function isStepFile(virtualPath: string): boolean {
  const name = basenameVirtual(virtualPath);
  const folder = basenameVirtual(dirnameVirtual(virtualPath));
  return /^step[-_]/i.test(name) || STEPS_FOLDER.test(folder);
}

/** Another workflow (party mode, a sibling workflow-*.md) is something to invoke, never a first step. */
function isWorkflowFile(virtualPath: string): boolean {
  return /^workflow([-.].*)?\.(md|ya?ml|xml)$/i.test(basenameVirtual(virtualPath));
}

function outsideFences(body: string): string[] {
  const lines: string[] = [];
  let inCode = false;
  for (const line of body.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) {
      inCode = !inCode;
      continue;
    }
    if (!inCode) lines.push(line);
  }
  return lines;
}

interface Candidate {
  path?: string;
  reason?: string;
  written: string;
}

/** One backticked reference as a markdown file's virtual path (or why it cannot be one). */
function candidateOf(written: string, baseDir: string, sources: VariableSources, variables: Record<string, unknown>): Candidate | null {
  const text = expandText(written.trim(), sources, variables).trim();
  if (!/\.md$/i.test(text) || /[\s*?]/.test(text)) return null;
  const lead = leadingVirtualPath(text);
  if (lead !== null && lead !== text) return null;
  if (lead === null && !text.includes('/')) return null;
  if (/\{[^}]*\}/.test(lead === null ? text : text.slice(text.indexOf('}') + 1))) return null;
  const joined = joinVirtual(baseDir, text, sources.ctx);
  return joined.ok ? { path: joined.path, written } : { reason: joined.reason, written };
}

async function fromDirectives(
  filePath: string,
  body: string,
  sources: VariableSources,
  variables: Record<string, unknown>,
): Promise<FirstStep | null> {
  const baseDir = dirnameVirtual(filePath);
  const seen = new Set<string>();
  const found: string[] = [];
  let broken: Candidate | null = null;
  for (const line of outsideFences(body)) {
    if (!DIRECTIVE.test(line)) continue;
    for (const m of line.matchAll(BACKTICKED)) {
      const c = candidateOf(m[1], baseDir, sources, variables);
      if (!c) continue;
      if (c.reason) {
        broken ??= c;
        continue;
      }
      const p = c.path as string;
      if (p === filePath || isWorkflowFile(p) || seen.has(p)) continue;
      seen.add(p);
      if (await fileExists(p, sources.ctx)) found.push(p);
      else broken ??= { written: c.written, reason: `${p} (named as \`${c.written}\`) was not found` };
    }
  }
  if (found.length === 1) return { kind: 'one', path: found[0], foundBy: 'directive' };
  if (found.length > 1) return { kind: 'choices', paths: found, foundBy: 'directive' };
  if (broken) return { kind: 'broken', name: 'step', reason: broken.reason ?? `${broken.written} cannot be loaded` };
  return null;
}

async function fromFrontmatter(frontmatter: Record<string, unknown>, ctx: PathContext): Promise<FirstStep | null> {
  for (const [key, value] of Object.entries(frontmatter)) {
    if (!FIRST_STEP_KEY.test(key) || typeof value !== 'string') continue;
    const lead = leadingVirtualPath(value);
    if (lead === null) return { kind: 'broken', name: key, reason: `${value} cannot be loaded` };
    if (await fileExists(lead, ctx)) return { kind: 'one', path: lead, foundBy: `frontmatter ${key}` };
    return { kind: 'broken', name: key, reason: `${lead} was not found` };
  }
  return null;
}

/** The single steps folder next to the workflow, and its first markdown file in numeric order. */
async function fromStepsFolder(filePath: string, ctx: PathContext): Promise<FirstStep | null> {
  const dir = dirnameVirtual(filePath);
  const entries = await listFolder(dir, ctx);
  const folders = (entries ?? []).filter((e) => e.type === 'directory' && STEPS_FOLDER.test(e.name));
  if (folders.length !== 1) return null;
  const files = await listFolder(`${dir}/${folders[0].name}`, ctx);
  const first = (files ?? []).find((e) => e.type === 'file' && /\.md$/i.test(e.name));
  return first ? { kind: 'one', path: `${dir}/${folders[0].name}/${first.name}`, foundBy: 'steps folder' } : null;
}

/**
 * The first step of a markdown workflow, or null when the file is a plain task. `frontmatter` is
 * already resolved; `body` is as written.
 */
export async function findFirstStep(
  filePath: string,
  body: string,
  frontmatter: Record<string, unknown>,
  sources: VariableSources,
  variables: Record<string, unknown>,
): Promise<FirstStep | null> {
  const directive = await fromDirectives(filePath, body, sources, variables);
  if (directive && directive.kind !== 'broken') return directive;
  const declared = await fromFrontmatter(frontmatter, sources.ctx);
  if (declared && declared.kind !== 'broken') return declared;
  return directive ?? declared ?? (await fromStepsFolder(filePath, sources.ctx));
}

import { parse as parseCsv } from 'csv-parse/sync';
import { expandVariables, MOUNT_TOKENS, resolvePath, toVirtual, walkFolder, type PathContext } from '../../core/paths';
import { fail, isFailure, type ToolFailure } from '../../core/results';
import { centralConfigLayers, customizationLayers, isTable, lookup, mergeTomlLayers, substituteCustomization, type Merged, type TomlTable } from '../bmad-config';
import { globFiles, locateSkill } from '../skills';
import { basenameVirtual, dirnameVirtual, fileExists, readText, type LoadedFile } from './files';
import { splitFrontmatter } from '../../core/frontmatter';
import { loadMarkdownWorkflow } from './markdown';
import type { SkillActivation, SkillInfo, WorkflowResult } from './types';
import type { Shared } from './yaml-workflow';

/** Where BMAD (6.2 on) lists its skills: `canonicalId,name,...,path` with paths relative to the project. */
const SKILL_MANIFEST = `${MOUNT_TOKENS['bundle-root']}/_config/skill-manifest.csv`;
const SKILL_REF = /^skill:\s*([A-Za-z0-9][\w.-]*)$/;
// What a SKILL.md says when the skill is a workflow.md beside it.
const POINTER = /^\s*Follow the instructions in `?\.\/workflow\.md`?\.?\s*$/i;
// 6.12's render skills hand their workflow.md to this script, which resolves its tokens first.
const RENDERED = /_bmad\/scripts\/render_skill\.py/;
// `prd_template = "assets/prd-template.md"`: a bare path, read from the skill folder.
const BARE_FILE = /^(?:\.\/)?[\w.-]+(?:\/[\w.-]+)*\.[A-Za-z0-9]+$/;
const MAX_FACT_FILES = 20;
const MAX_LISTED_FILES = 200;

export function isSkillRef(target: string): boolean {
  return SKILL_REF.test(target.trim());
}

/**
 * The manifest's word on a skill: the folder (or, in some 6.2 rows, the file) it names, as a
 * virtual path; a failure says why there is none.
 */
async function manifestSkillRoot(target: string, name: string, ctx: PathContext): Promise<string | ToolFailure> {
  const manifest = await readText(SKILL_MANIFEST, ctx);
  if (isFailure(manifest)) return fail('ENOENT', `${target}: this install has no skill list (${SKILL_MANIFEST})`, { path: SKILL_MANIFEST });
  let rows: Array<Record<string, string>>;
  try {
    rows = parseCsv(manifest.content, { columns: true, skip_empty_lines: true, relax_column_count: true }) as Array<Record<string, string>>;
  } catch {
    return fail('E_INVALID_ARGS', `${target}: ${SKILL_MANIFEST} is not a readable CSV file`, { path: SKILL_MANIFEST });
  }
  const row = rows.find((r) => r.canonicalId === name) ?? rows.find((r) => r.name === name);
  if (!row?.path) return fail('ENOENT', `${target}: no skill named ${name} in ${SKILL_MANIFEST}`, { path: SKILL_MANIFEST });
  const skillMd = expandVariables(`{project-root}/${row.path.replace(/^\/+/, '')}`, { roots: ctx }).text;
  return /(^|\/)SKILL\.md$/i.test(skillMd) ? dirnameVirtual(skillMd) : skillMd;
}

/**
 * The folder of a named skill, as a virtual path. A bundle's skills are those its manifest
 * lists; a project's are found the way the project lists them: the manifest's folder while it
 * is still there, `_bmad/`, then every tool's skill folder (`.claude/skills/`, `.agents/skills/`,
 * ...), where 6.3 on keep them only.
 */
async function skillRoot(target: string, name: string, ctx: PathContext): Promise<string | ToolFailure> {
  const listed = await manifestSkillRoot(target, name, ctx);
  if (!ctx.project) return listed;
  if (!isFailure(listed) && (await resolvePath(listed, ctx, 'read')).ok) return listed;
  const abs = await locateSkill(ctx.projectRoot, ctx.bundleRoot, name);
  const virtual = abs ? toVirtual(abs, ctx) : null;
  if (virtual) return virtual;
  const why = isFailure(listed) ? listed.error.message.replace(`${target}: `, '') : `${listed} is gone`;
  return fail('ENOENT', `${target}: ${why}, and no skill folder of the project (.claude/skills, .agents/skills, ...) holds ${name}`, { path: target });
}

/** Everything a skill's files may refer to: its folder, its name, its resolved customization, the central config. */
interface SkillScope {
  name: string;
  root: string;
  customization: Merged | null;
  /** `{workflow: ..., agent: ...}` with `{skill-root}` and bare paths made full virtual paths. */
  tables: TomlTable;
  /** The central config layers merged (6.12), or null. */
  central: TomlTable | null;
  centralLayers: string[];
}

async function optionalText(p: string, ctx: PathContext): Promise<string | null> {
  const f = await readText(p, ctx);
  return isFailure(f) ? null : f.content;
}

async function mergedLayers(paths: string[], ctx: PathContext): Promise<Merged> {
  return mergeTomlLayers(await Promise.all(paths.map(async (p) => ({ path: p, text: await optionalText(p, ctx) }))));
}

async function prepare(value: unknown, scope: { root: string; name: string }, ctx: PathContext): Promise<unknown> {
  if (typeof value === 'string') {
    const text = value.split('{skill-root}').join(scope.root).split('{skill-name}').join(scope.name);
    // Bare paths resolve from the skill root (the skills' own convention).
    if (BARE_FILE.test(text) && (await fileExists(`${scope.root}/${text.replace(/^\.\//, '')}`, ctx))) return `${scope.root}/${text.replace(/^\.\//, '')}`;
    return text;
  }
  if (Array.isArray(value)) return Promise.all(value.map((v) => prepare(v, scope, ctx)));
  if (isTable(value)) {
    const out: TomlTable = {};
    for (const [k, v] of Object.entries(value)) out[k] = await prepare(v, scope, ctx);
    return out;
  }
  return value;
}

async function skillScope(root: string, name: string, ctx: PathContext): Promise<SkillScope> {
  const bundle = MOUNT_TOKENS['bundle-root'];
  const hasCustomize = await fileExists(`${root}/customize.toml`, ctx);
  const customization = hasCustomize ? await mergedLayers(customizationLayers(root, bundle, name), ctx) : null;
  const tables: TomlTable = {};
  for (const t of ['workflow', 'agent']) {
    const v = customization?.data[t];
    if (isTable(v)) tables[t] = await prepare(v, { root, name }, ctx);
  }
  const layers = centralConfigLayers(bundle);
  const central = ctx.project && (await fileExists(layers[0], ctx)) ? await mergedLayers(layers, ctx) : null;
  return { name, root, customization, tables, central: central?.data ?? null, centralLayers: central?.merged ?? [] };
}

/** `{{.key}}`: the one value of that key anywhere in the central config (render_skill.py's short form). */
function uniqueConfigValue(tree: TomlTable, key: string): string | undefined {
  const found: unknown[] = [];
  const visit = (t: TomlTable) => {
    for (const [k, v] of Object.entries(t)) {
      if (k === key && !isTable(v)) found.push(v);
      else if (isTable(v)) visit(v);
    }
  };
  visit(tree);
  return found.length === 1 && (typeof found[0] === 'string' || typeof found[0] === 'number' || typeof found[0] === 'boolean') ? String(found[0]) : undefined;
}

/**
 * A skill file's text with what the skill defines put in: `{skill-root}`, `{skill-name}`,
 * `{workflow.*}` / `{agent.*}` from its customization, and render_skill.py's tokens
 * (`{{.key}}`, `{{config.a.b}}`, `[[bmad-snapshot:file.md]]`). Unknown customization keys stay.
 */
function applyScope(text: string, scope: SkillScope): { text: string; unknown: string[] } {
  const custom = scope.customization ? substituteCustomization(text, scope.tables) : { text, unknown: [] };
  let out = custom.text.split('{skill-root}').join(scope.root).split('{skill-name}').join(scope.name);
  out = out.replace(/\[\[bmad-snapshot:([A-Za-z0-9_./-]+\.md)\]\]/g, (_all, file: string) => `${scope.root}/${file}`);
  const central = scope.central;
  if (central) {
    out = out.replace(/\{\{config\.([A-Za-z0-9_.-]+)\}\}/g, (all, dotted: string) => {
      const v = lookup(central, dotted);
      return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : all;
    });
    out = out.replace(/\{\{\.([A-Za-z0-9_]+)\}\}/g, (all, key: string) => uniqueConfigValue(central, key) ?? all);
  }
  return { text: out, unknown: custom.unknown };
}

/** The central config's `core` and module tables as config keys, laid over the module config.yaml. */
function centralOverlay(scope: SkillScope): Record<string, unknown> {
  if (!scope.central) return {};
  const out: Record<string, unknown> = {};
  const modules = isTable(scope.central.modules) ? Object.keys(scope.central.modules).map((m) => `modules.${m}`) : [];
  for (const name of ['core', ...modules]) {
    const t = lookup(scope.central, name);
    if (isTable(t)) for (const [k, v] of Object.entries(t)) if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
  }
  return out;
}

async function skillFiles(root: string, ctx: PathContext): Promise<string[]> {
  const target = await resolvePath(root, ctx, 'read');
  if (!target.ok || target.kind !== 'directory') return [];
  const out: string[] = [];
  try {
    for await (const e of walkFolder(target.abs, { maxDepth: 3, maxEntries: MAX_LISTED_FILES, onUnreadable: 'skip' })) {
      if (e.type === 'file') out.push(`${target.virtual}/${e.path}`);
    }
  } catch {
    // A listing is a courtesy; the skill still loads without it.
  }
  return out;
}

/** `file:<path or glob>`, or a sentence that loads one file (`Load {project-root}/docs/x.md`). */
function fileEntry(entry: string): string | null {
  const m = /^file:\s*(.+)$/i.exec(entry.trim()) ?? /^\s*(?:load|read)\s+(?:the\s+file\s+)?`?(\{[a-z_-]+\}\/\S+?)`?[.;]?\s*$/i.exec(entry);
  return m ? m[1].trim() : null;
}

/**
 * What the server can do of a skill's activation (its `[workflow]` block): load the files its
 * persistent facts and activation steps name, hand over literal facts, and list the rest.
 */
async function activate(scope: SkillScope, ctx: PathContext, done: string[]): Promise<SkillActivation> {
  const block = isTable(scope.tables.workflow) ? scope.tables.workflow : isTable(scope.tables.agent) ? scope.tables.agent : {};
  const activation: SkillActivation = { done, facts: [], loaded: [], not_loaded: [], steps: [] };
  const load = async (pattern: string) => {
    const matched = await globFiles(pattern, ctx, { maxFiles: MAX_FACT_FILES - activation.loaded.length });
    if (isFailure(matched)) return void activation.not_loaded.push(`${pattern}: ${matched.error.message}`);
    if (!matched.files.length) return void activation.not_loaded.push(`${pattern}: no file matches`);
    for (const file of matched.files) {
      if (activation.loaded.some((l) => l.path === file)) continue;
      const read = await readText(file, ctx);
      if (isFailure(read)) activation.not_loaded.push(`${file}: ${read.error.message}`);
      else activation.loaded.push({ path: read.path, content: read.content });
    }
  };
  const run = async (entries: unknown, label: string) => {
    for (const e of Array.isArray(entries) ? entries : []) {
      if (typeof e !== 'string' || !e.trim()) continue;
      const file = fileEntry(e);
      if (file) await load(file);
      else activation.steps.push(`${label}: ${e.trim()}`);
    }
  };
  await run(block.activation_steps_prepend, 'prepend');
  for (const f of Array.isArray(block.persistent_facts) ? block.persistent_facts : []) {
    if (typeof f !== 'string' || !f.trim()) continue;
    const file = /^file:\s*(.+)$/i.exec(f.trim());
    if (file) await load(file[1].trim());
    else activation.facts.push(f.trim());
  }
  await run(block.activation_steps_append, 'append');
  return activation;
}

/** The skill folder a file belongs to: the nearest folder above it (up to three) holding a SKILL.md. */
async function owningSkill(file: string, ctx: PathContext): Promise<string | null> {
  let dir = dirnameVirtual(file);
  for (let depth = 0; depth < 4 && dir.includes('/'); depth++) {
    if (await fileExists(`${dir}/SKILL.md`, ctx)) return dir;
    dir = dirnameVirtual(dir);
  }
  return null;
}

async function loadInScope(file: LoadedFile, scope: SkillScope, ctx: PathContext, shared: Shared): Promise<WorkflowResult | ToolFailure> {
  const applied = applyScope(file.content, scope);
  const workflowTable = isTable(scope.tables.workflow) ? scope.tables.workflow : {};
  const result = await loadMarkdownWorkflow({ path: file.path, content: applied.text }, ctx, shared, {
    data: workflowTable,
    config: centralOverlay(scope),
    stepFilesOnly: basenameVirtual(file.path) === 'SKILL.md',
  });
  if (isFailure(result)) return result;
  if (result.step) {
    // The first step came in through the markdown loader; what the skill defines means the same there.
    const inStep = applyScope(result.step.content, scope);
    const variables = { ...shared.agent, ...result.config, ...result.workflow };
    result.step.content = expandVariables(inStep.text, { roots: ctx, variables, date: shared.date }).text;
    applied.unknown.push(...inStep.unknown.filter((k) => !applied.unknown.includes(k)));
  }
  for (const key of applied.unknown) result.unresolved.push(`${key}: {${key}} is not defined by the skill's customization`);
  if (scope.customization?.problems.length) result.warnings = [...(result.warnings ?? []), ...scope.customization.problems];
  return result;
}

async function info(scope: SkillScope, ctx: PathContext, description: unknown): Promise<SkillInfo> {
  const out: SkillInfo = { name: scope.name, root: scope.root, files: await skillFiles(scope.root, ctx) };
  if (typeof description === 'string' && description.trim()) out.description = description.trim();
  if (scope.customization) out.customization = scope.customization.merged;
  return out;
}

/**
 * `skill:<name>` (a menu's target, or the model invoking a skill by name): the skill's SKILL.md
 * with everything it defines resolved; its workflow.md when SKILL.md only points there (6.2,
 * 6.3) or hands it to render_skill.py (6.12), rendered the same way. Its customization's
 * persistent facts and activation steps that load files come back loaded.
 */
export async function loadSkill(target: string, ctx: PathContext, shared: Shared): Promise<WorkflowResult | ToolFailure> {
  const name = (SKILL_REF.exec(target.trim()) as RegExpExecArray)[1];
  const root = await skillRoot(target, name, ctx);
  if (isFailure(root)) return root;
  // A manifest row naming a plain file: that file is what the skill runs.
  if (/\.md$/i.test(root) && basenameVirtual(root) !== 'SKILL.md') {
    const file = await readText(root, ctx);
    return isFailure(file) ? file : loadMarkdownWorkflow({ path: file.path, content: file.content }, ctx, shared);
  }
  const skillMd = await readText(/\.md$/i.test(root) ? root : `${root}/SKILL.md`, ctx);
  if (isFailure(skillMd)) return skillMd;
  const dir = dirnameVirtual(skillMd.path);
  const front = splitFrontmatter(skillMd.content);
  const scope = await skillScope(dir, name, ctx);
  const done: string[] = [];
  const c = scope.customization;
  if (c) done.push(`Resolved the skill's customization (do not run resolve_customization.py): merged ${c.merged.join(' → ') || 'no layer'} by BMAD's rules${c.invalid.length ? ` (left out as not valid TOML: ${c.invalid.join(', ')})` : ''}; {workflow.*} in its text shows the result.`);
  if (scope.centralLayers.length) done.push(`Config: ${scope.centralLayers.join(' → ')} laid over the module config, as resolve_config.py does.`);

  let entry: LoadedFile = { path: skillMd.path, content: skillMd.content };
  const workflowMd = `${dir}/workflow.md`;
  const pointer = POINTER.test(front.body);
  const rendered = !pointer && RENDERED.test(front.body);
  if ((pointer || rendered) && (await fileExists(workflowMd, ctx))) {
    const wf = await readText(workflowMd, ctx);
    if (isFailure(wf)) return wf;
    entry = { path: wf.path, content: wf.content };
    if (rendered) done.push(`Rendered ${wf.path} the way render_skill.py does (its tokens resolved; its snapshot files are the skill's own files, loaded resolved with execute_workflow): do not run render_skill.py.`);
  }
  const result = await loadInScope(entry, scope, ctx, shared);
  if (isFailure(result)) return result;
  if (result.kind === 'task') result.kind = 'skill';
  result.skill = await info(scope, ctx, front.data.description);
  if (scope.customization || done.length) result.activation = await activate(scope, ctx, done);
  return result;
}

/**
 * A file inside a skill folder (a reference, a step) loaded by path: resolved with its skill's
 * scope too, so `{workflow.*}` and `{skill-root}` mean there what they mean in SKILL.md. Null
 * when the file belongs to no skill.
 */
export async function loadSkillFile(file: LoadedFile, ctx: PathContext, shared: Shared): Promise<WorkflowResult | ToolFailure | null> {
  if (/\.ya?ml$/i.test(file.path)) return null;
  const dir = await owningSkill(file.path, ctx);
  if (!dir) return null;
  const scope = await skillScope(dir, basenameVirtual(dir), ctx);
  const result = await loadInScope(file, scope, ctx, shared);
  if (isFailure(result)) return result;
  result.skill = { name: scope.name, root: scope.root, files: [] };
  if (scope.customization) result.skill.customization = scope.customization.merged;
  return result;
}


import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { parse as parseYaml } from 'yaml';
import type { AgentCommand } from '../agents/parser';
import { listOutputTree, type OutputEntry } from '../outputs';
import { customizationLayers, isTable, mergeTomlLayers } from '../bmad-config';
import type { Project, ProjectCatalog } from './catalog';

/**
 * Where a project stands on BMAD's journey, read from the install's own help catalog (the one
 * `bmad-help` reads: `_config/bmad-help.csv`, else the modules' `module-help.csv`) and from the
 * documents in the project. Nothing here names a phase, a workflow or an agent: 6.0.x, 6.3 and
 * 6.12 each answer from their own catalog's columns.
 */
export interface Journey {
  phases: JourneyPhase[];
  /** The required step to take next first, then optional steps meant to come before it. */
  next: JourneyStep[];
  /** The install's help, when it has one: its command, run by any agent of the project. */
  help: { command: string } | null;
}

export type JourneyStatus = 'done' | 'started' | 'not-started';

export interface JourneyPhase {
  /** The catalog's own phase id (`1-analysis`, `plan`, `anytime`). */
  id: string;
  name: string;
  status: JourneyStatus;
  documents: JourneyDocument[];
}

export interface JourneyDocument {
  /** Relative to the project root, posix. */
  path: string;
  /** What the catalog says the step outputs (`prd`, `product brief`), or the step's name. */
  kind: string;
  /** `started` when the document says it is a draft. */
  status: 'done' | 'started';
}

export interface JourneyStep {
  agentId: string;
  /** The agent's menu command that starts the step (`*CP`). */
  command: string;
  label: string;
  why: string;
  /** The catalog marks it required; the others are optional steps before it. */
  required: boolean;
}

/** One catalog row, whichever release's columns it came in. */
interface Entry {
  index: number;
  module: string;
  phase: string;
  name: string;
  code: string;
  /** 6.12: the skill; 6.0.x: the IDE command (`bmad-bmm-create-prd`). */
  skill: string;
  /** 6.0.x: the workflow file the agent's menu item runs. */
  workflowFile: string;
  agentName: string;
  required: boolean;
  sequence: number;
  description: string;
  outputLocation: string;
  outputs: string;
  precededBy: string[];
}

const ANYTIME = 'anytime';
const DRAFT = /^(draft|in[-_ ]?progress|incomplete|partial|wip|blocked|started)$/i;
const STOP_WORDS = new Set(['and', 'or', 'the', 'of', 'a', 'an', 'with', 'for', 'to', 'md', 'document', 'documents', 'file', 'files', 'optional', 'companion', 'plus']);
const MAX_FRONTMATTER_BYTES = 4096;
const MAX_OPTIONAL_STEPS = 3;

function col(row: Record<string, string>, ...names: string[]): string {
  for (const n of names) {
    const v = row[n];
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  return '';
}

/** Rows by their header's names, or null when the rows do not have the header's shape (6.3 assembles its catalog under an older header). */
function catalogRows(text: string): Record<string, string>[] | null {
  let table: string[][];
  try {
    table = parseCsv(text, { skip_empty_lines: true, relax_column_count: true, relax_quotes: true, bom: true }) as string[][];
  } catch {
    return null;
  }
  const [header, ...raw] = table;
  if (!header || !raw.length) return [];
  // 6.3 writes the rows of skills without arguments one field short: their empty `args` left out.
  const args = header.indexOf('args');
  const rows = raw.map((r) => (args >= 0 && r.length === header.length - 1 ? [...r.slice(0, args), '', ...r.slice(args)] : r));
  const fitting = rows.filter((r) => r.length === header.length).length;
  if (fitting * 2 < rows.length) return null;
  const out = rows.map((r) => Object.fromEntries(header.map((h, i) => [h.trim(), r[i] ?? ''])));
  // Rows written in another column order than their header: `required` holds no booleans.
  const flags = out.filter((r) => /^(true|false)?$/i.test((r.required ?? '').trim())).length;
  return flags < out.length * 0.9 ? null : out;
}

function parseCatalog(text: string, offset: number): Entry[] | null {
  const rows = catalogRows(text);
  if (!rows) return null;
  return rows.flatMap((row, i) => {
    const skill = col(row, 'skill', 'command');
    // `_meta` rows carry a module's documentation address, not a step.
    if (skill === '_meta') return [];
    const phase = col(row, 'phase') || ANYTIME;
    const sequence = Number(col(row, 'sequence'));
    return [
      {
        index: offset + i,
        module: col(row, 'module'),
        phase,
        name: col(row, 'display-name', 'name') || skill,
        code: col(row, 'menu-code', 'code'),
        skill,
        workflowFile: col(row, 'workflow-file'),
        agentName: col(row, 'agent-name'),
        required: /^true$/i.test(col(row, 'required')),
        sequence: Number.isFinite(sequence) && col(row, 'sequence') ? sequence : Number.POSITIVE_INFINITY,
        description: col(row, 'description'),
        outputLocation: col(row, 'output-location'),
        outputs: col(row, 'outputs'),
        precededBy: col(row, 'preceded-by', 'after')
          .split(/[\s,;|]+/)
          .map((s) => s.split(':')[0])
          .filter(Boolean),
      },
    ];
  });
}

/** The assembled catalog, or each module's own when the install has none assembled. */
async function readCatalog(project: Project): Promise<Entry[]> {
  const install = project.install;
  if (install.configDir) {
    const text = await fs.readFile(path.join(/*turbopackIgnore: true*/ install.configDir, 'bmad-help.csv'), 'utf8').catch(() => null);
    const assembled = text === null ? null : parseCatalog(text, 0);
    if (assembled) return assembled;
  }
  const out: Entry[] = [];
  for (const m of ['core', ...install.modules.filter((x) => x !== 'core')]) {
    const text = await fs.readFile(path.join(/*turbopackIgnore: true*/ install.root, m, 'module-help.csv'), 'utf8').catch(() => null);
    if (text !== null) out.push(...(parseCatalog(text, out.length) ?? []));
  }
  return out;
}

/** `1-analysis` → `Analysis`, `plan` → `Plan`. */
function phaseName(id: string): string {
  const words = id.replace(/^\d+[-_ ]*/, '').replace(/[-_]+/g, ' ').trim() || id;
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Phases in the catalog's order of first appearance; numbered ones by number, `anytime` last. */
function phaseOrder(entries: Entry[]): string[] {
  const seen: string[] = [];
  for (const e of entries) if (!seen.includes(e.phase)) seen.push(e.phase);
  const num = (p: string) => {
    const m = /^(\d+)/.exec(p);
    return m ? Number(m[1]) : null;
  };
  const numbered = seen.filter((p) => num(p) !== null).sort((a, b) => (num(a) as number) - (num(b) as number));
  const slots = seen.map((p) => (num(p) !== null ? null : p));
  // Numbered phases keep the slots they first appeared in, in their numbers' order.
  let k = 0;
  const ordered = slots.map((p) => p ?? numbered[k++]);
  return [...ordered.filter((p) => p !== ANYTIME), ...ordered.filter((p) => p === ANYTIME)];
}

function posix(p: string): string {
  return p.split(path.sep).join('/');
}

/**
 * A catalog or skill location (`planning_artifacts`, `{output_folder}/specs/spec-{slug}`,
 * `{planning_artifacts}/briefs`) as a folder relative to the project, or null when it names
 * no folder of the project's documents (the installed method, a URL, words).
 */
function locationOf(raw: string, project: Project, outputRel: string): string | null {
  const config = project.install.config;
  const variable = (name: string): string | undefined => {
    if (name === 'output_folder') return outputRel;
    // A document folder as BMAD means it (`docs/planning` is the project's), as the agents write there.
    const folder = project.install.documentFolders[name] ?? project.install.documentFolders[name.replace(/-/g, '_')];
    if (folder) return folder;
    const v = config[name] ?? config[name.replace(/-/g, '_')];
    return typeof v === 'string' ? v : undefined;
  };
  let text = raw.trim();
  if (/^[A-Za-z][\w-]*$/.test(text)) {
    const v = variable(text);
    if (v === undefined) return null;
    text = v;
  }
  for (let i = 0; i < 3; i++) {
    text = text.replace(/\{([A-Za-z][\w-]*)\}/g, (whole, name: string) => {
      if (name === 'project-root' || name === 'project_root') return '';
      const v = variable(name);
      return v === undefined ? whole : v;
    });
  }
  // Up to the first value only known when the skill runs (`{slug}`, `{date}`): its folder.
  const open = text.indexOf('{');
  if (open >= 0) text = text.slice(0, open).replace(/[^/]*$/, '');
  if (/\s|:\/\//.test(text)) return null;
  const rel = posix(path.posix.normalize(text.replace(/^\/+/, '').replace(/^\.\//, ''))).replace(/\/+$/, '');
  if (!rel || rel === '.' || rel.startsWith('..')) return null;
  if (rel === project.install.folder || rel.startsWith(`${project.install.folder}/`)) return null;
  return rel;
}

function stem(word: string): string {
  const w = word.toLowerCase();
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

function words(text: string): string[] {
  return text.split(/[^A-Za-z0-9]+/).filter(Boolean).map(stem);
}

function outputTokens(outputs: string): string[] | '*' {
  if (outputs.trim() === '*') return '*';
  return [...new Set(words(outputs).filter((w) => !STOP_WORDS.has(w) && !/^\d+$/.test(w)))];
}

interface Located {
  entry: Entry;
  /** Folders relative to the project where its documents land. */
  folders: string[];
  /** Folders its skill's configuration names (6.12 `*_output_path`): a document there is this entry's. */
  skillFolders: string[];
  tokens: string[] | '*';
}

/** Folders a 6.12 skill's `[workflow]` configuration writes to (`brief_output_path`, `output_dir`). */
async function skillOutputFolders(project: Project, outputRel: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  await Promise.all(
    project.install.skills.map(async (skill) => {
      if (!skill.customizable) return;
      const layers = customizationLayers(skill.dir, project.install.root, skill.name);
      const texts = await Promise.all(layers.map((f) => fs.readFile(f, 'utf8').catch(() => null)));
      const merged = mergeTomlLayers(layers.map((p, i) => ({ path: p, text: texts[i] })));
      const workflow = merged.data.workflow;
      if (!isTable(workflow)) return;
      const folders: string[] = [];
      for (const [key, value] of Object.entries(workflow)) {
        if (typeof value !== 'string' || !/(^|_)output_(path|dir)$|_output_path$|^output_dir$/.test(key)) continue;
        const rel = locationOf(value, project, outputRel);
        if (rel) folders.push(rel);
      }
      if (folders.length) out.set(skill.name, folders);
    }),
  );
  return out;
}

/** Every document under the folders the catalog names, relative to the project (hidden files never). */
async function documentsIn(project: Project, folders: string[]): Promise<string[]> {
  // Only the top folders: one walk covers every folder inside them.
  const tops = [...new Set(folders)].sort().filter((f, i, all) => !all.slice(0, i).some((o) => f.startsWith(`${o}/`)));
  const found = new Set<string>();
  const flatten = (list: OutputEntry[]): OutputEntry[] => list.flatMap((e) => (e.type === 'directory' ? flatten(e.children ?? []) : [e]));
  for (const top of tops) {
    const abs = path.join(/*turbopackIgnore: true*/ project.root, top);
    const real = await fs.realpath(abs).catch(() => null);
    // The walker never follows a symlink; a folder that resolves outside the project is not read.
    if (!real || (real !== project.root && !real.startsWith(`${project.root}${path.sep}`))) continue;
    for (const f of flatten(await listOutputTree(abs).catch(() => []))) found.add(`${top}/${f.path}`);
  }
  return [...found].sort();
}

/** A document that says it is unfinished: frontmatter `status: draft` (or in-progress, partial...). */
async function isDraft(project: Project, rel: string): Promise<boolean> {
  if (!/\.(md|markdown|ya?ml)$/i.test(rel)) return false;
  const handle = await fs.open(path.join(/*turbopackIgnore: true*/ project.root, rel), 'r').catch(() => null);
  if (!handle) return false;
  try {
    const buf = Buffer.alloc(MAX_FRONTMATTER_BYTES);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const text = buf.subarray(0, bytesRead).toString('utf8');
    const front = /\.md$|\.markdown$/i.test(rel) ? /^---\r?\n([\s\S]*?)\r?\n---/.exec(text)?.[1] : text;
    const status = front ? /^status:\s*['"]?([A-Za-z _-]+?)['"]?\s*$/m.exec(front)?.[1] : undefined;
    return !!status && DRAFT.test(status.trim());
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** BMAD's sprint status file, beside the stories in the implementation artifacts folder. */
const SPRINT_FILE = 'sprint-status.yaml';
/** Bigger than any real sprint: past it the file is not read. */
const MAX_SPRINT_BYTES = 1024 * 1024;
/** A story's key in `development_status` (`1-2-slug`, `1-2a-slug`); epics and retrospectives are not stories. */
const STORY_KEY = /^\d{1,9}-\d{1,9}[a-z]?-./;

/** The stories of a sprint and how many of them are done. */
interface Sprint {
  /** The sprint status file, relative to the project. */
  path: string;
  stories: number;
  done: number;
  /** Stories past the backlog that are not done (ready, in progress, in review). */
  moving: number;
}

/**
 * The sprint as the project folder holds it, when it has one (the same file the journey counts as
 * sprint planning's document): its stories and how many are done. Null when there is no such file,
 * or it is too big or no sprint status (a broken file says nothing about the sprint).
 */
async function readSprint(project: Project, outputRel: string, docs: string[]): Promise<Sprint | null> {
  const folder = project.install.documentFolders.implementation_artifacts ?? `${outputRel}/implementation-artifacts`;
  const rel = `${folder}/${SPRINT_FILE}`;
  // Only a file the walker found (never through a link, never outside the project).
  if (!docs.includes(rel)) return null;
  const handle = await fs.open(path.join(/*turbopackIgnore: true*/ project.root, rel), fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0)).catch(() => null);
  if (!handle) return null;
  let text: string;
  try {
    const buf = Buffer.alloc(MAX_SPRINT_BYTES + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    if (bytesRead > MAX_SPRINT_BYTES) return null;
    text = buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close().catch(() => undefined);
  }
  let data: unknown;
  try {
    data = parseYaml(text, { uniqueKeys: false, prettyErrors: false });
  } catch {
    return null;
  }
  const status = data && typeof data === 'object' ? (data as Record<string, unknown>).development_status : null;
  if (!status || typeof status !== 'object' || Array.isArray(status)) return null;
  const sprint: Sprint = { path: rel, stories: 0, done: 0, moving: 0 };
  for (const [key, value] of Object.entries(status as Record<string, unknown>)) {
    if (!STORY_KEY.test(key)) continue;
    const s = typeof value === 'string' ? value.trim().toLowerCase() : '';
    sprint.stories++;
    if (s === 'done') sprint.done++;
    else if (s && s !== 'backlog') sprint.moving++;
  }
  return sprint;
}

/** The entry a document belongs to: the skill whose configured folder holds it, else the best match of the catalog's outputs. */
function ownerOf(doc: string, located: Located[]): Located | null {
  let best: { l: Located; score: number } | null = null;
  for (const l of located) {
    for (const f of l.skillFolders) {
      if (doc.startsWith(`${f}/`) && (!best || f.length + 1000 > best.score)) best = { l, score: f.length + 1000 };
    }
  }
  if (best) return best.l;
  const docWords = new Set(words(doc));
  for (const l of located) {
    const folder = l.folders.find((f) => doc.startsWith(`${f}/`));
    if (!folder || l.tokens.length === 0) continue;
    let score: number;
    if (l.tokens === '*') score = 0.1;
    else {
      const local = new Set(words(doc.slice(folder.length + 1)));
      const hits = l.tokens.filter((t) => local.has(t) || docWords.has(t)).length;
      if (hits === 0) continue;
      // More words matched first, then the more specific entry (fewer words it did not match).
      score = hits + hits / l.tokens.length / 2;
    }
    if (!best || score > best.score) best = { l, score };
  }
  return best?.l ?? null;
}

interface Offer {
  agentId: string;
  command: string;
}

/** Which installed agent's menu offers an entry, and the command that starts it there. */
function offerOf(entry: Entry, menus: Array<{ agentId: string; commands: AgentCommand[] }>): Offer | null {
  const sameCode = (c: AgentCommand) => !!entry.code && c.code?.toLowerCase() === entry.code.toLowerCase();
  const targets = (c: AgentCommand) => {
    const t = c.target.trim();
    if (entry.workflowFile && t.replace(/^\{project-root\}\//, '').replace(/^\.\//, '') === entry.workflowFile.replace(/^\.\//, '')) return true;
    return !!entry.skill && c.kind === 'skill' && /^skill:\s*(\S+)$/.exec(t)?.[1] === entry.skill;
  };
  // The agent the catalog names (6.0.x), with the item of the catalog's code.
  if (entry.agentName) {
    const named = menus.find((m) => m.agentId === entry.agentName);
    const item = named?.commands.find((c) => sameCode(c) && (targets(c) || !entry.workflowFile)) ?? named?.commands.find(targets);
    if (named && item) return { agentId: named.agentId, command: item.cmd };
  }
  // Any agent whose menu runs it, preferring the item with the catalog's code.
  const offers = menus.flatMap((m) => m.commands.filter(targets).map((c) => ({ m, c })));
  const chosen = offers.find((o) => sameCode(o.c)) ?? offers[0];
  return chosen ? { agentId: chosen.m.agentId, command: chosen.c.cmd } : null;
}

/** The name the install's help goes by: BMAD's `bmad-help` skill (6.2 on) or help task (6.0.x). */
export const HELP_NAME = 'bmad-help';

/**
 * The install's help as a menu command any project agent can run: the `bmad-help` skill, or the
 * catalog's help task (6.0.x `_bmad/core/tasks/help.md`). Null when the install has neither.
 */
function helpItem(project: Project, entries: Entry[]): Pick<AgentCommand, 'kind' | 'target' | 'description'> | null {
  const skill = project.install.skills.find((s) => s.name === HELP_NAME);
  const row = entries.find((e) => e.skill === HELP_NAME || e.name === HELP_NAME);
  const description = row?.description || 'What to do next, from the method\'s own catalog';
  if (skill) return { kind: 'skill', target: `skill:${HELP_NAME}`, description };
  if (row?.workflowFile && !row.workflowFile.includes('..')) return { kind: 'exec', target: `{project-root}/${row.workflowFile.replace(/^\.\//, '')}`, description };
  return null;
}

/** The help command (`*bmad-help`) for an agent whose menu has none, numbered after its items. */
export async function helpCommand(project: Project, after: AgentCommand[]): Promise<AgentCommand | null> {
  if (after.some((c) => c.name === HELP_NAME || /^skill:\s*bmad-help$/.test(c.target.trim()))) return null;
  const item = helpItem(project, await readCatalog(project));
  if (!item) return null;
  const number = after.reduce((n, c) => Math.max(n, c.number), 0) + 1;
  return { cmd: `*${HELP_NAME}`, name: HELP_NAME, number, ...item, attrs: {} };
}

/** The journey in words, for the model that answers "what next?" with the help skill. */
export function journeyBrief(journey: Journey): string {
  const phases = journey.phases.map((p) => {
    const docs = p.documents.map((d) => `${d.path} (${d.kind}${d.status === 'started' ? ', draft' : ''})`).join('; ');
    return `- ${p.name} (${p.id}): ${p.status}${docs ? ` — ${docs}` : ''}`;
  });
  const next = journey.next.map((n) => `- ${n.command} with agent ${n.agentId}: ${n.label}${n.required ? ' (required)' : ' (optional)'} — ${n.why}`);
  return [
    'Where this project stands, read by the server from the install\'s help catalog and the documents present (a document is evidence a step started; a draft is not finished):',
    ...phases,
    next.length ? 'Steps the catalog puts next, with the agent whose menu offers each:' : 'The catalog has no required step left that an installed agent offers.',
    ...next,
    'Follow the help skill to tell the user where they are and what to do next; name the agent and its command for each step.',
  ].join('\n');
}

/**
 * The journey of a project. A step is done when a document of it exists and does not say it is a
 * draft (BMAD's own help treats a document as evidence, and its skills mark drafts in the
 * frontmatter). A phase is done when it has documents, none a draft, and every required step of it
 * is done; started when it has documents; not started otherwise. Once the project has a sprint
 * (its sprint status file lists stories), the last phase follows the sprint instead: its required
 * steps (sprint planning aside) and the phase are done when every story is done, started while a
 * story has moved or the phase has documents, and never done while a story waits — a story file
 * is evidence that a story was written, not that it was built. `next` is the first required step,
 * in phase order, that is not done and that an installed agent's menu offers, after the optional
 * steps meant to come before it (its `preceded-by`; without that column, the last optional step of
 * the phase before it while that phase is empty) that are not done.
 */
export async function projectJourney(projects: Pick<ProjectCatalog, 'getAgent'>, project: Project): Promise<Journey> {
  const entries = await readCatalog(project);
  const outputRel = posix(path.relative(project.root, project.install.outputRoot));
  const skillFolders = await skillOutputFolders(project, outputRel);
  const located: Located[] = entries.map((entry) => ({
    entry,
    folders: entry.outputLocation
      .split('|')
      .map((l) => locationOf(l, project, outputRel))
      .filter((l): l is string => !!l),
    skillFolders: skillFolders.get(entry.skill) ?? [],
    tokens: outputTokens(entry.outputs),
  }));
  // A skill listed twice (two actions) keeps its configured folders on its first row only.
  const firstRow = new Set<string>();
  for (const l of located) {
    if (!l.skillFolders.length) continue;
    if (firstRow.has(l.entry.skill)) l.skillFolders = [];
    else firstRow.add(l.entry.skill);
  }
  const docs = await documentsIn(project, [outputRel, ...located.flatMap((l) => [...l.folders, ...l.skillFolders])]);

  const byEntry = new Map<number, JourneyDocument[]>();
  for (const doc of docs) {
    const owner = ownerOf(doc, located);
    if (!owner) continue;
    const list = byEntry.get(owner.entry.index) ?? [];
    list.push({ path: doc, kind: owner.entry.outputs && owner.entry.outputs !== '*' ? owner.entry.outputs : owner.entry.name, status: (await isDraft(project, doc)) ? 'started' : 'done' });
    byEntry.set(owner.entry.index, list);
  }
  const order = phaseOrder(entries);
  // The sprint's phase is the journey's last (before the anytime steps): where stories are built.
  const sprint = await readSprint(project, outputRel, docs);
  const sprintPhase = sprint?.stories ? ([...order].reverse().find((p) => p !== ANYTIME) ?? null) : null;
  const sprintDone = !!sprint && sprint.stories > 0 && sprint.done === sprint.stories;
  const sprintOwner = sprint ? [...byEntry].find(([, list]) => list.some((d) => d.path === sprint.path))?.[0] : undefined;
  /** A required step of the sprint's phase (but sprint planning itself) is done when every story is. */
  const bySprint = (e: Entry) => !!sprintPhase && e.phase === sprintPhase && e.required && e.index !== sprintOwner;
  const entryStatus = (e: Entry): JourneyStatus => {
    const list = byEntry.get(e.index) ?? [];
    if (bySprint(e)) return sprintDone ? 'done' : list.length || sprint!.moving || sprint!.done ? 'started' : 'not-started';
    if (!list.length) return 'not-started';
    return list.some((d) => d.status === 'started') ? 'started' : 'done';
  };
  // A skill with two rows (create and validate, say) is done once either wrote its document.
  const skillDone = (skill: string) => entries.some((e) => e.skill === skill && entryStatus(e) === 'done');

  const inPhase = (p: string) =>
    entries
      .filter((e) => e.phase === p)
      .sort((a, b) => (a.sequence === b.sequence ? a.index - b.index : a.sequence - b.sequence));
  const phases: JourneyPhase[] = order.map((id) => {
    const list = inPhase(id);
    const documents = list.flatMap((e) => byEntry.get(e.index) ?? []);
    const required = list.filter((e) => e.required);
    // The sprint's phase follows the sprint: done when every story is, whatever documents say.
    if (id === sprintPhase && sprint) {
      const status: JourneyStatus = sprintDone ? 'done' : documents.length || sprint.moving || sprint.done ? 'started' : 'not-started';
      return { id, name: phaseName(id), status, documents };
    }
    const status: JourneyStatus = !documents.length ? 'not-started' : documents.every((d) => d.status === 'done') && required.every((e) => entryStatus(e) === 'done') ? 'done' : 'started';
    return { id, name: phaseName(id), status, documents };
  });

  const menus = (
    await Promise.all(
      project.install.agents.map(async (a) => {
        const resolved = await projects.getAgent(project.id, a.id);
        return resolved ? { agentId: resolved.summary.id, commands: resolved.agent.commands } : null;
      }),
    )
  ).filter((m): m is { agentId: string; commands: AgentCommand[] } => m !== null);

  const next: JourneyStep[] = [];
  const ordered = order.flatMap(inPhase);
  const required = ordered.find((e) => e.required && e.phase !== ANYTIME && entryStatus(e) !== 'done' && offerOf(e, menus));
  if (required) {
    const offer = offerOf(required, menus) as Offer;
    const started = entryStatus(required) === 'started';
    const doc = byEntry.get(required.index)?.[0]?.path;
    const left = sprint ? sprint.stories - sprint.done : 0;
    next.push({
      ...offer,
      label: required.name,
      why: bySprint(required)
        ? `${left} of the sprint's ${sprint!.stories} ${sprint!.stories === 1 ? 'story is' : 'stories are'} not done yet${required.description ? `: ${required.description}` : '.'}`
        : started
          ? `${required.name} is started (${doc}) but not final: go on with it.`
          : `Required next in ${phaseName(required.phase)}${required.description ? `: ${required.description}` : '.'}`,
      required: true,
    });
    const before = required.precededBy.length
      ? ordered.filter((e) => required.precededBy.includes(e.skill) && !e.required)
      : (() => {
          const at = order.indexOf(required.phase);
          const previous = at > 0 ? order[at - 1] : null;
          const prevPhase = phases.find((p) => p.id === previous);
          if (!previous || !prevPhase || prevPhase.status !== 'not-started') return [];
          return inPhase(previous).filter((e) => !e.required && offerOf(e, menus) && outputTokens(e.outputs).length).slice(-1);
        })();
    for (const e of before) {
      if (next.length > MAX_OPTIONAL_STEPS || skillDone(e.skill) || entryStatus(e) !== 'not-started') continue;
      const offer = offerOf(e, menus);
      if (!offer || next.some((n) => n.agentId === offer.agentId && n.command === offer.command)) continue;
      next.push({ ...offer, label: e.name, why: `Optional, before ${required.name}${e.description ? `: ${e.description}` : '.'}`, required: false });
    }
  }
  return { phases, next, help: helpItem(project, entries) ? { command: `*${HELP_NAME}` } : null };
}

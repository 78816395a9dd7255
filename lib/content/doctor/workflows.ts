import type { PathContext } from '../../core/paths';
import { isFailure, type Severity } from '../../core/results';
import { isSkillRef, isStepFile, loadWorkflow, unresolvedName, type WorkflowResult } from '../workflows';
import { lookUp, sandboxReader } from './place';

/** Something wrong in a workflow (or in the menu item that runs it), paths still virtual. */
export interface Finding {
  /** Virtual path of the file the problem is in. */
  file: string;
  severity: Severity;
  reason: string;
  /**
   * Set for a `{name}` nobody defines: a value the workflow sets itself while it runs, unless
   * workflows read the same name from their config (then the config misses it).
   */
  undefinedName?: string;
  /** The menu item's own problem (its target); the reason reads on from the command, `*CP points to ...`. */
  onMenuItem?: boolean;
}

interface FileCheck {
  findings: Finding[];
  /** Step files it leads to, for the walk along the chain. */
  next: string[];
  /** Step files it already checked (a workflow's first step comes loaded with it). */
  covered: string[];
}

// The keys a step-file workflow names its first step with (the loader reports them when broken).
const FIRST_STEP_KEY = /^(first|next|start|initial)_?step(_?file)?$/i;
// A file of the installed method, named exactly: no glob, no variable left, an extension.
const METHOD_FILE = /^\{(bundle-root|core-root)\}\/[^\s*?{}<>|"]+\.[A-Za-z0-9]{1,5}$/;
const CONFIG_REF = /\{config_source\}:([A-Za-z0-9_]+)/g;
const NEWER_FORM = /^(\S+) does not exist; loaded (\S+), the same workflow in its newer form$/;
const PREFIXED = /^(\{[a-z_-]+\}\/\S+?): (.+)$/s;

function basename(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

function flatten(values: Record<string, unknown>, prefix = ''): Array<{ keyPath: string; key: string; value: unknown }> {
  const out: Array<{ keyPath: string; key: string; value: unknown }> = [];
  for (const [key, value] of Object.entries(values)) {
    const keyPath = prefix ? `${prefix}.${key}` : key;
    if (value && typeof value === 'object' && !(value instanceof Date)) out.push(...flatten(value as Record<string, unknown>, keyPath));
    else out.push({ keyPath, key, value });
  }
  return out;
}

function variablesKey(variables: Record<string, string>): string {
  return JSON.stringify(Object.entries(variables).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** What an `unresolved[]` entry costs: a first step that cannot load stops the workflow. */
function classify(entry: string): { severity: Severity; undefinedName?: string } {
  const name = unresolvedName(entry);
  const reason = entry.slice(name.length + 2);
  if (name === 'step' || (FIRST_STEP_KEY.test(name) && /was not found|cannot be loaded/.test(reason))) return { severity: 'error' };
  const undefinedName = /^\{([^}]+)\} is not defined by/.exec(reason)?.[1];
  if (undefinedName) return { severity: 'note', undefinedName };
  return { severity: 'warning' };
}

/**
 * Runs the workflow loader on what menu items run, then walks the step files a step-file
 * workflow leads to (its `nextStepFile` chain, alternatives, choices) and looks up every method
 * file the workflows and steps name. Each file is loaded once per set of agent variables, however
 * many menus reach it.
 */
export class WorkflowChecker {
  private readonly files = new Map<string, Promise<FileCheck>>();
  /** Names workflows read as `{config_source}:name`. */
  readonly configKeys = new Set<string>();

  async check(target: string, ctx: PathContext): Promise<Finding[]> {
    const vars = variablesKey(ctx.variables);
    const entry = await this.memo(`entry\0${vars}\0${target}`, () => this.entry(target, ctx));
    const findings = [...entry.findings];
    const seen = new Set(entry.covered);
    let level = entry.next;
    // Breadth first, a level at a time: the steps of one level are loaded side by side.
    while (level.length) {
      const fresh = [...new Set(level)].filter((step) => !seen.has(step));
      for (const step of fresh) seen.add(step);
      const checked = await Promise.all(fresh.map((step) => this.memo(`step\0${vars}\0${step}`, () => this.step(step, ctx))));
      for (const c of checked) findings.push(...c.findings);
      level = checked.flatMap((c) => c.next);
    }
    return findings;
  }

  private memo(key: string, run: () => Promise<FileCheck>): Promise<FileCheck> {
    let hit = this.files.get(key);
    if (!hit) {
      hit = run();
      this.files.set(key, hit);
    }
    return hit;
  }

  private async entry(target: string, ctx: PathContext): Promise<FileCheck> {
    const none = (finding: Finding): FileCheck => ({ findings: [finding], next: [], covered: [] });
    let found: Awaited<ReturnType<typeof lookUp>> | null = null;
    if (!isSkillRef(target)) {
      found = await lookUp(target, ctx);
      if (found.refused) return none({ file: target, severity: 'error', reason: `points to ${target}, which cannot be read: ${found.refused.error.message}`, onMenuItem: true });
    }
    const r = await loadWorkflow(target, ctx);
    if (isFailure(r)) {
      if (!found) return none({ file: target, severity: 'error', reason: `cannot be loaded: ${r.error.message}`, onMenuItem: true });
      if (!found.exists) return none({ file: target, severity: 'error', reason: `points to ${target}, which does not exist`, onMenuItem: true });
      const file = found.virtual ?? target;
      // "<file> is not valid YAML: ..." says its file twice once the line names it.
      const own = r.path === file && r.error.message.startsWith(`${file} `);
      return none({ file, severity: 'error', reason: own ? r.error.message.slice(file.length + 1) : `cannot be loaded: ${r.error.message}` });
    }
    const loaded = r as unknown as WorkflowResult;
    const check = await this.loaded(loaded, ctx);
    if (loaded.step) {
      const step = await this.methodFiles(loaded.step.path, loaded.step.frontmatter, loaded.unresolved, ctx);
      check.findings.push(...step.findings);
      check.next.push(...step.next);
      check.covered.push(loaded.step.path);
      await this.readConfigKeys(loaded.step.path, ctx);
    }
    check.next.push(...(loaded.step_choices ?? []));
    return check;
  }

  private async step(file: string, ctx: PathContext): Promise<FileCheck> {
    const r = await loadWorkflow(file, ctx);
    if (isFailure(r)) return { findings: [{ file, severity: 'error', reason: `cannot be loaded: ${r.error.message}` }], next: [], covered: [] };
    return this.loaded(r as unknown as WorkflowResult, ctx);
  }

  /** The loader's warnings and unresolved values, and the method files the loaded file names. */
  private async loaded(r: WorkflowResult, ctx: PathContext): Promise<FileCheck> {
    await this.readConfigKeys(r.path, ctx);
    const findings: Finding[] = [];
    for (const warning of r.warnings ?? []) {
      const newer = NEWER_FORM.exec(warning);
      if (newer) {
        findings.push({ file: newer[1], severity: 'warning', reason: `points to ${newer[1]}, which does not exist; ${newer[2]}, the same workflow in its newer form, is loaded instead`, onMenuItem: true });
        continue;
      }
      const prefixed = PREFIXED.exec(warning);
      findings.push(prefixed ? { file: prefixed[1], severity: 'warning', reason: prefixed[2] } : { file: r.path, severity: 'warning', reason: warning });
    }
    for (const entry of r.unresolved) {
      const file = unresolvedName(entry).startsWith('step.') && r.step ? r.step.path : r.path;
      findings.push({ file, reason: entry, ...classify(entry) });
    }
    const own = await this.methodFiles(r.path, r.workflow, r.unresolved, ctx);
    return { findings: [...findings, ...own.findings], next: own.next, covered: [] };
  }

  /**
   * Every value naming a file of the installed method must name one that exists: a missing step
   * or template stops the workflow where it is needed; anything else (a checklist, a data file)
   * is a warning. Steps found are walked next.
   */
  private async methodFiles(file: string, values: Record<string, unknown>, unresolved: string[], ctx: PathContext): Promise<{ findings: Finding[]; next: string[] }> {
    const findings: Finding[] = [];
    const next: string[] = [];
    const told = unresolved.join('\n');
    for (const { keyPath, key, value } of flatten(values)) {
      if (typeof value !== 'string' || key === 'installed_path' || key === 'config_source' || !METHOD_FILE.test(value)) continue;
      // The loader already said why this one is no use.
      if (told.includes(value)) continue;
      const name = basename(value);
      const isStep = /\.md$/i.test(name) && (isStepFile(value) || (/step/i.test(key) && !/^workflow/i.test(name)));
      const found = await lookUp(value, ctx);
      if (found.refused) {
        findings.push({ file, severity: 'warning', reason: `${keyPath}: ${value} cannot be read: ${found.refused.error.message}` });
      } else if (!found.exists) {
        const needed = isStep || /templ|tmpl/i.test(key) || /template/i.test(name);
        findings.push({ file, severity: needed ? 'error' : 'warning', reason: `${keyPath}: ${value} does not exist` });
      } else if (isStep) {
        next.push(found.virtual ?? value);
      }
    }
    return { findings, next };
  }

  private async readConfigKeys(file: string, ctx: PathContext): Promise<void> {
    const raw = await sandboxReader(ctx)(file);
    if (isFailure(raw)) return;
    for (const m of raw.content.matchAll(CONFIG_REF)) this.configKeys.add(m[1]);
  }
}

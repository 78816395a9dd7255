import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_SCRIPT_SETTINGS } from '../../core/config';
import { log } from '../../core/log';
import { expandVariables, isInside, redactPaths, resolvePath, today, withFileLock, withoutReserved, type ResolvedPath } from '../../core/paths';
import { fail, isFailure, sha256, type ToolFailure, type ToolResult } from '../../core/results';
import {
  debianPackageFor,
  findSkillFolders,
  MAX_OUTPUT_BYTES,
  parseCommand,
  planMounts,
  PROJECT_AT,
  runScript,
  sandboxPathOf,
  scriptCapabilities,
  splitWords,
  type MountPlan,
  type SkillFolder,
} from '../../sandbox/scripts';
import { coerceArgs, defineTool } from './define';
import type { ToolContext } from './types';

const schema = z.object({
  command: z
    .string()
    .min(1)
    .max(20_000)
    .optional()
    .describe('The whole line a skill says to run, e.g. `uv run {project-root}/_bmad/scripts/memlog.py append --workspace {output_folder}/prds/run-1 --type decision --text "..."`.'),
  script: z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe('Instead of command: the script, e.g. {project-root}/_bmad/scripts/resolve_config.py or {skill-root}/scripts/sprint_plan.py.'),
  args: z.array(z.string().max(100_000)).max(256).optional().describe('With script: its arguments, one per item, unquoted.'),
  skill: z
    .string()
    .regex(/^[A-Za-z0-9][\w.-]{0,127}$/)
    .optional()
    .describe('The skill {skill-root} and {skill-name} stand for (e.g. bmad-prd), when the script is not that skill\'s own.'),
});
type Input = z.infer<typeof schema>;

const SKILL_ROOT = '{skill-root}';
const SKILL_NAME = '{skill-name}';
/** Written files of one run that get a version of their own; more are left to the next write. */
const MAX_RECORDED = 50;
const MAX_RECORDED_BYTES = 10 * 1024 * 1024;

function normalize(raw: Record<string, unknown>): Record<string, unknown> {
  const a = coerceArgs(raw, {
    aliases: { cmd: 'command', command_line: 'command', script_path: 'script', path: 'script', file_path: 'script', arguments: 'args', argv: 'args', skill_name: 'skill' },
  });
  if (typeof a.args === 'string') {
    const split = splitWords(a.args);
    if (split.ok) a.args = split.words;
  }
  // `script: "uv run x.py --flag"`: the whole line landed in the wrong field.
  if (a.command === undefined && typeof a.script === 'string' && /^\s*(uv\s+run|python3?)\s/.test(a.script) && a.args === undefined) {
    a.command = a.script;
    delete a.script;
  }
  for (const k of ['command', 'script', 'args', 'skill']) if (a[k] === null) delete a[k];
  return a;
}

/**
 * BMAD 6.11 on renders a skill's workflow into `_bmad/render/` (render_skill.py) before it runs:
 * the one folder of the installed method its scripts (and commands) may write.
 */
export function renderFolders(ctx: Pick<ToolContext, 'bundleRoot'>): string[] {
  return path.basename(ctx.bundleRoot) === '_bmad' && existsSync(path.join(ctx.bundleRoot, 'scripts', 'render_skill.py')) ? [path.join(ctx.bundleRoot, 'render')] : [];
}

function skillVirtual(projectReal: string, skill: SkillFolder): string {
  return `{project-root}/${path.relative(projectReal, skill.real).split(path.sep).join('/')}`;
}

async function isFile(p: string): Promise<boolean> {
  return fs.lstat(p).then((s) => s.isFile(), () => false);
}

interface Located {
  target: ResolvedPath;
  skill?: SkillFolder;
}

/**
 * The script as a checked path of the installed method: `{skill-root}/...` and bare paths are a
 * skill's (the one named, or the only skill holding that file), anything else goes through the
 * same sandbox checks as read_file, and only `_bmad/scripts/` or a skill's `scripts/` qualify.
 */
async function locateScript(raw: string, ctx: ToolContext, projectReal: string, skills: SkillFolder[], named?: SkillFolder): Promise<Located | ToolFailure> {
  const text = raw.trim();
  if (text.includes('\0')) return fail('E_SANDBOX_VIOLATION', 'Access denied (outside every mount): NUL bytes are not allowed in paths.');
  if (text.startsWith('/') || text.startsWith('~') || /^[A-Za-z]:/.test(text) || text.startsWith('\\')) {
    return fail('E_SANDBOX_VIOLATION', 'Access denied (outside every mount): absolute paths are not allowed; name the script as {project-root}/_bmad/scripts/<name>.py or {skill-root}/scripts/<name>.py.');
  }
  let skill = named;
  let virtual = text;
  const skillRelative = text.startsWith(SKILL_ROOT) ? text.slice(SKILL_ROOT.length).replace(/^\/+/, '') : !text.startsWith('{') ? text : null;
  if (skillRelative !== null) {
    if (!skill) {
      const holders = [];
      for (const s of skills) if (!skillRelative.split('/').includes('..') && (await isFile(path.join(s.real, skillRelative)))) holders.push(s);
      if (holders.length > 1 && new Set(holders.map((s) => s.name)).size > 1) {
        return fail('E_AMBIGUOUS_MATCH', `Several skills have ${skillRelative} (${holders.map((s) => s.name).join(', ')}); name the skill with "skill".`);
      }
      skill = holders[0];
    }
    if (skill) virtual = `${skillVirtual(projectReal, skill)}/${skillRelative}`;
    else if (text.startsWith(SKILL_ROOT)) return fail('ENOENT', `No installed skill has ${skillRelative}; name the skill with "skill", or give the script as {project-root}/...`);
    else virtual = `{project-root}/${text}`;
  }
  if (virtual.includes(SKILL_ROOT) || virtual.includes(SKILL_NAME)) {
    if (!skill) return fail('E_UNRESOLVED_VARIABLE', `${SKILL_ROOT} needs a skill: name it with "skill" (e.g. "bmad-prd").`, { details: { variables: ['skill-root'] } });
    virtual = virtual.split(SKILL_ROOT).join(skillVirtual(projectReal, skill)).split(SKILL_NAME).join(skill.name);
  }
  const target = await resolvePath(virtual, ctx, 'read');
  if (!target.ok) return target;
  if (target.kind !== 'file') return fail('EISDIR', `${target.virtual} is a folder, not a script`, { path: target.virtual });
  const methodReal = await fs.realpath(ctx.bundleRoot).catch(() => null);
  const inSkill = skills.find((s) => isInside(path.join(s.real, 'scripts'), target.abs));
  const inMethod = methodReal !== null && isInside(path.join(methodReal, 'scripts'), target.abs);
  const notMethod = (why: string) =>
    fail('E_SANDBOX_VIOLATION', `Access denied (mount ${target.mount}): ${why}; only the installed method's scripts run ({bundle-root}/scripts/ or a skill's scripts/ folder).`, {
      path: target.virtual,
      details: { mount: target.mount, reason: why, virtual: target.virtual },
    });
  if (!inSkill && !inMethod) return notMethod(`${target.virtual} is not a script of the installed method`);
  const writable = [ctx.outputRoot, ...(ctx.project?.writable ?? []).map((w) => path.join(ctx.projectRoot, w)), ...renderFolders(ctx)];
  for (const w of writable) {
    const real = await fs.realpath(w).catch(() => null);
    if (real && isInside(real, target.abs)) return notMethod(`${target.virtual} is in a folder this conversation can write, and such files never run`);
  }
  if (!target.abs.endsWith('.py')) return notMethod(`${target.virtual} is not a Python script`);
  return { target, skill: skill ?? inSkill };
}

/** Sandbox paths back to what the tools accept, longest first: `/project/_bmad-output/x` → `{output_folder}/x`. */
function translator(plan: MountPlan, ctx: ToolContext, reals: { output: string; method: string | null; core: string | null }): (text: string) => string {
  const pairs: Array<[string, string]> = [
    [sandboxPathOf(plan, reals.output), '{output_folder}'],
    ...(reals.method && isInside(plan.projectReal, reals.method) ? [[sandboxPathOf(plan, reals.method), '{bundle-root}'] as [string, string]] : []),
    ...(reals.core && isInside(plan.projectReal, reals.core) ? [[sandboxPathOf(plan, reals.core), '{core-root}'] as [string, string]] : []),
    [PROJECT_AT, '{project-root}'],
  ];
  pairs.sort((a, b) => b[0].length - a[0].length);
  const byPath = new Map(pairs);
  const re = new RegExp(`(?<![\\w./-])(${pairs.map(([p]) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})(?![\\w.-])`, 'g');
  return (text) => redactPaths(text, ctx).replace(re, (m) => byPath.get(m) ?? m);
}

/** Mount variables as the script sees them. */
function toSandboxTokens(text: string, tokens: Record<string, string>): string {
  return text.replace(/\{(project-root|output_folder|bundle-root|core-root)\}/g, (m) => tokens[m] ?? m);
}

function contextDate(ctx: ToolContext): string {
  const d = ctx.variables?.date;
  return typeof d === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(d) ? d : today();
}

/**
 * Arguments with their path variables as the script sees them. A variable nobody defines is an
 * error where a path starts (`--workspace {doc_workspace}`: the model was to fill it in) and is
 * kept as text elsewhere (`--text "use {curly} braces"`).
 */
function mapArgs(args: string[], ctx: ToolContext, tokens: Record<string, string>, skillPath: string | null, skillName: string | null): string[] | ToolFailure {
  const out: string[] = [];
  for (const arg of args) {
    if (arg.includes('\0')) return fail('E_INVALID_ARGS', 'Arguments may not contain NUL bytes.');
    let a = arg;
    if (a.includes(SKILL_ROOT) || a.includes(SKILL_NAME)) {
      if (skillPath === null || skillName === null) {
        return fail('E_UNRESOLVED_VARIABLE', `${SKILL_ROOT} in the arguments needs a skill: name it with "skill" (e.g. "bmad-agent-pm"), or write the skill's folder, e.g. {project-root}/.claude/skills/<name>.`, {
          details: { variables: ['skill-root'] },
        });
      }
      a = a.split(SKILL_ROOT).join(skillPath).split(SKILL_NAME).join(skillName);
    }
    const ex = expandVariables(a, { roots: ctx, variables: withoutReserved(ctx.variables), date: contextDate(ctx) });
    if (ex.recursive.length) return fail('E_UNRESOLVED_VARIABLE', `Variable(s) refer to themselves: ${ex.recursive.map((n) => `{${n}}`).join(', ')}`, { details: { variables: ex.recursive } });
    const asPath = ex.unresolved.find((n) => ex.text.startsWith(`{${n}}`) || new RegExp(`^-{1,2}[\\w-]+=\\{${n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\}`).test(ex.text));
    if (asPath) {
      return fail('E_UNRESOLVED_VARIABLE', `Unknown variable {${asPath}} in the argument "${arg.slice(0, 200)}": put in the path it stands for (e.g. a folder under {output_folder}).`, {
        details: { variables: [asPath] },
      });
    }
    out.push(toSandboxTokens(ex.text, tokens));
  }
  return out;
}

async function recordWrites(ctx: ToolContext, files: Array<{ abs: string; virtual: string }>): Promise<void> {
  if (!ctx.recordWrite) return;
  for (const f of files.slice(0, MAX_RECORDED)) {
    try {
      await withFileLock(f.abs, async () => {
        const st = await fs.lstat(f.abs);
        if (!st.isFile() || st.size > MAX_RECORDED_BYTES) return;
        const content = await fs.readFile(f.abs);
        await ctx.recordWrite!({ virtualPath: f.virtual, abs: f.abs, content, sha256: sha256(content), tool: 'run_script' });
      });
    } catch (e) {
      log.warn('scripts.record_failed', { error: e instanceof Error ? e.name : 'unknown' });
    }
  }
}

async function run(input: Input, ctx: ToolContext): Promise<ToolResult> {
  if (input.command && (input.script || input.args)) return fail('E_INVALID_ARGS', 'Give either command (the whole line) or script with args, not both.');
  if (!input.command && !input.script) return fail('E_INVALID_ARGS', 'Give command (e.g. "uv run {project-root}/_bmad/scripts/resolve_config.py --project-root {project-root}") or script with args.');
  if (!ctx.project) {
    return fail('E_UNAVAILABLE', 'Scripts run only in a BMAD project, whose installed method they belong to; this conversation has none. Do the script\'s work with the file tools instead.');
  }
  const settings = ctx.scripts ?? DEFAULT_SCRIPT_SETTINGS;
  const caps = await scriptCapabilities(settings);
  if (!caps.scripts || !caps.bwrap || !caps.python) {
    return fail('E_UNAVAILABLE', `Scripts cannot run on this server: ${caps.reason ?? 'the sandbox is not available'}. Nothing was run. Follow the skill's instructions for when the script fails (for example, read the files it would have read and do its work yourself).`, {
      details: { sandbox: caps.sandbox, scripts: false },
    });
  }

  let script: string;
  let args: string[];
  let extraDeps: string[] = [];
  if (input.command) {
    const parsed = parseCommand(input.command);
    if (!parsed.ok) return fail('E_INVALID_ARGS', `command: ${parsed.reason}.`);
    ({ script, args, with: extraDeps } = parsed.command);
  } else {
    script = input.script as string;
    args = input.args ?? [];
  }

  const projectReal = await fs.realpath(ctx.projectRoot).catch(() => null);
  if (!projectReal) return fail('E_SANDBOX_VIOLATION', 'Access denied (mount {project-root}): the project folder is not a real folder.');
  const [methodReal, coreReal, outputReal] = await Promise.all([ctx.bundleRoot, ctx.coreRoot, ctx.outputRoot].map((p) => fs.realpath(p).catch(() => null)));
  const skills = await findSkillFolders(projectReal, methodReal && isInside(projectReal, methodReal) ? methodReal : null);
  let named: SkillFolder | undefined;
  if (input.skill) {
    named = skills.find((s) => s.name === input.skill);
    if (!named) return fail('ENOENT', `No installed skill is named "${input.skill}".`);
  }
  const located = await locateScript(script, ctx, projectReal, skills, named);
  if (isFailure(located)) return located;
  const { target, skill } = located;

  const plan = await planMounts({
    projectRoot: ctx.projectRoot,
    outputRoot: ctx.outputRoot,
    writable: ctx.project.writable,
    method: [ctx.bundleRoot, ...skills.map((s) => s.real)],
    methodWritable: renderFolders(ctx),
  });
  if (isFailure(plan)) return plan;
  const output = outputReal ?? (await fs.realpath(ctx.outputRoot));
  const tokens: Record<string, string> = {
    '{project-root}': PROJECT_AT,
    '{output_folder}': sandboxPathOf(plan, output),
    ...(methodReal && isInside(projectReal, methodReal) ? { '{bundle-root}': sandboxPathOf(plan, methodReal) } : {}),
    ...(coreReal && isInside(projectReal, coreReal) ? { '{core-root}': sandboxPathOf(plan, coreReal) } : {}),
  };
  const mapped = mapArgs(args, ctx, tokens, skill ? sandboxPathOf(plan, skill.real) : null, skill?.name ?? null);
  if (isFailure(mapped)) return mapped;

  const ran = await runScript({
    settings,
    caps: { ...caps, bwrap: caps.bwrap, python: caps.python },
    plan,
    script: sandboxPathOf(plan, target.abs),
    args: mapped,
    extraDeps,
    signal: ctx.signal,
  });
  const o = ran.outcome;
  const show = translator(plan, ctx, { output, method: methodReal, core: coreReal });
  if (o.spawnError) return fail('E_INTERNAL', `The sandbox could not be started (${show(o.spawnError)}); nothing was run.`);
  if (o.aborted) return fail('E_ABORTED', 'The turn was stopped; the script was ended.');
  const boot = ran.boot;
  if (boot?.refused) {
    if (boot.missing.length) {
      const packages = boot.missing.map(debianPackageFor);
      return fail('E_UNAVAILABLE', `${target.virtual} needs ${boot.missing.join(', ')}, not installed on this server (system package${packages.length > 1 ? 's' : ''}: ${packages.join(', ')}); it was not run. Follow the skill's instructions for when the script fails.`, {
        path: target.virtual,
        details: { missing: boot.missing },
      });
    }
    return fail('E_UNAVAILABLE', `${target.virtual} needs Python ${boot.pythonRequired}; this server has ${boot.python}, so it was not run. Follow the skill's instructions for when the script fails.`, {
      path: target.virtual,
      details: { requiresPython: boot.pythonRequired, python: boot.python },
    });
  }
  if (!boot && !o.timedOut && o.exitCode !== 0 && /^bwrap: /m.test(o.stderr)) {
    return fail('E_INTERNAL', `The sandbox could not be started (${show(o.stderr.trim().split('\n')[0].slice(0, 300))}); nothing was run.`);
  }

  const stderr = show(o.stderr);
  const limitS = Math.round(settings.timeoutMs / 100) / 10;
  const stopped = o.timedOut
    ? 'time_limit'
    : ran.memoryExceeded || /\bMemoryError\b/.test(stderr)
      ? 'memory_limit'
      : /BlockingIOError|Resource temporarily unavailable/.test(stderr) && /fork|spawn|Popen|start_new_thread/i.test(stderr)
        ? 'process_limit'
        : undefined;
  const virtualOf = (abs: string) => show(sandboxPathOf(plan, abs));
  const written = ran.changes.written.map((abs) => ({ abs, virtual: virtualOf(abs) }));
  // Rendered workflows are the method's, made again whenever needed: not documents to version.
  const renders = (await Promise.all(renderFolders(ctx).map((r) => fs.realpath(r).catch(() => null)))).filter((r): r is string => r !== null);
  await recordWrites(ctx, written.filter((w) => !renders.some((r) => isInside(r, w.abs))));
  const hints: string[] = [];
  if (stopped === 'time_limit') hints.push(`The script was stopped at its time limit (${limitS} s).`);
  if (stopped === 'memory_limit') hints.push(`The script ran out of memory (limit ${settings.memoryMb} MB).`);
  if (stopped === 'process_limit') hints.push('The script tried to start more processes than allowed.');
  if (o.exitCode !== 0) hints.push("The script did not succeed: if the skill says what to do when the script fails, do that.");
  if (o.truncated) hints.push(`Output was cut at ${MAX_OUTPUT_BYTES.toLocaleString('en')} bytes of ${o.outputBytes.toLocaleString('en')}.`);
  return {
    ok: true,
    script: target.virtual,
    args: mapped.map(show),
    exit_code: o.exitCode,
    stdout: show(o.stdout),
    stderr,
    duration_ms: o.durationMs,
    ...(o.truncated ? { truncated: true } : {}),
    ...(stopped ? { stopped } : {}),
    ...(written.length ? { files_written: written.map((w) => w.virtual) } : {}),
    ...(ran.changes.removed.length ? { files_removed: ran.changes.removed.map(virtualOf) } : {}),
    ...(boot?.warnings.length ? { warnings: boot.warnings } : {}),
    ...(hints.length ? { hint: hints.join(' ') } : {}),
  };
}

export const runScriptTool = defineTool({
  name: 'run_script',
  description:
    "Run a script of the project's installed BMAD method (in {project-root}/_bmad/scripts/ or a skill's scripts/ folder) with python3, in a sandbox: no network, the method read-only, only {output_folder} (and the project's writable folders) writable, secrets hidden, a time and memory limit. " +
    'When a skill says to run `uv run <script> <args>` (or `python3 <script> <args>`), pass that whole line as command; or pass script and args. ' +
    'Path variables ({project-root}, {skill-root}, {output_folder}, config keys like {planning_artifacts}) are resolved; fill in any other placeholder yourself. ' +
    'The script sees the project at /project (its working folder); paths in its output come back as {project-root}/..., {output_folder}/... for the file tools. ' +
    "Returns exit_code, stdout, stderr and the files it wrote. If scripts are unavailable or the script fails, follow the skill's fallback instructions.",
  schema,
  normalize,
  run,
});

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { CHECKOUT_AT, commandHost, MAX_COMMAND_OUTPUT_BYTES, runCommand, sandboxPath, type CommandResult } from '../../sandbox/commands';
import { stripAnsi, type TranscriptChunk } from '../../sandbox/sandbox';
import { DEFAULT_SCRIPT_SETTINGS } from '../../core/config';
import { log } from '../../core/log';
import { expandVariables, isInside, redactPaths, resolvePath, TMP_TOKEN, today, withoutReserved } from '../../core/paths';
import { fail, type ToolResult } from '../../core/results';
import { coerceArgs, defineTool } from './define';
import { renderFolders } from './run-script';
import type { CommandContext, ToolContext } from './types';

const schema = z.object({
  command: z.string().min(1).max(20_000).describe('One shell line, run with bash -c in the workspace, e.g. `npm test`, `git status`, `uv run {project-root}/_bmad/scripts/render_skill.py --project-root {project-root} --skill {project-root}/.claude/skills/bmad-build`.'),
  cwd: z.string().min(1).max(1024).optional().describe('Folder to start in, e.g. {project-root}/packages/api; {project-root} when left out.'),
  timeout_ms: z.number().int().min(100).optional().describe('Stop the command after this long; never longer than the server allows.'),
});
type Input = z.infer<typeof schema>;

function normalize(raw: Record<string, unknown>): Record<string, unknown> {
  const a = coerceArgs(raw, { aliases: { cmd: 'command', command_line: 'command', script: 'command', dir: 'cwd', workdir: 'cwd', working_directory: 'cwd', timeout: 'timeout_ms', timeoutMs: 'timeout_ms' }, ints: ['timeout_ms'] });
  for (const k of ['cwd', 'timeout_ms']) if (a[k] === null) delete a[k];
  return a;
}

interface Places {
  checkout: string;
  project: string;
  /** Server folder → sandbox path, for the mounts a line may name. */
  tokens: Record<string, string>;
}

async function real(p: string): Promise<string | null> {
  return fs.realpath(p).catch(() => null);
}

async function places(ctx: ToolContext, commands: CommandContext): Promise<Places | null> {
  const roots = [['{output_folder}', ctx.outputRoot], ['{bundle-root}', ctx.bundleRoot], ['{core-root}', ctx.coreRoot]] as const;
  // Looked up at once: each is a round trip to the file system.
  const [checkout, project, ...found] = await Promise.all([real(commands.checkout), real(ctx.projectRoot), ...roots.map(([, root]) => real(root))]);
  if (!checkout || !project || !isInside(checkout, project)) return null;
  const tokens: Record<string, string> = { '{project-root}': sandboxPath(checkout, project) };
  roots.forEach(([token], i) => {
    const r = found[i];
    if (r && isInside(checkout, r)) tokens[token] = sandboxPath(checkout, r);
  });
  // Without a kept temp folder /tmp is gone with the sandbox: nothing there to read back.
  if (ctx.tmpRoot) tokens[TMP_TOKEN] = '/tmp';
  return { checkout, project, tokens };
}

/**
 * The line with its path variables as the sandbox sees them. Shell syntax stays as written:
 * `${NAME}` is the shell's, and a `{name}` nobody defines is left for bash (brace words are
 * legal there), reported so the model can tell it forgot to fill one in.
 */
function mapLine(line: string, ctx: ToolContext, tokens: Record<string, string>): { text: string; unresolved: string[] } {
  const shielded = line.replace(/\$\{/g, '$\u0000');
  const date = typeof ctx.variables?.date === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(ctx.variables.date) ? ctx.variables.date : today();
  const ex = expandVariables(shielded, { roots: ctx, variables: withoutReserved(ctx.variables), date });
  const text = ex.text.replace(/\{(project-root|output_folder|bundle-root|core-root|tmp)\}/g, (m) => tokens[m] ?? m).replace(/\$\u0000/g, '${');
  return { text, unresolved: [...ex.unresolved, ...ex.recursive] };
}

/** Sandbox and server paths in output back to what the file tools accept, longest first. */
function translator(ctx: ToolContext, p: Places): (text: string) => string {
  const pairs = Object.entries(p.tokens)
    .map(([token, at]) => [at, token] as [string, string])
    .sort((a, b) => b[0].length - a[0].length);
  const byPath = new Map(pairs);
  const re = new RegExp(`(?<![\\w./-])(${pairs.map(([at]) => at.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})(?![\\w.-])`, 'g');
  return (text) => {
    let out = redactPaths(text, ctx);
    if (p.checkout.length > 1) out = out.split(p.checkout).join(p.tokens['{project-root}'] === CHECKOUT_AT ? '{project-root}' : CHECKOUT_AT);
    return out.replace(re, (m) => byPath.get(m) ?? m);
  };
}

function virtualOfChange(p: Places, rel: string): string {
  const abs = path.join(p.checkout, rel);
  if (isInside(p.project, abs)) {
    const inner = path.relative(p.project, abs).split(path.sep).join('/');
    return inner ? `{project-root}/${inner}` : '{project-root}';
  }
  return `${CHECKOUT_AT}/${rel}`;
}

async function run(input: Input, ctx: ToolContext): Promise<ToolResult> {
  const started = performance.now();
  const commands = ctx.commands;
  if (!commands) {
    return fail('E_UNAVAILABLE', 'Commands run only in a workspace of a project with build enabled; this conversation has none. Nothing was run.');
  }
  if (input.command.includes('\0')) return fail('E_INVALID_ARGS', 'The command may not contain NUL bytes.');
  const host = await commandHost(ctx.scripts ?? DEFAULT_SCRIPT_SETTINGS);
  if ('reason' in host) return fail('E_UNAVAILABLE', `Commands cannot run on this server: ${host.reason}. Nothing was run.`, { details: { sandbox: false } });
  const p = await places(ctx, commands);
  if (!p) return fail('E_SANDBOX_VIOLATION', 'Access denied (mount {project-root}): the project folder is not inside the workspace checkout.');
  let cwd = p.project;
  if (input.cwd !== undefined) {
    const target = await resolvePath(input.cwd, ctx, 'read');
    if (!target.ok) return target;
    if (target.kind !== 'directory') return fail('ENOTDIR', `${target.virtual} is not a folder`, { path: target.virtual });
    if (!isInside(p.checkout, target.abs)) return fail('E_SANDBOX_VIOLATION', `Access denied (mount ${target.mount}): commands start inside the workspace.`, { path: target.virtual });
    cwd = target.abs;
  }
  const line = mapLine(input.command, ctx, p.tokens);
  const method = [ctx.bundleRoot, ctx.coreRoot, path.join(ctx.projectRoot, '_bmad'), path.join(ctx.projectRoot, 'bmad')];
  const result: CommandResult = await runCommand(
    {
      checkout: p.checkout,
      cwd,
      tmp: ctx.tmpRoot,
      readOnlyInside: method,
      writableInside: renderFolders(ctx),
      command: line.text,
      env: commands.env,
      gitIdentity: commands.gitIdentity,
      timeoutMs: input.timeout_ms,
      signal: ctx.signal,
    },
    commands.settings,
    host,
  );
  const show = translator(ctx, p);
  if (result.spawnError) return fail('E_INTERNAL', `The sandbox could not be started (${show(result.spawnError)}); nothing was run.`);
  if (result.refused === 'disk_quota') {
    const used = mb(result.disk?.usedBytes ?? 0);
    const max = mb(result.disk?.maxBytes ?? 0);
    return fail(
      'E_WRITE_LIMIT',
      `The workspace uses ${used} MB of its ${max} MB (checkout, .git and temp folder together; WORKSPACE_MAX_MB), so no command runs until it is back under. ` +
        'Free space with a line that only removes files, the one kind still run meanwhile, e.g. `rm -rf node_modules/.cache dist {tmp}/*`; ' +
        'or ask the person to discard the workspace or the operator to raise the quota. Nothing was run.',
      { details: { usedMb: used, maxMb: max } },
    );
  }
  let syncFailed = false;
  if (commands.afterCommand) {
    try {
      await commands.afterCommand();
    } catch (e) {
      syncFailed = true;
      log.warn('commands.after_command_failed', { error: e instanceof Error ? e.name : 'unknown' });
    }
  }
  if (result.aborted) return fail('E_ABORTED', 'The turn was stopped; the command was ended.');
  const limitS = Math.round(Math.min(commands.settings.timeoutMs, input.timeout_ms ?? Infinity) / 100) / 10;
  const hints: string[] = [];
  if (result.stopped === 'time_limit') hints.push(`The command was stopped at its time limit (${limitS} s), with everything it started.`);
  if (result.stopped === 'memory_limit') hints.push(`The command ran out of memory (limit ${commands.settings.memoryMb} MB).`);
  if (result.stopped === 'process_limit') hints.push(`The command tried to start more than ${commands.settings.maxProcesses} processes.`);
  if (result.stopped === 'disk_quota') {
    hints.push(
      `The command was stopped, with everything it started: the workspace passed its disk quota of ${mb(result.disk?.maxBytes ?? 0)} MB (checkout, .git and temp folder together; ${mb(result.disk?.usedBytes ?? 0)} MB used). ` +
        'Remove what is not needed (build output, caches, large files) with a line that only removes files (`rm -rf ...`); other commands are refused until the workspace is under its quota.',
    );
  }
  if (result.truncated) hints.push(`Output was cut to its first and last ${(MAX_COMMAND_OUTPUT_BYTES / 4).toLocaleString('en')} bytes per stream (of ${result.outputBytes.toLocaleString('en')} in all).`);
  if (line.unresolved.length) hints.push(`${line.unresolved.map((n) => `{${n}}`).join(', ')} stayed as written: no variable has that name.`);
  if (result.changesUnknown) hints.push('Too many files are untracked or changed in the workspace to tell which ones this command changed (files_changed is null); run `git status` for them, and add folders like node_modules to .gitignore.');
  if (syncFailed) hints.push('The workspace could not be synced after the command; its changes are kept in the workspace.');
  const files = result.changes?.files.map((f) => ({ path: virtualOfChange(p, f.path), status: f.status.trim() || f.status }));
  // Escape codes out before the paths are mapped: a code inside a path would hide it from the mapping.
  const stdout = show(stripAnsi(result.stdout));
  const stderr = show(stripAnsi(result.stderr));
  return {
    ok: true,
    command: show(line.text),
    exit_code: result.exitCode,
    stdout,
    stderr,
    duration_ms: Math.round(performance.now() - started),
    stopped: result.stopped,
    ...(result.truncated ? { truncated: true } : {}),
    ...(files ? { files_changed: files } : result.changesUnknown ? { files_changed: null } : {}),
    ...(result.changes?.more ? { files_changed_more: result.changes.more } : {}),
    ...(hints.length ? { hint: hints.join(' ') } : {}),
    transcript: transcriptShown(result.transcript, show, stdout, stderr),
  };
}

const mb = (bytes: number) => Math.round(bytes / (1024 * 1024));

/**
 * The transcript with server paths mapped like stdout and stderr. A path a command split between
 * chunks of one stream (another stream's chunk in between), or inside escape codes a browser
 * hides, would pass the mapping piece by piece: when a stream as shown (codes removed) still holds
 * something the mapping changes, the transcript gives up the order and the colours and holds
 * each stream as the model reads it.
 */
function transcriptShown(chunks: TranscriptChunk[], show: (text: string) => string, stdout: string, stderr: string): TranscriptChunk[] {
  const shown = chunks.map((c) => ({ stream: c.stream, text: show(c.text) }));
  for (const stream of ['stdout', 'stderr'] as const) {
    const visible = stripAnsi(shown.filter((c) => c.stream === stream).map((c) => c.text).join(''));
    if (show(visible) !== visible) return [...(stdout ? [{ stream: 'stdout' as const, text: stdout }] : []), ...(stderr ? [{ stream: 'stderr' as const, text: stderr }] : [])];
  }
  return shown;
}

export const runCommandTool = defineTool({
  name: 'run_command',
  description:
    'Run one shell line (bash -c) in this workspace: build, test, lint, git (status, diff, add, commit, log, branch on the workspace\'s own branch). ' +
    'It runs in a sandbox: the workspace checkout writable (the installed method read-only but {bundle-root}/render), no network, a private /tmp (readable afterwards as {tmp}/...), no secrets, time/memory/process limits. ' +
    'Path variables ({project-root}, {output_folder}, config keys) are resolved; paths in the output come back as {project-root}/... for the file tools. ' +
    '`uv run SCRIPT args` works for the method\'s scripts. Returns exit_code, stdout, stderr (head and tail when long), duration_ms, stopped (time_limit, memory_limit, process_limit, disk_quota or null) and files_changed. One command at a time per workspace: parallel calls wait their turn.',
  schema,
  normalize,
  run,
});

import { execFileSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { executeTool, toolDefinitions } from '.';
import type { ToolContext } from './types';
import type { ToolResult } from '../../core/results';
import { DEFAULT_COMMAND_SETTINGS, DEFAULT_SCRIPT_SETTINGS } from '../../core/config';
import { bmadProject } from '../../../test/bmad-installs';
import { projectContext } from '../../../test/project-context';
import { toModelMessages } from '../prompt';

/**
 * run_command in a workspace checkout holding a real BMAD 6.12 install and its own git
 * repository: paths come back as the file tools take them, git works on the workspace's branch,
 * the method's render step writes `_bmad/render/`, and what a command leaves in /tmp is readable
 * as {tmp}/... — all on real bubblewrap.
 */
const HOST_READY = existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/python3') && existsSync('/usr/bin/git');
const sandboxed = HOST_READY || process.env.CI ? describe : describe.skip;

jest.setTimeout(60_000);

let project: string;
let tmpRoot: string;
let auditDir: string;
let ctx: ToolContext;
let synced: number;

const hostGit = (...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Seed', '-c', 'user.email=seed@example.com', ...args], {
    cwd: project,
    env: { PATH: '/usr/bin:/bin', HOME: os.tmpdir(), GIT_CONFIG_NOSYSTEM: '1' } as unknown as NodeJS.ProcessEnv,
  }).toString().trim();

beforeEach(async () => {
  project = await bmadProject('6.12.0');
  tmpRoot = path.join(path.dirname(project), 'workspace-tmp');
  auditDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-command-audit-'));
  await fs.mkdir(path.join(project, 'docs'), { recursive: true });
  await fs.writeFile(path.join(project, 'docs', 'readme.md'), '# Docs\n');
  hostGit('init', '-q', '-b', 'bmad/story-1');
  hostGit('add', '-A');
  hostGit('commit', '-qm', 'base');
  synced = 0;
  ctx = {
    ...(await projectContext(project)),
    auditDir,
    tmpRoot,
    scripts: { ...DEFAULT_SCRIPT_SETTINGS },
    commands: {
      checkout: project,
      settings: { ...DEFAULT_COMMAND_SETTINGS, timeoutMs: 30_000 },
      env: { APP_ENV: 'test' },
      gitIdentity: { name: 'Grace Hopper', email: 'grace@example.com' },
      afterCommand: async () => {
        synced++;
      },
    },
  };
});
afterEach(async () => {
  await fs.rm(path.dirname(project), { recursive: true, force: true });
  await fs.rm(auditDir, { recursive: true, force: true });
});

type Ran = ToolResult & { command: string; exit_code: number | null; stdout: string; stderr: string; stopped: string | null; files_changed?: Array<{ path: string; status: string }>; hint?: string; truncated?: boolean; content?: string };

const call = async (name: string, args: Record<string, unknown>, over: Partial<ToolContext> = {}): Promise<Ran> =>
  (await executeTool({ id: 'call-1', name, arguments: JSON.stringify(args) }, { ...ctx, ...over })) as Ran;
const run = (args: Record<string, unknown>, over: Partial<ToolContext> = {}) => call('run_command', args, over);

function expectNoServerPath(r: unknown) {
  const text = JSON.stringify(r);
  expect(text).not.toContain(path.dirname(project));
  expect(text).not.toContain(tmpRoot);
}

describe('offer', () => {
  it('is offered only to a turn that can run commands, and refuses without them', async () => {
    expect(toolDefinitions().map((d) => d.function.name)).not.toContain('run_command');
    expect(toolDefinitions(undefined, { commands: true }).map((d) => d.function.name)).toContain('run_command');
    const r = await run({ command: 'true' }, { commands: undefined });
    expect(r).toMatchObject({ ok: false, error: { code: 'E_UNAVAILABLE', message: expect.stringContaining('workspace') } });
    const noSandbox = await run({ command: 'true' }, { scripts: { ...DEFAULT_SCRIPT_SETTINGS, bwrap: '/nonexistent/bwrap' } });
    expect(noSandbox).toMatchObject({ ok: false, error: { code: 'E_UNAVAILABLE', message: expect.stringMatching(/bubblewrap.*not installed/) } });
    expect(synced).toBe(0);
  });
});

sandboxed('run_command', () => {
  it('runs in {project-root}, with paths in the output as the file tools take them', async () => {
    const r = await run({ command: 'pwd; echo {project-root}/docs/readme.md; ls {output_folder}/.. | head -0; realpath {planning_artifacts}; echo $APP_ENV $CI; echo boom >&2; exit 4' });
    expect(r).toMatchObject({ ok: true, exit_code: 4, stopped: null, stderr: 'boom\n' });
    expect(r.stdout).toBe(`{project-root}\n{project-root}/docs/readme.md\n{output_folder}/planning-artifacts\ntest true\n`);
    expect(r.command).toContain('{project-root}/docs/readme.md');
    expectNoServerPath(r);
    expect(synced).toBe(1);
  });

  it('starts in the folder asked for, inside the workspace only', async () => {
    expect(await run({ command: 'pwd', cwd: '{project-root}/docs' })).toMatchObject({ ok: true, stdout: '{project-root}/docs\n' });
    expect(await run({ command: 'pwd', cwd: '{project-root}/docs/readme.md' })).toMatchObject({ ok: false, error: { code: 'ENOTDIR' } });
    expect(await run({ command: 'pwd', cwd: '{project-root}/../..' })).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_VIOLATION' } });
    expect(await run({ command: 'pwd', cwd: '/etc' })).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_VIOLATION' } });
  });

  it('commits on the workspace\'s branch as the person of the turn, reporting the files changed', async () => {
    const edit = await run({ command: 'echo "## More" >> docs/readme.md && mkdir -p src && echo "x = 1" > src/app.py' });
    expect(edit.files_changed).toEqual([{ path: '{project-root}/docs/readme.md', status: 'M' }, { path: '{project-root}/src/app.py', status: '??' }]);
    const commit = await run({ command: 'git add -A && git commit -qm "Story 1: app" && git log -1 --format="%an <%ae>|%s" && git branch --show-current' });
    expect(commit).toMatchObject({ ok: true, exit_code: 0, stdout: 'Grace Hopper <grace@example.com>|Story 1: app\nbmad/story-1\n' });
    expect(commit.files_changed).toEqual([{ path: '{project-root}/docs/readme.md', status: 'clean' }, { path: '{project-root}/src/app.py', status: 'clean' }]);
    expect(hostGit('log', '-1', '--format=%an %s')).toBe('Grace Hopper Story 1: app');
    expect(synced).toBe(2);
  });

  it('leaves one audit line per command', async () => {
    await run({ command: 'echo one' });
    await run({ command: 'exit 2' });
    const lines = (await fs.readFile(path.join(auditDir, 'conv-project.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ toolName: 'run_command', input: { command: 'echo one' }, output: { ok: true, exit_code: 0 } });
    expect(lines[1]).toMatchObject({ toolName: 'run_command', output: { ok: true, exit_code: 2 } });
  });

  it('keeps what a command leaves in /tmp readable as {tmp}/..., never writable by the file tools', async () => {
    const r = await run({ command: 'git diff --stat > /tmp/diff.txt; echo "change" >> docs/readme.md; git diff > /tmp/story.diff; echo /tmp/story.diff' });
    expect(r.stdout).toBe('{tmp}/story.diff\n');
    const read = await call('read_file', { file_path: '{tmp}/story.diff' });
    expect(read.ok).toBe(true);
    expect(JSON.stringify(read)).toContain('+change');
    expect(await call('save_output', { file_path: '{tmp}/x.md', content: 'x' })).toMatchObject({ ok: false, error: { code: 'E_READ_ONLY' } });
    expect(await call('read_file', { file_path: '{tmp}/story.diff' }, { tmpRoot: undefined })).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_VIOLATION' } });
  });

  it('renders a skill into _bmad/render/ (run_script and run_command) and the model reads it; file tools cannot write there', async () => {
    const line = 'uv run --no-cache "{project-root}/_bmad/scripts/render_skill.py" --project-root "{project-root}" --skill "{project-root}/.claude/skills/bmad-build"';
    const script = await call('run_script', { command: line });
    expect(script).toMatchObject({ ok: true, exit_code: 0 });
    expect(script.stdout).toMatch(/^read and follow \{bundle-root\}\/render\/bmad-build\/[\w-]+\/[0-9a-f]+\/workflow\.md\n$/);
    const entry = script.stdout.replace(/^read and follow /, '').trim();
    const read = await call('read_file', { file_path: entry });
    expect(read.ok).toBe(true);
    const viaCommand = await run({ command: line });
    expect(viaCommand).toMatchObject({ ok: true, exit_code: 0 });
    expect(viaCommand.stdout).toMatch(/^read and follow \{bundle-root\}\/render\/bmad-build\/[\w-]+\/[0-9a-f]+\/workflow\.md\n$/);
    expect(await call('save_output', { file_path: '{bundle-root}/render/x.md', content: 'x' })).toMatchObject({ ok: false, error: { code: 'E_READ_ONLY' } });
    // The rest of the method stays read-only for commands.
    const write = await run({ command: 'echo x >> _bmad/scripts/render_skill.py' });
    expect(write.exit_code).not.toBe(0);
    expect(write.stderr).toMatch(/Read-only file system/);
    expectNoServerPath([script, viaCommand, write]);
  });

  it('takes a lower time limit, never a higher one', async () => {
    const lower = await run({ command: 'sleep 5', timeout_ms: 800 });
    expect(lower).toMatchObject({ ok: true, stopped: 'time_limit', exit_code: null });
    expect(lower.hint).toMatch(/time limit \(0\.8 s\)/);
    const started = Date.now();
    const capped = await run({ command: 'sleep 8', timeout_ms: 100_000 }, { commands: { ...ctx.commands!, settings: { ...DEFAULT_COMMAND_SETTINGS, timeoutMs: 1_000 } } });
    expect(capped).toMatchObject({ ok: true, stopped: 'time_limit' });
    expect(Date.now() - started).toBeLessThan(6_000);
  });

  it('leaves shell variables to the shell and names a placeholder nobody defines', async () => {
    const r = await run({ command: 'echo "${APP_ENV}" {diff_file}' });
    expect(r).toMatchObject({ ok: true, stdout: 'test {diff_file}\n' });
    expect(r.hint).toMatch(/\{diff_file\} stayed as written/);
  });

  it('keeps the command as run, strips escape codes for the model, and keeps the ordered transcript for people only', async () => {
    const command = 'printf "\\033[32mok\\033[0m  two  spaces\\n";  sleep 0.2; echo "warn" >&2 ;  sleep 0.2; echo {project-root}/x';
    const r = (await run({ command })) as Ran & { transcript: Array<{ stream: string; text: string }> };
    expect(r.command).toBe(command);
    expect(r.stdout).toBe('ok  two  spaces\n{project-root}/x\n');
    expect(r.stderr).toBe('warn\n');
    expect(r.transcript).toEqual([
      { stream: 'stdout', text: '\u001b[32mok\u001b[0m  two  spaces\n' },
      { stream: 'stderr', text: 'warn\n' },
      { stream: 'stdout', text: '{project-root}/x\n' },
    ]);
    expectNoServerPath(r);
    const messages = toModelMessages('system', [
      { id: 'u', role: 'user', content: 'go', timestamp: '2026-01-01T00:00:00.000Z' },
      { id: 'a', role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'run_command', arguments: JSON.stringify({ command }) }], timestamp: '2026-01-01T00:00:00.000Z' },
      { id: 't', role: 'tool', toolCallId: 'c1', name: 'run_command', result: r, timestamp: '2026-01-01T00:00:00.000Z' },
    ]);
    const sent = JSON.stringify(messages[messages.length - 1]);
    expect(sent).not.toContain('transcript');
    expect(sent).not.toContain('\\u001b');
    expect(sent).toContain('ok  two  spaces');
  });

  it('lets no server path through, even one a command reads from mountinfo and splits with escape codes or across streams', async () => {
    const find = 'p=$(awk \'$5=="/workspace"{print $4}\' /proc/self/mountinfo)';
    for (const command of [
      `${find}; printf '%s\\033[0m%s\\n' "\${p:0:6}" "\${p:6}"`,
      `${find}; printf '%s' "\${p:0:6}"; sleep 0.2; echo err >&2; sleep 0.2; printf '%s\\n' "\${p:6}"`,
    ]) {
      const r = (await run({ command })) as Ran & { transcript: Array<{ stream: string; text: string }> };
      expect(r.exit_code).toBe(0);
      expectNoServerPath(r);
      const visible = r.transcript.map((c) => c.text).join('').replace(/\u001b\[[0-9;]*m/g, '');
      expect(visible).not.toContain(path.dirname(project));
    }
  });

  it('counts the whole call in duration_ms, the hook after it included', async () => {
    const r = await run({ command: 'true' }, { commands: { ...ctx.commands!, afterCommand: () => new Promise((resolve) => setTimeout(resolve, 300)) } });
    expect(r.ok).toBe(true);
    expect((r as unknown as { duration_ms: number }).duration_ms).toBeGreaterThanOrEqual(300);
  });

  it('lets a file tool of the same turn wait for a running command rather than race it', async () => {
    const running = run({ command: 'sleep 1; echo "written by the command" > docs/late.md' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const [read, ran] = await Promise.all([call('read_file', { file_path: '{project-root}/docs/late.md' }), running]);
    expect(ran).toMatchObject({ ok: true, exit_code: 0 });
    expect(read.ok).toBe(true);
    expect(JSON.stringify(read)).toContain('written by the command');
  });

  it('refuses commands in a workspace over its disk quota but a removal, saying how much is used', async () => {
    const small = { commands: { ...ctx.commands!, settings: { ...DEFAULT_COMMAND_SETTINGS, timeoutMs: 30_000, workspaceMaxMb: 40 } } };
    const fill = await run({ command: 'head -c 45000000 /dev/zero > /tmp/fill.bin' }, small);
    expect(fill).toMatchObject({ ok: true, exit_code: 0 });
    const refused = await run({ command: 'echo hello' }, small);
    expect(refused).toMatchObject({ ok: false, error: { code: 'E_WRITE_LIMIT', message: expect.stringMatching(/uses \d+ MB of its 40 MB.*rm -rf/) } });
    expect(await run({ command: 'rm -f {tmp}/fill.bin' }, small)).toMatchObject({ ok: true, exit_code: 0 });
    expect(await run({ command: 'echo hello' }, small)).toMatchObject({ ok: true, stdout: 'hello\n' });
  });

  it('still answers when the sync after a command fails', async () => {
    const r = await run({ command: 'echo ok' }, { commands: { ...ctx.commands!, afterCommand: async () => { throw new Error('sync failed at /srv/secret'); } } });
    expect(r).toMatchObject({ ok: true, exit_code: 0, hint: expect.stringMatching(/could not be synced/) });
    expect(JSON.stringify(r)).not.toContain('/srv/secret');
  });

  it('reports a command\'s changes alone when a file tool wrote in between, and the write\'s undoing as the command\'s', async () => {
    await run({ command: 'echo one > one.txt' });
    expect(await call('save_output', { file_path: '{output_folder}/plan.md', content: '# Plan\n' })).toMatchObject({ ok: true });
    expect((await run({ command: 'true' })).files_changed).toEqual([]);
    expect(await call('read_file', { file_path: '{output_folder}/plan.md' })).toMatchObject({ ok: true });
    const removed = await run({ command: 'rm {output_folder}/plan.md && git status --short' });
    expect(removed.files_changed?.map((f) => f.status)).toEqual(['clean']);
    expect(removed.files_changed?.[0].path).toMatch(/\/plan\.md$/);
  });
});

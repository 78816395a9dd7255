/**
 * The command tool's overhead: `bash -c true` run directly (spawned, the way a server would run a
 * line without a sandbox) against the same `true` through run_command (executeTool in a workspace
 * checkout: the queue, the quota watch, bubblewrap, git status after (before: the one the last
 * command left), the set-id clearing, path mapping, audit), the same after a file tool's write
 * (git status read before too), through its runner alone, in a folder without git, and a bare
 * bubblewrap start (the floor). Measured interleaved, one of each per round, so a machine whose
 * load changes meanwhile weighs on all alike. Figures only; not a timed test.
 *
 *   npx tsx bench/command.ts [runs]      (also section 9 of `npm run bench`; --only-command)
 */
import { execFileSync, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { commandHost, forgetStatus, runCommand } from '../lib/sandbox/commands';
import { bwrapArgs } from '../lib/sandbox/sandbox';
import { DEFAULT_COMMAND_SETTINGS, DEFAULT_LIMITS, DEFAULT_SCRIPT_SETTINGS } from '../lib/core/config';
import { executeTool } from '../lib/engine/tools';
import type { ToolContext } from '../lib/engine/tools/types';
import { fmt, summary, type Summary } from './stats';

export interface CommandFigures {
  runs: number;
  loadAvgStart: number[];
  loadAvgEnd: number[];
  /** spawn('/bin/bash', ['-c', 'true']) to its exit. */
  directBashMs: Summary;
  /** executeTool run_command `true` in a git checkout of 100 files: the whole call. */
  toolCallMs: Summary;
  /** The tool's own duration_ms for those calls. */
  toolDurationMs: Summary;
  /** The same call right after a file tool's write: git status read before the line too. */
  toolAfterWriteMs: Summary;
  /** runCommand alone, same checkout. */
  runnerGitMs: Summary;
  /** runCommand in a folder without git (no status). */
  runnerPlainMs: Summary;
  /** bwrap with the system mounts running /bin/true. */
  bareBwrapMs: Summary;
  /** p50 of the tool call minus p50 of the direct bash. */
  overheadP50Ms: number;
}

function spawnWait(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: 'ignore', env: {} as NodeJS.ProcessEnv });
    child.on('error', reject);
    child.on('exit', () => resolve());
  });
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

export async function commandFigures(runs: number, say: (s: string) => void = () => undefined): Promise<CommandFigures> {
  const host = await commandHost(DEFAULT_SCRIPT_SETTINGS);
  if ('reason' in host) throw new Error(host.reason);
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bench-command-')));
  const checkout = path.join(base, 'ws');
  const plain = path.join(base, 'plain');
  await fs.mkdir(checkout);
  await fs.mkdir(plain);
  for (let i = 0; i < 100; i++) await fs.writeFile(path.join(checkout, `f${i}.txt`), `${i}\n`);
  const env = { PATH: '/usr/bin:/bin', HOME: base, GIT_CONFIG_NOSYSTEM: '1' } as unknown as NodeJS.ProcessEnv;
  execFileSync('git', ['init', '-q'], { cwd: checkout, env });
  execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', 'add', '-A'], { cwd: checkout, env });
  execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'base'], { cwd: checkout, env });
  const settings = { ...DEFAULT_COMMAND_SETTINGS };
  const ctx: ToolContext = {
    conversationId: 'bench',
    agentId: 'dev',
    bundleRoot: path.join(checkout, '_bmad'),
    coreRoot: path.join(checkout, '_bmad', 'core'),
    outputRoot: path.join(checkout, '_bmad-output'),
    projectRoot: checkout,
    project: { writable: [] },
    variables: {},
    limits: { ...DEFAULT_LIMITS },
    auditDir: path.join(base, 'audit'),
    tmpRoot: path.join(base, 'tmp'),
    commands: { checkout, settings },
  };
  const bare = bwrapArgs({ mounts: [], cwd: '/', env: {}, command: ['/bin/true'], disableUserns: host.disableUserns });
  const loadAvgStart = os.loadavg().map((n) => Math.round(n * 100) / 100);
  const series = { direct: [] as number[], tool: [] as number[], toolDuration: [] as number[], toolAfterWrite: [] as number[], runnerGit: [] as number[], runnerPlain: [] as number[], bwrap: [] as number[] };
  const call = async () => {
    const r = (await executeTool({ id: 'b', name: 'run_command', arguments: '{"command":"true"}' }, ctx)) as { ok: boolean; duration_ms?: number };
    if (!r.ok) throw new Error(`run_command failed: ${JSON.stringify(r).slice(0, 300)}`);
    return r.duration_ms ?? NaN;
  };
  try {
    // Warm: the support files, the cgroup hierarchy, the first quota measurement, page cache.
    for (let i = 0; i < 3; i++) {
      await spawnWait('/bin/bash', ['-c', 'true']);
      await call();
      await runCommand({ checkout: plain, cwd: plain, command: 'true' }, settings, host);
    }
    for (let i = 0; i < runs; i++) {
      series.direct.push(await timed(() => spawnWait('/bin/bash', ['-c', 'true'])));
      let d = NaN;
      series.tool.push(await timed(async () => (d = await call())));
      series.toolDuration.push(d);
      // What a file tool's write does to the status the last command left.
      await forgetStatus(checkout);
      series.toolAfterWrite.push(await timed(() => call()));
      series.runnerGit.push(await timed(() => runCommand({ checkout, cwd: checkout, tmp: ctx.tmpRoot, command: 'true' }, settings, host)));
      series.runnerPlain.push(await timed(() => runCommand({ checkout: plain, cwd: plain, command: 'true' }, settings, host)));
      series.bwrap.push(await timed(() => spawnWait(host.bwrap, bare)));
    }
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
  const f: CommandFigures = {
    runs,
    loadAvgStart,
    loadAvgEnd: os.loadavg().map((n) => Math.round(n * 100) / 100),
    directBashMs: summary(series.direct),
    toolCallMs: summary(series.tool),
    toolDurationMs: summary(series.toolDuration),
    toolAfterWriteMs: summary(series.toolAfterWrite),
    runnerGitMs: summary(series.runnerGit),
    runnerPlainMs: summary(series.runnerPlain),
    bareBwrapMs: summary(series.bwrap),
    overheadP50Ms: 0,
  };
  f.overheadP50Ms = f.toolCallMs.median - f.directBashMs.median;
  say(`command: true through run_command p50 ${fmt(f.toolCallMs.median)} ms, bash -c true directly ${fmt(f.directBashMs.median)} ms: ${fmt(f.overheadP50Ms)} ms over (load ${loadAvgStart[0]} → ${f.loadAvgEnd[0]})`);
  return f;
}

export function commandMarkdown(f: CommandFigures): string {
  const ms = (n: number) => fmt(n);
  const row = (label: string, s: Summary) => `| ${label} | ${ms(s.median)} | ${ms(s.p99)} | ${s.n} |`;
  return [
    `#### 9. A command (\`true\`), ${f.runs} rounds interleaved; load average ${f.loadAvgStart.join(' / ')} at the start, ${f.loadAvgEnd.join(' / ')} at the end`,
    '',
    '| | p50 ms | p99 ms | n |',
    '|---|---:|---:|---:|',
    row('`bash -c true` spawned directly', f.directBashMs),
    row('run_command `true` (executeTool, git checkout of 100 files): the whole call', f.toolCallMs),
    row('… its duration_ms', f.toolDurationMs),
    row('… right after a file tool\'s write (git status read before the line too)', f.toolAfterWriteMs),
    row('runCommand alone, same checkout', f.runnerGitMs),
    row('runCommand in a folder without git', f.runnerPlainMs),
    row('bare bubblewrap start (`true`, system mounts only)', f.bareBwrapMs),
    '',
    `run_command over direct, p50: **${ms(f.overheadP50Ms)} ms** (goal: at most 50 ms on an idle machine).`,
  ].join('\n');
}

if (require.main === module) {
  process.env.LOG_LEVEL ??= 'silent';
  commandFigures(Number(process.argv[2] ?? 50), (s) => process.stderr.write(`${s}\n`))
    .then((f) => {
      console.log(commandMarkdown(f));
      console.log(JSON.stringify(f, null, 2));
    })
    .catch((e) => {
      console.error(e);
      process.exit(1);
    });
}

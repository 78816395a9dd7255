/**
 * The command tool's overhead: `true` run directly (spawn, no shell) against the same line through
 * run_command's runner (bubblewrap, the limits, git status before and after in a git checkout) and
 * through the whole tool call (variables, path mapping, audit). Figures only; not a timed test.
 *
 *   npx tsx bench/command.ts [runs]
 */
import { execFileSync, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { commandHost, runCommand } from '../lib/sandbox/commands';
import { DEFAULT_COMMAND_SETTINGS, DEFAULT_LIMITS, DEFAULT_SCRIPT_SETTINGS } from '../lib/core/config';
import { executeTool } from '../lib/engine/tools';
import type { ToolContext } from '../lib/engine/tools/types';
import { summary } from './stats';

const RUNS = Number(process.argv[2] ?? 50);

function direct(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/true', [], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', () => resolve());
  });
}

async function time(fn: () => Promise<unknown>): Promise<number[]> {
  await fn();
  const out: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

async function main(): Promise<void> {
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
  try {
    const figures = {
      runs: RUNS,
      directSpawnMs: summary(await time(direct)),
      sandboxNoGitMs: summary(await time(() => runCommand({ checkout: plain, cwd: plain, command: 'true' }, settings, host))),
      sandboxGitCheckoutMs: summary(await time(() => runCommand({ checkout, cwd: checkout, command: 'true' }, settings, host))),
      toolCallMs: summary(await time(() => executeTool({ id: 'b', name: 'run_command', arguments: '{"command":"true"}' }, ctx))),
    };
    console.log(JSON.stringify(figures, null, 2));
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

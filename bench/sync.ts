/**
 * What a workspace's branch sync costs: `true` through run_command in a workspace's turn place
 * (as a chat turn or a run has it), the turn's end (commit and sync), and a reader's sync with
 * nothing new (what the workspace routes pay before they read the branch). Figures only.
 *
 *   npx tsx bench/sync.ts [runs]
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_COMMAND_SETTINGS, DEFAULT_LIMITS, DEFAULT_SCRIPT_SETTINGS } from '../lib/core/config';
import { executeTool } from '../lib/engine/tools';
import type { ToolContext } from '../lib/engine/tools/types';
import { workspaceTurn } from '../lib/engine/chat';
import { MemoryWorkspaceStore, WorkspaceService } from '../lib/engine/workspaces';
import { summary } from './stats';

const RUNS = Number(process.argv[2] ?? 30);

async function time(fn: () => Promise<unknown>, runs = RUNS): Promise<number[]> {
  await fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

async function main(): Promise<void> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bench-sync-')));
  const repo = path.join(base, 'project');
  await fs.mkdir(repo);
  for (let i = 0; i < 100; i++) await fs.writeFile(path.join(repo, `f${i}.txt`), `${i}\n`);
  const env = { PATH: '/usr/bin:/bin', HOME: base, GIT_CONFIG_NOSYSTEM: '1' } as unknown as NodeJS.ProcessEnv;
  const g = (...args: string[]) => execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', ...args], { cwd: repo, env });
  g('init', '-q', '-b', 'main');
  g('add', '-A');
  g('commit', '-qm', 'base');
  const root = path.join(base, 'workspaces');
  const workspaces = new WorkspaceService({ store: new MemoryWorkspaceStore(), root });
  const project = { id: 'bench', root: repo };
  await workspaces.putBuild('bench', { enabled: true });
  const ws = await workspaces.create(project, { name: 'bench', createdBy: 'b' });
  const settings = { ...DEFAULT_COMMAND_SETTINGS };
  const place = workspaceTurn({ workspaces, config: { commands: settings, workspacesRoot: root } }, project, ws, await workspaces.getBuild('bench'), { name: 'b', email: 'b@b' });
  const checkout = workspaces.checkoutPath(ws);
  const ctx: ToolContext = {
    conversationId: 'bench',
    agentId: 'dev',
    bundleRoot: path.join(checkout, '_bmad'),
    coreRoot: path.join(checkout, '_bmad', 'core'),
    outputRoot: path.join(checkout, '_bmad-output'),
    projectRoot: place.projectRoot,
    project: { writable: [] },
    variables: {},
    limits: { ...DEFAULT_LIMITS },
    auditDir: path.join(base, 'audit'),
    tmpRoot: place.tmpRoot,
    scripts: { ...DEFAULT_SCRIPT_SETTINGS },
    commands: place.commands!,
  };
  const tool = () => executeTool({ id: 'b', name: 'run_command', arguments: '{"command":"true"}' }, ctx);
  const direct = () => new Promise<void>((resolve) => execFileSync('/bin/bash', ['-c', 'true']) && resolve());
  let n = 0;
  try {
    const figures = {
      runs: RUNS,
      directBashTrueMs: summary(await time(async () => direct())),
      toolCallTrueMs: summary(await time(tool)),
      readerSyncNothingNewMs: summary(await time(() => workspaces.sync(project, ws))),
      turnEndOneFileMs: summary(
        await time(async () => {
          await fs.writeFile(path.join(checkout, `new${n++}.txt`), `${n}\n`);
          await place.end();
        }, Math.min(RUNS, 10)),
      ),
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

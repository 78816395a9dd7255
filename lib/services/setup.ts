import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { commandHost, runSetup } from '../sandbox/commands';
import { workspaceTmp } from '../engine/chat';
import { AppError } from '../core/errors';
import { log } from '../core/log';
import { getRuntime } from '../engine/runtime';
import type { BuildSettings, ProjectRef, SetupOutcome, Workspace } from '../engine/workspaces';

/** Setups running in this process, by workspace id: a turn in the workspace waits for none of them, it is refused. */
const KEY = Symbol.for('bmad-orchestrator.workspaceSetups');
const holder = globalThis as unknown as Record<symbol, Map<string, Promise<void>> | undefined>;
const running = (holder[KEY] ??= new Map<string, Promise<void>>());

/** The output kept with a workspace: its head and its tail (where a failing install says why). */
const KEEP_HEAD = 16 * 1024;
const KEEP_TAIL = 48 * 1024;
/** A setup still `running` in the store that no process runs any more (its server went down) blocks nothing past this. */
const STALE_SETUP_MS = 60_000;

export function keptOutput(output: string): string {
  if (output.length <= KEEP_HEAD + KEEP_TAIL) return output;
  return `${output.slice(0, KEEP_HEAD)}\n[... ${output.length - KEEP_HEAD - KEEP_TAIL} characters cut ...]\n${output.slice(-KEEP_TAIL)}`;
}

/** The setup of a workspace, when it still runs in this process (tests and runs wait on it). */
export function setupOf(workspaceId: string): Promise<void> | undefined {
  return running.get(workspaceId);
}

/** What a workspace's setup is as it starts: running, nothing said yet. */
export function setupStarting(): SetupOutcome {
  const now = new Date().toISOString();
  return { status: 'running', startedAt: now, at: now, output: '' };
}

/**
 * Whether the workspace's setup still runs: `running` in the store, and either run by this process
 * or recent enough that another may be running it (one no process runs any more, its server gone,
 * blocks nothing after the command time limit and a minute).
 */
export function setupRunning(ws: Workspace, timeoutMs: number): boolean {
  if (ws.setup?.status !== 'running') return false;
  if (setupOf(ws.id)) return true;
  return Date.now() - Date.parse(ws.setup.startedAt ?? ws.setup.at) <= timeoutMs + STALE_SETUP_MS;
}

/** 409 while the workspace's setup runs: merging or discarding it meanwhile would race the setup's own writes. */
export function refuseDuringSetup(ws: Workspace, timeoutMs: number): void {
  if (setupRunning(ws, timeoutMs)) throw new AppError('E_CONFLICT', `Workspace "${ws.name}": setup is running; try again when it is done (GET .../workspaces/${ws.id} shows its output so far).`);
}

/** The project's folder of package caches and installed trees: DATA_DIR/caches/<project>. */
export function projectCacheDir(dataDir: string, projectId: string): string {
  const safe = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/.test(projectId) ? projectId : `p-${createHash('sha256').update(projectId).digest('hex').slice(0, 32)}`;
  return path.join(dataDir, 'caches', safe);
}

/**
 * Stores a running setup's output so far, one write at a time: a newer output waits for the
 * write before it (only the newest is written), and nothing is written once the setup has ended.
 */
function progressWriter(ws: Workspace, startedAt: string) {
  let latest: string | null = null;
  let writing: Promise<void> | null = null;
  let ended = false;
  const pump = async () => {
    while (latest !== null && !ended) {
      const output = latest;
      latest = null;
      await getRuntime()
        .workspaces.recordSetup(ws.id, { status: 'running', startedAt, at: new Date().toISOString(), output: keptOutput(output) })
        .catch((e) => log.warn('workspace.setup_progress_failed', { workspace: ws.id, error: (e as Error)?.name ?? 'unknown' }));
    }
    writing = null;
  };
  return {
    push(output: string) {
      latest = output;
      writing ??= pump();
    },
    /** Waits for a write under way; none starts after. */
    async end() {
      ended = true;
      await writing;
    },
  };
}

/**
 * Runs the project's setup line once in a new workspace, after the creation has answered: its
 * output so far is stored about once a second while it runs, its outcome and output when done,
 * and what it changed in the checkout is synced.
 */
export function runWorkspaceSetup(project: ProjectRef, ws: Workspace, build: BuildSettings): void {
  const startedAt = ws.setup?.startedAt ?? new Date().toISOString();
  const task = (async () => {
    const rt = getRuntime();
    const started = Date.now();
    const progress = progressWriter(ws, startedAt);
    let outcome: SetupOutcome;
    try {
      const r = await runSetupLine(project, ws, build, (output) => progress.push(output));
      await progress.end();
      outcome = { status: r.ok ? 'ok' : 'failed', exitCode: r.exitCode, output: keptOutput(r.output), durationMs: Date.now() - started, at: new Date().toISOString(), startedAt };
      log.info('workspace.setup', { project: project.id, workspace: ws.id, status: outcome.status, exitCode: outcome.exitCode ?? null, durationMs: outcome.durationMs, network: r.network, reused: r.reused });
    } catch (e) {
      await progress.end();
      log.error('workspace.setup_crash', { workspace: ws.id, error: (e as Error)?.name ?? 'unknown' });
      outcome = { status: 'failed', exitCode: null, output: 'The setup could not be started.', durationMs: Date.now() - started, at: new Date().toISOString(), startedAt };
    }
    await rt.workspaces.recordSetup(ws.id, outcome);
    await rt.workspaces.sync(project, ws);
  })()
    .catch((e) => log.error('workspace.setup_record_failed', { workspace: ws.id, error: (e as Error)?.name ?? 'unknown' }))
    .finally(() => running.delete(ws.id));
  running.set(ws.id, task);
  // The runtime's close waits for it: nothing writes into a closed store.
  getRuntime().work.track(task);
}

/**
 * The setup line in the command sandbox's setup mode (lib/sandbox/commands/setup.ts): a network of
 * its own without the host's services, the project's package caches, in the project's folder of
 * the checkout.
 */
async function runSetupLine(
  project: ProjectRef,
  ws: Workspace,
  build: BuildSettings,
  onProgress: (output: string) => void,
): Promise<{ ok: boolean; exitCode: number | null; output: string; network: string; reused: boolean }> {
  const rt = getRuntime();
  const host = await commandHost(rt.config.scripts);
  if ('reason' in host) return { ok: false, exitCode: null, output: `The setup could not run: ${host.reason}.`, network: 'none', reused: false };
  const tmp = workspaceTmp(rt.config.workspacesRoot, ws);
  await fs.mkdir(tmp, { recursive: true });
  const r = await runSetup(
    {
      checkout: rt.workspaces.checkoutPath(ws),
      cwd: rt.workspaces.projectRootIn(project, ws),
      tmp,
      command: build.setup ?? 'true',
      env: build.env,
      cacheDir: projectCacheDir(rt.config.dataDir, project.id),
      onProgress,
    },
    rt.config.commands,
    host,
  );
  const stopped = r.stopped ? `\n[stopped: ${r.stopped}]` : '';
  return { ok: r.ok, exitCode: r.exitCode, output: r.output + stopped, network: r.network, reused: r.reused };
}

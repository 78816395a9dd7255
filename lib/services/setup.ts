import fs from 'node:fs/promises';
import { commandHost, runSetup } from '../sandbox/commands';
import { workspaceTmp } from '../engine/chat';
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

export function keptOutput(output: string): string {
  if (output.length <= KEEP_HEAD + KEEP_TAIL) return output;
  return `${output.slice(0, KEEP_HEAD)}\n[... ${output.length - KEEP_HEAD - KEEP_TAIL} characters cut ...]\n${output.slice(-KEEP_TAIL)}`;
}

/** The setup of a workspace, when it still runs in this process (tests and runs wait on it). */
export function setupOf(workspaceId: string): Promise<void> | undefined {
  return running.get(workspaceId);
}

/**
 * Runs the project's setup line once in a new workspace, after the creation has answered: its
 * outcome and output are kept with the workspace, and what it changed in the checkout is synced.
 */
export function runWorkspaceSetup(project: ProjectRef, ws: Workspace, build: BuildSettings): void {
  const task = (async () => {
    const rt = getRuntime();
    const started = Date.now();
    let outcome: SetupOutcome;
    try {
      const r = await runSetupLine(project, ws, build);
      outcome = { status: r.ok ? 'ok' : 'failed', exitCode: r.exitCode, output: keptOutput(r.output), durationMs: Date.now() - started, at: new Date().toISOString() };
    } catch (e) {
      log.error('workspace.setup_crash', { workspace: ws.id, error: (e as Error)?.name ?? 'unknown' });
      outcome = { status: 'failed', exitCode: null, output: 'The setup could not be started.', durationMs: Date.now() - started, at: new Date().toISOString() };
    }
    await rt.workspaces.recordSetup(ws.id, outcome);
    log.info('workspace.setup', { project: project.id, workspace: ws.id, status: outcome.status, exitCode: outcome.exitCode ?? null, durationMs: outcome.durationMs });
    await rt.workspaces.sync(project, ws);
  })()
    .catch((e) => log.error('workspace.setup_record_failed', { workspace: ws.id, error: (e as Error)?.name ?? 'unknown' }))
    .finally(() => running.delete(ws.id));
  running.set(ws.id, task);
  // The runtime's close waits for it: nothing writes into a closed store.
  getRuntime().work.track(task);
}

/** The setup line in the command sandbox's setup mode: the host's network, in the project's folder of the checkout. */
async function runSetupLine(project: ProjectRef, ws: Workspace, build: BuildSettings): Promise<{ ok: boolean; exitCode: number | null; output: string }> {
  const rt = getRuntime();
  const host = await commandHost(rt.config.scripts);
  if ('reason' in host) return { ok: false, exitCode: null, output: `The setup could not run: ${host.reason}.` };
  const tmp = workspaceTmp(rt.config.workspacesRoot, ws);
  await fs.mkdir(tmp, { recursive: true });
  const r = await runSetup(
    { checkout: rt.workspaces.checkoutPath(ws), cwd: rt.workspaces.projectRootIn(project, ws), tmp, command: build.setup ?? 'true', env: build.env },
    rt.config.commands,
    host,
  );
  const stopped = r.stopped ? `\n[stopped: ${r.stopped}]` : '';
  return { ok: r.ok, exitCode: r.exitCode, output: r.output + stopped };
}

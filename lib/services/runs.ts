import { roleAllows, type Caller, type Need } from '../core/access';
import { AppError } from '../core/errors';
import { getRuntime } from '../engine/runtime';
import { isTerminal, runView, type Run, type RunEvent, type RunInputs, type RunView } from '../engine/runs';
import type { RunBudget } from '../store/budgets';
import { projectOf } from './access';
import { assertBudget } from './budgets';
import { discardWorkspace, runWorkspaceView, workspaceForRun } from './workspaces';

const RUN_ID = /^run_[a-f0-9]{24}$/;

const runNotFound = (id: string) => new AppError('E_NOT_FOUND', `No run with id "${String(id).slice(0, 80)}".`);

/** Whether the caller may see (or, with `need`, act on) a run: its project, and its conversation as the policy decides. */
async function mayUseRun(run: Run, caller: Caller, need: Need = 'read'): Promise<boolean> {
  const rt = getRuntime();
  const role = await rt.access.projectRole(caller, run.projectId);
  if (!role || !roleAllows(role, need === 'own' ? 'write' : need)) return false;
  return rt.access.conversation(caller, { id: run.conversationId ?? run.id, projectId: run.projectId, ownerId: run.ownerId }, need);
}

/** A run as the caller may use it for `need`: E_NOT_FOUND when it does not exist or is not theirs to see. */
export async function runOf(caller: Caller, id: string, need: Need = 'read'): Promise<Run> {
  const run = RUN_ID.test(id) ? await getRuntime().runs.store.get(id) : null;
  if (!run || !(await mayUseRun(run, caller, need))) throw runNotFound(id);
  return run;
}

/** What starts a headless run (POST /api/runs; the MCP start_run tool sends a part of it). */
export interface RunInput {
  projectId: string;
  /** A skill's name (bmad-prd) or an agent's menu code (PRD). */
  skill: string;
  /** The agent whose menu code `skill` is, when codes repeat between agents. */
  agentId?: string;
  intent?: string;
  inputs: RunInputs;
  model?: string;
  webhook?: { url: string; secret?: string };
  /** Run in this workspace of the project, or in a new one of this name. */
  workspaceId?: string;
  workspace?: { name: unknown };
  /** The run's own limit; the run service checks it (RUNS_MAX_TOKENS's tokens when absent). */
  budget?: Record<string, unknown>;
}

export interface StartedRun {
  runId: string;
  status: Run['status'];
  skill: string;
  agentId: string;
  /** The webhook's secret when the server made it: told once, here. */
  webhookSecret?: string;
}

/**
 * Queues a run of `input.skill` in a project the caller may write in. A skill without a headless
 * contract is E_NOT_HEADLESS, which carries the skills that have one (the error's `response`).
 */
export async function startRun(caller: Caller, input: RunInput): Promise<StartedRun> {
  const project = await projectOf(caller, input.projectId, 'write');
  // A spent project refuses before a workspace is made for the run.
  await assertBudget(project.id, caller.id);
  const workspaceId = await workspaceForRun(caller, project.id, input);
  // A workspace made for this run goes with a refused run: a refusal leaves nothing behind.
  const undo = async (e: unknown): Promise<never> => {
    if (workspaceId && input.workspace !== undefined) await discardWorkspace(caller, project.id, workspaceId).catch(() => undefined);
    throw e;
  };
  const { run, webhookSecret } = await getRuntime().runs.submit({
    projectId: project.id,
    ownerId: caller.id,
    skill: input.skill,
    ...(input.agentId ? { agentId: input.agentId } : {}),
    ...(input.intent ? { intent: input.intent } : {}),
    inputs: input.inputs,
    ...(input.model ? { model: input.model } : {}),
    ...(input.webhook ? { webhook: input.webhook } : {}),
    ...(workspaceId ? { workspaceId } : {}),
    ...(input.budget ? { budget: input.budget as RunBudget } : {}),
  }).catch(undo);
  return { runId: run.id, status: run.status, skill: run.skill, agentId: run.agentId, ...(webhookSecret ? { webhookSecret } : {}) };
}

/** A project's latest runs that the caller may see (at most `limit`, 50 by default). */
export async function listRuns(caller: Caller, query: { projectId: string; limit?: number }): Promise<{ items: RunView[] }> {
  const project = await projectOf(caller, query.projectId);
  const runs = await getRuntime().runs.store.list({ projectId: project.id, limit: query.limit ?? 50 });
  const items: RunView[] = [];
  for (const run of runs) if (await mayUseRun(run, caller)) items.push(runView(run));
  return { items };
}

/** A run, and for one in a workspace where it left its work. */
export async function getRun(caller: Caller, id: string): Promise<RunView> {
  const run = await runOf(caller, id);
  return { ...runView(run), ...(run.workspaceId ? { workspace: await runWorkspaceView(run.projectId, run.workspaceId) } : {}) };
}

/** Cancels a run the caller may act on: a queued one at once, a running one as soon as its turn stops. */
export async function cancelRun(caller: Caller, id: string): Promise<RunView> {
  const run = await runOf(caller, id, 'write');
  if (isTerminal(run.status)) throw new AppError('E_CONFLICT', `Run "${run.id}" has already ended (${run.status}).`);
  const cancelled = await getRuntime().runs.cancel(run.id);
  return runView(cancelled ?? run);
}

/** The store is read this often too: a run another instance drives has no events here. */
const POLL_MS = 1000;
const KEEPALIVE_MS = 15_000;

export const RUN_EVENTS_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * Progress of a run as server-sent events: `run` (the run, now and at every change of status),
 * `turn`, `tool`, `answered` (a question the server answered); the stream ends after the run ends,
 * or when `signal` (the reader going away) aborts.
 */
export async function runEvents(caller: Caller, id: string, signal?: AbortSignal): Promise<{ body: ReadableStream<Uint8Array>; headers: Record<string, string> }> {
  const first = await runOf(caller, id);
  const runs = getRuntime().runs;
  const encoder = new TextEncoder();
  let cleanup = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let closed = false;
      let lastStatus = '';
      let lastUpdate = '';
      const send = (event: RunEvent) => {
        if (closed) return;
        controller.enqueue(encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`));
        if (event.type === 'run') {
          lastStatus = event.run.status;
          lastUpdate = `${event.run.status}:${event.run.conversationId}:${event.run.answers}:${event.run.endedAt}`;
          if (isTerminal(event.run.status)) finish();
        }
      };
      const finish = () => {
        if (closed) return;
        closed = true;
        cleanup();
        controller.close();
      };
      const unsubscribe = runs.subscribe(first.id, send);
      const poll = setInterval(() => {
        void runs.store.get(first.id).then((run) => {
          if (!run) return finish();
          const key = `${run.status}:${run.conversationId ?? null}:${run.answers}:${run.endedAt ?? null}`;
          if (key !== lastUpdate || run.status !== lastStatus) send({ type: 'run', run: runView(run) });
        }, () => undefined);
      }, POLL_MS);
      const keepalive = setInterval(() => !closed && controller.enqueue(encoder.encode(': keep-alive\n\n')), KEEPALIVE_MS);
      cleanup = () => {
        unsubscribe();
        clearInterval(poll);
        clearInterval(keepalive);
        signal?.removeEventListener('abort', finish);
      };
      signal?.addEventListener('abort', finish, { once: true });
      send({ type: 'run', run: runView(first) });
    },
    cancel() {
      cleanup();
    },
  });
  return { body, headers: { ...RUN_EVENTS_HEADERS } };
}

import type { Caller } from '../core/access';
import { AppError } from '../core/errors';
import { runView, type RunView } from '../engine/runs';
import { getRuntime } from '../engine/runtime';
import { assertBudget } from './budgets';
import { runAllows } from './decisions';
import type { BodyOf } from './access';

const RUN_ID = /^run_[a-f0-9]{24}$/;

/**
 * Answers a run that waits on a person (blocked, a question included): the answer becomes the
 * next turn of its conversation, in its workspace, and the run is queued again before this
 * returns. The project's editors only (a viewer who sees the run: 403); unknown or unseen: 404;
 * a run that does not wait: 409; a project whose month is spent: 402. The body is read after
 * the access check.
 */
export async function answerRun(caller: Caller, id: string, body: BodyOf<{ text: string }>): Promise<RunView> {
  const rt = getRuntime();
  const run = RUN_ID.test(id) ? await rt.runs.store.get(id) : null;
  if (!run || !(await runAllows(caller, run))) throw new AppError('E_NOT_FOUND', `No run with id "${String(id).slice(0, 80)}".`);
  if (!(await runAllows(caller, run, 'write'))) throw new AppError('E_FORBIDDEN', `Your role in project "${run.projectId}" does not allow answering its runs.`);
  const { text } = await body();
  if (run.status !== 'blocked') throw new AppError('E_CONFLICT', `Run "${run.id}" is ${run.status}: only a blocked run waits for an answer.`, { status: run.status });
  await assertBudget(run.projectId, run.ownerId);
  const by = caller.kind === 'local' ? undefined : { id: caller.id, name: caller.name || caller.email || caller.id };
  const queued = await rt.runs.answer(run.id, text, by);
  // Another answer (or nothing else: only blocked runs are resumed) took it in between.
  if (!queued) throw new AppError('E_CONFLICT', `Run "${run.id}" no longer waits for an answer.`);
  return runView(queued);
}

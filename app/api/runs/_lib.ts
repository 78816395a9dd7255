import { getRuntime } from '@/lib/runtime';
import { roleAllows, type Caller, type Need } from '@/lib/access';
import { AppError } from '@/lib/errors';
import type { Run } from '@/lib/runs';

const RUN_ID = /^run_[a-f0-9]{24}$/;

const notFound = (id: string) => new AppError('E_NOT_FOUND', `No run with id "${String(id).slice(0, 80)}".`);

/** Whether the caller may see (or, with `need`, act on) a run: its project, and its conversation as the policy decides. */
export async function mayUseRun(run: Run, caller: Caller, need: Need = 'read'): Promise<boolean> {
  const rt = getRuntime();
  const role = await rt.access.projectRole(caller, run.projectId);
  if (!role || !roleAllows(role, need === 'own' ? 'write' : need)) return false;
  return rt.access.conversation(caller, { id: run.conversationId ?? run.id, projectId: run.projectId, ownerId: run.ownerId }, need);
}

/** A run as the caller may use it: 404 when it does not exist or is not theirs to see. */
export async function runOr404(id: string, caller: Caller, need: Need = 'read'): Promise<Run> {
  const run = RUN_ID.test(id) ? await getRuntime().runs.store.get(id) : null;
  if (!run || !(await mayUseRun(run, caller, need))) throw notFound(id);
  return run;
}

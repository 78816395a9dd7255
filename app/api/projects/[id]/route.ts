import { getProject } from '@/lib/services';
import { handle, ok } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/**
 * The project with the doctor's diagnosis: every agent's start, menu targets, workflows, steps,
 * templates and config keys. A diagnosis loads every workflow of the install (about 90 files for
 * 6.0.4: 0.2 to 0.9 s, median 0.4 s, measured on two busy cores), so it is kept 5 s per project: a page polling the
 * detail costs one diagnosis per 5 s, and an edit shows within that. GET /api/projects keeps
 * only the install's own cheap checks.
 */
export async function GET(request: Request, ctx: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id', request, async () => {
    const caller = await callerOf(request);
    return ok(await getProject(caller, (await ctx.params).id));
  });
}

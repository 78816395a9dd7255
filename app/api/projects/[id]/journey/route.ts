import { getRuntime } from '@/lib/runtime';
import { projectJourney } from '@/lib/projects';
import { handle, ok } from '../../../_lib/http';
import { projectOr404 } from '../../../_lib/projects';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Where the project stands on its BMAD journey and what comes next, from its own help catalog and documents. */
export async function GET(request: Request, ctx: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id/journey', request, async () => {
    const caller = await callerOf(request);
    const { id } = await ctx.params;
    const project = await projectOr404(id, caller);
    return ok(await projectJourney(getRuntime().projects, project));
  });
}

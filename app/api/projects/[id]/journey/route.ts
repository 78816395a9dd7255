import { journeyOf } from '@/lib/services';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Where the project stands on its BMAD journey and what comes next, from its own help catalog and documents. */
export async function GET(request: Request, ctx: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id/journey', request, async () => {
    const caller = await callerOf(request);
    return ok(await journeyOf(caller, (await ctx.params).id));
  });
}

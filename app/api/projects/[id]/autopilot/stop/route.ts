import { stopAutopilot } from '@/lib/services';
import { handle, ok } from '../../../../_lib/http';
import { callerOf } from '../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** Stop all (owners and editors): the autopilot off, the runs of its stories under way cancelled. */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/projects/:id/autopilot/stop', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await stopAutopilot(caller, id));
  });
}

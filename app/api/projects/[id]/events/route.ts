import { projectEvents } from '@/lib/services';
import { handle } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's changes (stories, runs, workspaces, the autopilot) as server-sent events, until the client goes away. */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/events', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const { body, headers } = await projectEvents(caller, id, request.signal);
    return new Response(body, { status: 200, headers });
  });
}

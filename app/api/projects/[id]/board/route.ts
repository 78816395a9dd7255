import { getBoard } from '@/lib/services';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/**
 * The sprint board (whoever sees the project): the base branch's sprint status, epics and stories
 * with their titles, files, latest workspace, run and spend; `{ source: null, epics: [] }` without one.
 */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/board', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await getBoard(caller, id));
  });
}

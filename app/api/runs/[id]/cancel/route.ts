import { cancelRun } from '@/lib/services';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/runs/:id/cancel', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    // A queued run is cancelled at once; a running one as soon as its turn stops.
    return ok(await cancelRun(caller, id), { status: 202 });
  });
}

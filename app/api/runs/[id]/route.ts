import { getRun } from '@/lib/services';
import { handle, ok } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/runs/:id', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await getRun(caller, id));
  });
}

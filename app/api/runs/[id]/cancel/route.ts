import { getRuntime } from '@/lib/runtime';
import { isTerminal, runView } from '@/lib/runs';
import { AppError } from '@/lib/errors';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';
import { runOr404 } from '../../_lib';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/runs/:id/cancel', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const run = await runOr404(id, caller, 'write');
    if (isTerminal(run.status)) throw new AppError('E_CONFLICT', `Run "${run.id}" has already ended (${run.status}).`);
    const cancelled = await getRuntime().runs.cancel(run.id);
    // A queued run is cancelled at once; a running one as soon as its turn stops.
    return ok(runView(cancelled ?? run), { status: 202 });
  });
}

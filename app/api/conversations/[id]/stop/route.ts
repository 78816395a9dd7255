import { stopConversation } from '@/lib/services';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/**
 * Stops the conversation's running turn, on whichever instance runs it (the request is recorded
 * in the store). `stopping` is false when no turn was running.
 */
export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('POST /api/conversations/:id/stop', request, async () => {
    const caller = await callerOf(request);
    return ok(await stopConversation(caller, (await params).id));
  });
}

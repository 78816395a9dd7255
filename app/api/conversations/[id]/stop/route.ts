import { getRuntime } from '@/lib/runtime';
import { handle, ok } from '../../../_lib/http';
import { conversationOr404 } from '../../../_lib/conversations';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/**
 * Stops the conversation's running turn, on whichever instance runs it: the request is recorded
 * in the store and that instance ends the turn as a local Stop does (stored `stopped`, the
 * partial answer kept). `stopping` is false when no turn was running. Its writer stops it, and so
 * does an admin who can see it.
 */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/conversations/:id/stop', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    // An admin writes only in their own conversations but must be able to stop a runaway turn in anyone's.
    await conversationOr404(id, caller, caller.role === 'admin' ? 'read' : 'write');
    const stopping = await getRuntime().store.requestStop(id);
    return ok({ conversationId: id, stopping });
  });
}

import { copyConversation } from '@/lib/services';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Continue in a copy of a conversation the caller may read, where they may chat; 201 with the copy's id. */
export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('POST /api/conversations/:id/copy', request, async () => {
    const caller = await callerOf(request);
    return ok(await copyConversation(caller, (await params).id), { status: 201 });
  });
}

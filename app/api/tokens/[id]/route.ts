import { revokeToken } from '@/lib/services';
import { handle, ok } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Revokes one of the caller's tokens at once; someone else's token is a 404. */
export async function DELETE(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('DELETE /api/tokens/:id', request, async () => {
    const caller = await callerOf(request);
    return ok(await revokeToken(caller, (await params).id));
  });
}

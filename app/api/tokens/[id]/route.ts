import { AppError } from '@/lib/errors';
import { handle, ok } from '../../_lib/http';
import { accountsOr404, callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** Revokes one of the caller's tokens at once; someone else's token is a 404. */
export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/tokens/:id', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    if (!(await accountsOr404().revokeToken(caller.id, id))) throw new AppError('E_NOT_FOUND', `No token with id "${id.slice(0, 80)}".`);
    return ok({ id, revoked: true });
  });
}

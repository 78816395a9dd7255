import { z } from 'zod';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../../../_lib/http';
import { accountsOr404, signedInAdminOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

const Put = z.object({ password: z.string().min(8, 'password must have at least 8 characters').max(256) });

/** An admin sets a person's new password; the person's open sessions end. Their own: /api/users/me/password. */
export async function PUT(request: Request, { params }: Params) {
  return handle('PUT /api/users/:id/password', request, async () => {
    const caller = await signedInAdminOf(request);
    const { id } = await params;
    const body = await readJson(request, Put);
    if (id === caller.id) throw new AppError('E_CONFLICT', 'Change your own password with your current one (PUT /api/users/me/password).');
    if (!(await accountsOr404().setPassword(id, body.password))) throw new AppError('E_NOT_FOUND', `No person with id "${id.slice(0, 80)}".`);
    return ok({ id, passwordSet: true });
  });
}

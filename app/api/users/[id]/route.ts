import { z } from 'zod';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../../_lib/http';
import { accountsOr404, adminOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

const Patch = z.object({ role: z.enum(['admin', 'member']) });

/** An admin changes a person's role (never their own: a server keeps the admin who acts). */
export async function PATCH(request: Request, { params }: Params) {
  return handle('PATCH /api/users/:id', request, async () => {
    const caller = await adminOf(request);
    const { id } = await params;
    const body = await readJson(request, Patch);
    if (id === caller.id) throw new AppError('E_CONFLICT', 'You cannot change your own role.');
    const person = await accountsOr404().setRole(id, body.role);
    if (!person) throw new AppError('E_NOT_FOUND', `No person with id "${id.slice(0, 80)}".`);
    return ok(person);
  });
}

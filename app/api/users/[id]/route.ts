import { z } from 'zod';
import { AppError } from '@/lib/errors';
import { getRuntime } from '@/lib/runtime';
import { handle, ok, readJson } from '../../_lib/http';
import { accountsOr404, signedInAdminOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

const notFound = (id: string) => new AppError('E_NOT_FOUND', `No person with id "${id.slice(0, 80)}".`);

const Patch = z
  .object({ role: z.enum(['admin', 'member']).optional(), active: z.boolean().optional() })
  .refine((b) => b.role !== undefined || b.active !== undefined, { message: 'send role or active', path: ['role'] });

/**
 * An admin changes a person's role, or deactivates (`active: false`) or reactivates them. Never
 * their own (a server keeps the admin who acts), nor the last active admin's.
 */
export async function PATCH(request: Request, { params }: Params) {
  return handle('PATCH /api/users/:id', request, async () => {
    const caller = await signedInAdminOf(request);
    const { id } = await params;
    const body = await readJson(request, Patch);
    if (id === caller.id) throw new AppError('E_CONFLICT', body.role !== undefined ? 'You cannot change your own role.' : 'You cannot deactivate yourself; another admin can.');
    const accounts = accountsOr404();
    // Role and state together or not at all.
    const person = await accounts.update(caller.id, id, { ...(body.role !== undefined ? { role: body.role } : {}), ...(body.active !== undefined ? { active: body.active } : {}) });
    if (!person) throw notFound(id);
    if (body.active === false) await getRuntime().runs.cancelByOwner(id);
    return ok(person);
  });
}

/** An admin deletes a person: account, sessions, tokens and memberships; their conversations stay. */
export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/users/:id', request, async () => {
    const caller = await signedInAdminOf(request);
    const { id } = await params;
    if (!(await accountsOr404().removePerson(caller.id, id))) throw notFound(id);
    await getRuntime().runs.cancelByOwner(id);
    return ok({ id, removed: true });
  });
}

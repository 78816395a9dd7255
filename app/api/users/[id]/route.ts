import { z } from 'zod';
import { removePerson, updatePerson } from '@/lib/services';
import { handle, ok, readJson } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

const Patch = z
  .object({ role: z.enum(['admin', 'member']).optional(), active: z.boolean().optional() })
  .refine((b) => b.role !== undefined || b.active !== undefined, { message: 'send role or active', path: ['role'] });

/** An admin changes a person's role, or deactivates (`active: false`) or reactivates them; never their own. */
export async function PATCH(request: Request, { params }: Params) {
  return handle('PATCH /api/users/:id', request, async () => {
    const caller = await callerOf(request);
    return ok(await updatePerson(caller, (await params).id, () => readJson(request, Patch)));
  });
}

/** An admin deletes a person: account, sessions, tokens and memberships; their conversations stay. */
export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/users/:id', request, async () => {
    const caller = await callerOf(request);
    return ok(await removePerson(caller, (await params).id));
  });
}

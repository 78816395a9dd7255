import { z } from 'zod';
import { deleteConversation, getConversation, updateConversation } from '@/lib/services';
import { handle, ok, readJson } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/conversations/:id', request, async () => {
    const caller = await callerOf(request);
    return ok(await getConversation(caller, (await params).id));
  });
}

const Patch = z
  .object({
    title: z.string().trim().min(1, 'title must not be empty').max(200).optional(),
    /** A profile name, or null to go back to choosing per turn (command, agent, default). */
    model: z.string().trim().min(1, 'model must not be empty').max(64).nullable().optional(),
    /** true: the project's members may read it; false: private again (its owner and admins only). */
    shared: z.boolean().optional(),
  })
  .refine((p) => p.title !== undefined || p.model !== undefined || p.shared !== undefined, { message: 'give a title, a model or shared', path: ['title'] });

export async function PATCH(request: Request, { params }: Params) {
  return handle('PATCH /api/conversations/:id', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const patch = await readJson(request, Patch);
    return ok(await updateConversation(caller, id, patch));
  });
}

export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/conversations/:id', request, async () => {
    const caller = await callerOf(request);
    return ok(await deleteConversation(caller, (await params).id));
  });
}

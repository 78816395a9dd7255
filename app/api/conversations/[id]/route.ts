import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { outputRootOf } from '@/lib/outputs';
import { removeOutputs } from '@/lib/outputs';
import { deleteAudit } from '@/lib/audit';
import { AppError } from '@/lib/errors';
import { checkProfile } from '@/lib/chat/model-choice';
import { handle, ok, readJson } from '../../_lib/http';
import { conversationOr404, detailFor, notFound } from '../../_lib/conversations';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/conversations/:id', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await detailFor(await conversationOr404(id, caller), caller));
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
    // Its owner's alone, as every write (a reader is told so; see conversationOr404).
    await conversationOr404(id, caller, patch.shared !== undefined ? 'own' : 'write');
    const rt = getRuntime();
    if (patch.model) checkProfile(rt.config.models, patch.model);
    let updated = patch.title !== undefined ? await rt.store.rename(id, patch.title) : await rt.store.get(id);
    if (updated && patch.model !== undefined) updated = await rt.store.setModel(id, patch.model);
    if (updated && patch.shared !== undefined) {
      if (!updated.projectId && patch.shared) throw new AppError('E_VALIDATION', 'Only a project conversation can be shared (with the project\'s members).', { field: 'shared' });
      updated = await rt.store.setShared(id, patch.shared);
    }
    if (!updated) throw notFound(id);
    return ok(await detailFor(updated, caller));
  });
}

export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/conversations/:id', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    await conversationOr404(id, caller, 'own');
    const rt = getRuntime();
    if ((await rt.store.get(id))?.status === 'running') {
      throw new AppError('E_CONVERSATION_BUSY', 'A turn is running on this conversation; stop it before deleting.');
    }
    await rt.store.delete(id);
    await Promise.all([removeOutputs(outputRootOf(rt.config, id)), deleteAudit(rt.auditDir, id)]);
    return ok({ id, deleted: true });
  });
}

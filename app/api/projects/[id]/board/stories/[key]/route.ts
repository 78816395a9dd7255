import { z } from 'zod';
import { moveStory } from '@/lib/services';
import { handle, ok, readJson } from '../../../../../_lib/http';
import { callerOf } from '../../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; key: string }> };

const Body = z.object({ status: z.string('status must be a text').max(40) });

/**
 * Moves a story (owners and editors): only its key changes in the base branch's sprint status, one
 * commit naming the person. 400 for a status a story cannot have, 404 for an unknown story.
 */
export async function PATCH(request: Request, { params }: Params) {
  return handle('PATCH /api/projects/:id/board/stories/:key', request, async () => {
    const caller = await callerOf(request);
    const { id, key } = await params;
    return ok(await moveStory(caller, id, key, () => readJson(request, Body)));
  });
}

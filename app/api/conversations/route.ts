import { z } from 'zod';
import { handle, ok, parseWith } from '../_lib/http';
import { projectOr404 } from '../_lib/projects';
import { callerOf } from '../_lib/caller';
import { summariesFor, visiblePage } from '../_lib/conversations';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const Query = z.object({
  agentId: z.string().min(1).max(200).optional(),
  projectId: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
  cursor: z.string().min(1).max(500).optional(),
  q: z.string().max(200, 'q must be at most 200 characters').optional(),
});

export async function GET(request: Request) {
  return handle('GET /api/conversations', request, async () => {
    const caller = await callerOf(request);
    const params = Object.fromEntries(new URL(request.url).searchParams);
    const query = parseWith(Query, params);
    if (query.projectId !== undefined) await projectOr404(query.projectId, caller);
    // An empty search box lists everything, as no q does.
    const q = query.q?.trim() || undefined;
    const page = await visiblePage(caller, {
      agentId: query.agentId,
      ...(query.projectId !== undefined ? { projectId: query.projectId } : {}),
      ...(q !== undefined ? { q } : {}),
      limit: query.limit ?? 20,
      cursor: query.cursor,
    });
    return ok({ items: await summariesFor(page.items, caller), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
  });
}

import { z } from 'zod';
import { listConversations } from '@/lib/services';
import { handle, ok, parseWith } from '../_lib/http';
import { callerOf } from '../_lib/caller';

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
    const query = parseWith(Query, Object.fromEntries(new URL(request.url).searchParams));
    return ok(await listConversations(caller, query));
  });
}

import { z } from 'zod';
import { decideAutopilot } from '@/lib/services';
import { handle, ok, readJson } from '../../../../../_lib/http';
import { callerOf } from '../../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; did: string }> };

const Body = z.object({
  action: z.enum(['answer', 'retry', 'skip', 'merge-anyway', 'stop'], 'action must be answer, retry, skip, merge-anyway or stop'),
  answer: z.string('answer must be a text').max(100_000).optional(),
});

/** Takes one of the autopilot's decisions (owners and editors): 200 with the autopilot; 409 once taken. */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/projects/:id/autopilot/decisions/:did', request, async () => {
    const caller = await callerOf(request);
    const { id, did } = await params;
    return ok(await decideAutopilot(caller, id, did, () => readJson(request, Body)));
  });
}

import { z } from 'zod';
import { createToken, listTokens } from '@/lib/services';
import { handle, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** The caller's API tokens, without their secrets. */
export async function GET(request: Request) {
  return handle('GET /api/tokens', request, async () => ok(await listTokens(await callerOf(request))));
}

const NewToken = z.object({
  name: z.string().trim().min(1, 'name is required').max(32),
  expiresAt: z.iso.datetime({ offset: true, message: 'expiresAt must be an ISO date-time' }).optional(),
  projectIds: z.array(z.string().min(1).max(200)).min(1, 'projectIds must name at least one project').max(100).optional(),
});

/** A personal API token: the secret is in this answer only; `projectIds` limits it to some projects the caller sees. */
export async function POST(request: Request) {
  return handle('POST /api/tokens', request, async () => {
    const caller = await callerOf(request);
    return ok(await createToken(caller, () => readJson(request, NewToken)), { status: 201 });
  });
}

import { z } from 'zod';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../_lib/http';
import { accountsOr404, callerOf } from '../_lib/caller';
import { projectOr404 } from '../_lib/projects';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** The caller's API tokens, without their secrets. */
export async function GET(request: Request) {
  return handle('GET /api/tokens', request, async () => {
    const caller = await callerOf(request);
    return ok(await accountsOr404().listTokens(caller.id));
  });
}

const NewToken = z.object({
  name: z.string().trim().min(1, 'name is required').max(32),
  expiresAt: z.iso.datetime({ offset: true, message: 'expiresAt must be an ISO date-time' }).optional(),
  projectIds: z.array(z.string().min(1).max(200)).min(1, 'projectIds must name at least one project').max(100).optional(),
});

/**
 * A personal API token: the secret is in this answer only (stored hashed). It acts as its owner,
 * and only on `projectIds` when given; a token limited to projects makes only tokens limited to
 * some of them.
 */
export async function POST(request: Request) {
  return handle('POST /api/tokens', request, async () => {
    const caller = await callerOf(request);
    const accounts = accountsOr404();
    const body = await readJson(request, NewToken);
    if (caller.projectIds && (!body.projectIds || body.projectIds.some((p) => !caller.projectIds!.includes(p)))) {
      throw new AppError('E_FORBIDDEN', 'This token is limited to some projects: the new one must be limited to some of them too.');
    }
    // Only projects the caller may see: a token cannot reach further than its owner.
    for (const id of body.projectIds ?? []) await projectOr404(id, caller);
    const expiresAt = body.expiresAt ? new Date(body.expiresAt) : undefined;
    return ok(await accounts.createToken(caller.id, { name: body.name, ...(expiresAt ? { expiresAt } : {}), ...(body.projectIds ? { projectIds: body.projectIds } : {}) }), { status: 201 });
  });
}

import { z } from 'zod';
import { getRemote, putRemote } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's remote repository (whoever sees the project): never a secret, only whether one is set; null when none. */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/remote', request, async () => {
    const caller = await callerOf(request);
    return ok(await getRemote(caller, (await params).id));
  });
}

const text = (field: string, max: number) => z.string(`${field} must be a text or null`).trim().min(1, `${field} must not be empty`).max(max).nullable().optional();
const Put = z.object({
  url: text('url', 2048),
  forge: text('forge', 20),
  apiUrl: text('apiUrl', 2048),
  token: z.string('token must be a text or null').min(1, 'token must not be empty').max(4096).nullable().optional(),
  webhookSecret: z.string('webhookSecret must be a text or null').min(1, 'webhookSecret must not be empty').max(4096).nullable().optional(),
  mode: z.enum(['pull-request', 'push'], 'mode must be pull-request or push').nullable().optional(),
  username: text('username', 100),
});

/** Sets the project's remote (owners and admins): fields left out keep their values, null removes one (`url: null` the remote). Secrets are write-only. */
export async function PUT(request: Request, { params }: Params) {
  return handle('PUT /api/projects/:id/remote', request, async () => {
    const caller = await callerOf(request);
    return ok(await putRemote(caller, (await params).id, () => readJson(request, Put)));
  });
}

import { z } from 'zod';
import { changeOwnPassword } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const Put = z.object({
  currentPassword: z.string().min(1, 'currentPassword is required').max(256),
  newPassword: z.string().min(8, 'newPassword must have at least 8 characters').max(256),
});

/**
 * The signed-in person changes their password, giving the current one. Their other sessions end;
 * this one goes on (its renewed cookie is in the answer). Not with an API token.
 */
export async function PUT(request: Request) {
  return handle('PUT /api/users/me/password', request, async () => {
    const caller = await callerOf(request);
    const cookies = await changeOwnPassword(caller, request.headers, () => readJson(request, Put));
    const out = new Headers();
    for (const c of cookies) out.append('set-cookie', c);
    return ok({ passwordChanged: true }, { headers: out });
  });
}

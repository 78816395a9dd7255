import { z } from 'zod';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../../../_lib/http';
import { accountsOr404, callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const Put = z.object({
  currentPassword: z.string().min(1, 'currentPassword is required').max(256),
  newPassword: z.string().min(8, 'newPassword must have at least 8 characters').max(256),
});

/**
 * The signed-in person changes their password, giving the current one. Their other sessions end;
 * this one goes on (its renewed cookie is in the answer). Not with an API token: a token that
 * leaked must not be able to take the account.
 */
export async function PUT(request: Request) {
  return handle('PUT /api/users/me/password', request, async () => {
    const caller = await callerOf(request);
    const accounts = accountsOr404();
    if (caller.kind !== 'session') throw new AppError('E_FORBIDDEN', 'Sign in to change your password; an API token cannot.');
    const body = await readJson(request, Put);
    const headers = await accounts.changeOwnPassword(request.headers, body.currentPassword, body.newPassword, caller.email ?? '');
    const out = new Headers();
    for (const c of headers.getSetCookie()) out.append('set-cookie', c);
    return ok({ passwordChanged: true }, { headers: out });
  });
}

import { clientAddressed } from '@/lib/auth';
import { AppError } from '@/lib/errors';
import { fail, handle } from '../../_lib/http';
import { accountsOr404 } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/**
 * Better Auth's own routes (sign-in, sign-out, session, SSO callbacks, ...). Its 429 is answered in
 * the API's error shape, with when to try again.
 */
async function authRoute(request: Request): Promise<Response> {
  return handle(`${request.method} /api/auth/*`, request, async () => {
    const accounts = accountsOr404();
    await accounts.ready();
    const response = await accounts.auth.handler(clientAddressed(request));
    if (response.status !== 429) return response;
    const retry = response.headers.get('x-retry-after') ?? response.headers.get('retry-after') ?? '60';
    const res = fail(new AppError('E_RATE_LIMITED', `Too many attempts; try again in ${retry} seconds.`));
    res.headers.set('retry-after', retry);
    return res;
  });
}

export const GET = authRoute;
export const POST = authRoute;

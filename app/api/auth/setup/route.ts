import { z } from 'zod';
import { createFirstAdmin, setupInfo } from '@/lib/services';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../../_lib/http';
import { isCrossOriginWrite } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** What the sign-in page needs before anyone is signed in. */
export async function GET(request: Request) {
  return handle('GET /api/auth/setup', request, async () => ok(await setupInfo()));
}

const FirstAdmin = z.object({
  email: z.email('email must be an email address').max(254),
  name: z.string().trim().min(1, 'name is required').max(100),
  password: z.string().min(8, 'password must have at least 8 characters').max(256),
});

/**
 * The first visitor creates the admin and is signed in; once there is one, 409. Two at once:
 * exactly one wins (Accounts.createFirstAdmin).
 */
export async function POST(request: Request) {
  return handle('POST /api/auth/setup', request, async () => {
    if (isCrossOriginWrite(request)) throw new AppError('E_FORBIDDEN', 'Requests that change something must come from this site (the Origin does not match).');
    const { person, cookies } = await createFirstAdmin(request, () => readJson(request, FirstAdmin));
    const res = ok(person, { status: 201 });
    for (const cookie of cookies) res.headers.append('set-cookie', cookie);
    return res;
  });
}

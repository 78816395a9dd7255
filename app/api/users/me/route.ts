import { me } from '@/lib/services';
import { handle, ok } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Who the request is: the signed-in person, a token's owner, or `local` with accounts off. */
export async function GET(request: Request) {
  return handle('GET /api/users/me', request, async () => ok(me(await callerOf(request))));
}

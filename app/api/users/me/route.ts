import { getRuntime } from '@/lib/runtime';
import { handle, ok } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Who the request is: the signed-in person, a token's owner, or `local` with accounts off. */
export async function GET(request: Request) {
  return handle('GET /api/users/me', request, async () => {
    const caller = await callerOf(request);
    return ok({
      id: caller.id,
      kind: caller.kind,
      ...(caller.email ? { email: caller.email } : {}),
      name: caller.name ?? '',
      role: caller.role,
      accounts: getRuntime().accounts !== null,
      ...(caller.projectIds ? { projectIds: caller.projectIds } : {}),
    });
  });
}

import { fetchRemote } from '@/lib/services';
import { handle, ok } from '../../../../_lib/http';
import { callerOf } from '../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Fetches the project's base from its remote now (owners and editors); the base fast-forwarded when that loses nothing. */
export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('POST /api/projects/:id/remote/fetch', request, async () => {
    const caller = await callerOf(request);
    return ok(await fetchRemote(caller, (await params).id));
  });
}

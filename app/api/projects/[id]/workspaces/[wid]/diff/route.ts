import { workspaceDiff } from '@/lib/services';
import { handle, ok } from '../../../../../_lib/http';
import { callerOf } from '../../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; wid: string }> };

/** The workspace's unified diff against its base; `?path=` for one file; cut at 1 MB (`cut: true`). */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/workspaces/:wid/diff', request, async () => {
    const caller = await callerOf(request);
    const { id, wid } = await params;
    const path = new URL(request.url).searchParams.get('path');
    return ok(await workspaceDiff(caller, id, wid, path !== null ? { path } : {}));
  });
}

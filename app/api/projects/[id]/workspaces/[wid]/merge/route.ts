import { mergeWorkspace } from '@/lib/services';
import { handle, ok } from '../../../../../_lib/http';
import { callerOf } from '../../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; wid: string }> };

/**
 * Merges the workspace's branch into its base (owners and editors): a fast-forward, else a merge
 * commit by the caller. 409 E_MERGE_CONFLICT names the paths; 409 E_BASE_DIRTY when the project
 * folder has uncommitted changes. Either leaves everything as it was.
 */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/projects/:id/workspaces/:wid/merge', request, async () => {
    const caller = await callerOf(request);
    const { id, wid } = await params;
    return ok(await mergeWorkspace(caller, id, wid));
  });
}

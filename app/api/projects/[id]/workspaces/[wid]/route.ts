import { discardWorkspace, getWorkspace } from '@/lib/services';
import { handle, ok } from '../../../../_lib/http';
import { callerOf } from '../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; wid: string }> };

/** One workspace: head, ahead/behind, changed files, commits and its setup's outcome. */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/workspaces/:wid', request, async () => {
    const caller = await callerOf(request);
    const { id, wid } = await params;
    return ok(await getWorkspace(caller, id, wid));
  });
}

/** Discards the workspace: its checkout and its branch go (owners and editors). */
export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/projects/:id/workspaces/:wid', request, async () => {
    const caller = await callerOf(request);
    const { id, wid } = await params;
    return ok(await discardWorkspace(caller, id, wid));
  });
}

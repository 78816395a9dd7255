import { runView } from '@/lib/runs';
import { runWorkspaceView } from '@/lib/services';
import { handle, ok } from '../../_lib/http';
import { callerOf } from '../../_lib/caller';
import { runOr404 } from '../_lib';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/runs/:id', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const run = await runOr404(id, caller);
    return ok({ ...runView(run), ...(run.workspaceId ? { workspace: await runWorkspaceView(run.projectId, run.workspaceId) } : {}) });
  });
}

import { listOutputTree } from '@/lib/outputs';
import { handle, ok } from '../../../_lib/http';
import { conversationOr404, filesRootOf } from '../../../_lib/conversations';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('GET /api/conversations/:id/files', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const root = await filesRootOf(await conversationOr404(id, caller));
    return ok({ files: root ? await listOutputTree(root) : [] });
  });
}

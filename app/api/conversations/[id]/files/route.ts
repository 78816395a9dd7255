import { getRuntime } from '@/lib/runtime';
import { outputRootOf } from '@/lib/outputs';
import { listOutputTree } from '@/lib/outputs';
import { handle, ok } from '../../../_lib/http';
import { conversationOr404 } from '../../../_lib/conversations';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('GET /api/conversations/:id/files', request, async () => {
    const { id } = await params;
    await conversationOr404(id);
    return ok({ files: await listOutputTree(outputRootOf(getRuntime().config, id)) });
  });
}

import { listDocuments } from '@/lib/services';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id/files', request, async () => {
    const caller = await callerOf(request);
    return ok(await listDocuments(caller, (await params).id));
  });
}

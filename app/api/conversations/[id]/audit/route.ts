import { getRuntime } from '@/lib/runtime';
import { readAudit } from '@/lib/audit';
import { handle, ok } from '../../../_lib/http';
import { conversationOr404 } from '../../../_lib/conversations';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('GET /api/conversations/:id/audit', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    await conversationOr404(id, caller);
    return ok(await readAudit(getRuntime().auditDir, id));
  });
}

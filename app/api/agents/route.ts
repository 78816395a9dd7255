import { listAgents } from '@/lib/services';
import { handle, ok } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/agents', request, async () => {
    const caller = await callerOf(request);
    return ok(await listAgents(caller, new URL(request.url).searchParams.get('projectId')));
  });
}

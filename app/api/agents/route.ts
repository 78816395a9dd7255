import { getRuntime } from '@/lib/runtime';
import { withResolvedGreetings } from '@/lib/chat/greeting';
import { handle, ok } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/agents', request, async () => {
    const { config, catalog } = getRuntime();
    return ok(await withResolvedGreetings(config, catalog, await catalog.listAgents()));
  });
}

import { getRuntime } from '@/lib/runtime';
import { handle, ok } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/agents', request, async () => ok(await getRuntime().catalog.listAgents()));
}

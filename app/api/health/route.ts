import { health } from '@/lib/services';
import { handle, ok } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Open to all (a load balancer asks it): 503 while the store is unreachable or behind, so no requests come here. */
export async function GET(request: Request) {
  return handle('GET /api/health', request, async () => {
    const { ready, data } = await health();
    return ok(data, ready ? undefined : { status: 503 });
  });
}

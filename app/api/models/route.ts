import { listModels } from '@/lib/services';
import { handle, ok } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/models', request, async () => ok(listModels(await callerOf(request))));
}

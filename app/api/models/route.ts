import { getRuntime } from '@/lib/runtime';
import { modelsView } from '@/lib/chat/views';
import { handle, ok } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/models', request, async () => ok(modelsView(getRuntime().config.models)));
}

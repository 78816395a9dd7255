import { getRuntime } from '@/lib/runtime';
import { handle, ok } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/health', request, async () => {
    const { config } = getRuntime();
    return ok({ status: 'ok', llm: { configured: config.llm.configured, model: config.llm.model } });
  });
}

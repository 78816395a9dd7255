import { listOpenAIModels } from '@/lib/services';
import { callerOf } from '../../api/_lib/caller';
import { handleOpenAI } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** OpenAI's model list: one model per agent the caller may chat with (`<project>/<agent>`, `<bundle>/<agent>`). */
export async function GET(request: Request) {
  return handleOpenAI('GET /v1/models', request, async () => Response.json(await listOpenAIModels(await callerOf(request))));
}

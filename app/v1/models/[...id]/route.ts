import { openAIModel } from '@/lib/services';
import { callerOf } from '../../../api/_lib/caller';
import { handleOpenAI } from '../../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** One model of the list (its id holds a "/", so it spans path segments). */
export async function GET(request: Request, { params }: { params: Promise<{ id: string[] }> }) {
  return handleOpenAI('GET /v1/models/:model', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return Response.json(await openAIModel(caller, id.join('/')));
  });
}

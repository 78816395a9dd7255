import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { conversationMarkdown, exportFileName } from '@/lib/chat/export';
import { handle, parseWith } from '../../../_lib/http';
import { conversationOr404, detailFor } from '../../../_lib/conversations';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const Query = z.object({ format: z.enum(['md', 'json'], { error: 'format must be md or json' }).optional() });

/** The conversation as a file to keep: markdown to read, or the detail view as JSON. */
export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('GET /api/conversations/:id/export', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const { format = 'md' } = parseWith(Query, Object.fromEntries(new URL(request.url).searchParams));
    const conversation = await conversationOr404(id, caller);
    const history = await getRuntime().store.messages(id);
    const body = format === 'md' ? conversationMarkdown(conversation, history) : `${JSON.stringify(await detailFor(conversation, caller, history), null, 2)}\n`;
    const name = exportFileName(conversation, format);
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': format === 'md' ? 'text/markdown; charset=utf-8' : 'application/json; charset=utf-8',
        'content-disposition': `attachment; filename="${name}"; filename*=UTF-8''${encodeURIComponent(name)}`,
        'x-content-type-options': 'nosniff',
        'cache-control': 'no-store',
      },
    });
  });
}

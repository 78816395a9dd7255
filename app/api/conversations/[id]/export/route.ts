import { z } from 'zod';
import { exportConversation } from '@/lib/services';
import { handle, parseWith } from '../../../_lib/http';
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
    const file = await exportConversation(caller, id, format);
    return new Response(file.body, {
      status: 200,
      headers: {
        'content-type': file.contentType,
        'content-disposition': `attachment; filename="${file.name}"; filename*=UTF-8''${encodeURIComponent(file.name)}`,
        'x-content-type-options': 'nosniff',
        'cache-control': 'no-store',
      },
    });
  });
}

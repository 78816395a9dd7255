import { conversationFile } from '@/lib/services';
import { fileResponse, handle } from '../../../../_lib/http';
import { callerOf } from '../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, { params }: { params: Promise<{ id: string; path: string[] }> }) {
  return handle('GET /api/conversations/:id/files/*', request, async () => {
    const caller = await callerOf(request);
    const { id, path } = await params;
    // Segments arrive URL-decoded; they are joined and checked by the sandbox as one relative path.
    const file = await conversationFile(caller, id, path.join('/'));
    return fileResponse(file, new URL(request.url).searchParams.get('download') === '1');
  });
}

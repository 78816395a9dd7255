import { readOutputFile } from '@/lib/outputs';
import { AppError } from '@/lib/errors';
import { fileResponse, handle } from '../../../../_lib/http';
import { conversationOr404, filesRootOf } from '../../../../_lib/conversations';
import { callerOf } from '../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, { params }: { params: Promise<{ id: string; path: string[] }> }) {
  return handle('GET /api/conversations/:id/files/*', request, async () => {
    const caller = await callerOf(request);
    const { id, path } = await params;
    const root = await filesRootOf(await conversationOr404(id, caller));
    if (!root) throw new AppError('E_FILE_NOT_FOUND', `No output file "${path.join('/')}".`);
    // Segments arrive URL-decoded; they are joined and checked by the sandbox as one relative path.
    const file = await readOutputFile(root, path.join('/'));
    return fileResponse(file, new URL(request.url).searchParams.get('download') === '1');
  });
}

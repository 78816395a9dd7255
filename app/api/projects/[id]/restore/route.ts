import { z } from 'zod';
import { restoreDocument } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const RestoreBody = z.object({
  path: z.string().trim().min(1, 'path is required').max(1024),
  version: z.string().trim().regex(/^[0-9a-f]{4,40}$/i, 'version must be a version id'),
});

export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('POST /api/projects/:id/restore', request, async () => {
    const caller = await callerOf(request);
    return ok(await restoreDocument(caller, (await params).id, () => readJson(request, RestoreBody)));
  });
}

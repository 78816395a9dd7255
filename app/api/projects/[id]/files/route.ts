import { getRuntime } from '@/lib/runtime';
import { projectDocuments } from '@/lib/projects';
import { handle, ok } from '../../../_lib/http';
import { projectOr404 } from '../../../_lib/projects';
import { callerOf } from '../../../_lib/caller';
import { canOpenConversation } from '../../../_lib/conversations';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id/files', request, async () => {
    const caller = await callerOf(request);
    const project = await projectOr404((await params).id, caller);
    return ok({ files: await projectDocuments(getRuntime().config.dataDir, project, { canOpenConversation: canOpenConversation(caller) }).list() });
  });
}

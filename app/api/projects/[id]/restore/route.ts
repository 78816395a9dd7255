import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { projectDocuments } from '@/lib/projects';
import { handle, ok, readJson } from '../../../_lib/http';
import { projectOr404 } from '../../../_lib/projects';
import { callerOf } from '../../../_lib/caller';
import { authorOf } from '@/lib/access';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const RestoreBody = z.object({
  path: z.string().trim().min(1, 'path is required').max(1024),
  version: z.string().trim().regex(/^[0-9a-f]{4,40}$/i, 'version must be a version id'),
});

export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('POST /api/projects/:id/restore', request, async () => {
    const caller = await callerOf(request);
    const project = await projectOr404((await params).id, caller, 'write');
    const body = await readJson(request, RestoreBody);
    return ok(await projectDocuments(getRuntime().config.dataDir, project).restore(body.path, body.version, caller.kind === 'local' ? undefined : authorOf(caller)));
  });
}

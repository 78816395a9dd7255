import { z } from 'zod';
import { publishWorkspace } from '@/lib/services';
import { handle, ok, readJson } from '../../../../../_lib/http';
import { callerOf } from '../../../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string; wid: string }> };

const Body = z.object({ draft: z.boolean().optional() }).strict().optional();

/**
 * Publishes the workspace as a pull request (GitLab: merge request) into its base (owners and
 * editors): its own branch `bmad/<name>` pushed, one pull request opened, or the same one updated
 * when published before. 200 { branch, pullRequest }.
 */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/projects/:id/workspaces/:wid/publish', request, async () => {
    const caller = await callerOf(request);
    const { id, wid } = await params;
    return ok(await publishWorkspace(caller, id, wid, async () => (await readJson(request, Body)) ?? {}));
  });
}

import { getRuntime } from '@/lib/runtime';
import { withResolvedGreetings } from '@/lib/chat/greeting';
import { handle, ok } from '../_lib/http';
import { projectOr404 } from '../_lib/projects';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/agents', request, async () => {
    const caller = await callerOf(request);
    const rt = getRuntime();
    const projectId = new URL(request.url).searchParams.get('projectId');
    const agents = projectId !== null ? await rt.projects.agents(await projectOr404(projectId, caller)) : await rt.catalog.listAgents();
    return ok(await withResolvedGreetings(rt, agents));
  });
}

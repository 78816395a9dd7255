import { getRuntime } from '@/lib/runtime';
import { withResolvedGreetings } from '@/lib/chat/greeting';
import { handle, ok } from '../../_lib/http';
import { projectOr404 } from '../../_lib/projects';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request, ctx: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id', request, async () => {
    const { id } = await ctx.params;
    const project = await projectOr404(id);
    const rt = getRuntime();
    const agents = await withResolvedGreetings(rt, await rt.projects.agents(project));
    return ok({ ...(await rt.projects.view(project)), agents });
  });
}

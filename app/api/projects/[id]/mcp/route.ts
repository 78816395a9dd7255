import { projectMcpServers } from '@/lib/services';
import { handle, ok } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/**
 * The MCP servers this project's agents may use, each with its state and its tools (the function
 * names the model calls and the `server:tool` names skills use) as known so far; `?list=1` reaches
 * the servers not listed yet first (a stdio server is started), as a turn would.
 */
export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id/mcp', request, async () => {
    const caller = await callerOf(request);
    const list = new URL(request.url).searchParams.get('list') === '1';
    return ok(await projectMcpServers(caller, (await params).id, list));
  });
}

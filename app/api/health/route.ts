import { getRuntime } from '@/lib/runtime';
import { scriptCapabilities } from '@/lib/scripts';
import { handle, ok } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/health', request, async () => {
    const { config, mcp } = getRuntime();
    // Probed once per process (a missing piece is asked again after a while), so this stays cheap.
    const caps = await scriptCapabilities(config.scripts);
    return ok({
      status: 'ok',
      llm: { configured: config.llm.configured, model: config.llm.model },
      capabilities: { scripts: caps.scripts, sandbox: caps.sandbox },
      // Each MCP server's state as last seen (only when MCP_SERVERS_FILE names some); asking never connects one.
      ...(mcp.servers().length ? { mcp: { servers: mcp.status() } } : {}),
    });
  });
}

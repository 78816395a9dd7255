import { getRuntime } from '@/lib/runtime';
import { scriptCapabilities } from '@/lib/scripts';
import { handle, ok } from '../_lib/http';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

export async function GET(request: Request) {
  return handle('GET /api/health', request, async () => {
    const { config, store, mcp } = getRuntime();
    // Probed once per process (a missing piece is asked again after a while), so this stays cheap.
    const [caps, storeHealth] = await Promise.all([scriptCapabilities(config.scripts), store.health()]);
    // A load balancer sends no requests to an instance whose database is unreachable or behind.
    const ready = storeHealth.ok && storeHealth.migrations.current;
    return ok(
      {
        status: ready ? 'ok' : 'unavailable',
        llm: { configured: config.llm.configured, model: config.llm.model },
        capabilities: { scripts: caps.scripts, sandbox: caps.sandbox },
        store: storeHealth,
        // Each MCP server's state as last seen (only when MCP_SERVERS_FILE names some); asking never connects one.
        ...(mcp.servers().length ? { mcp: { servers: mcp.status() } } : {}),
      },
      ready ? undefined : { status: 503 },
    );
  });
}

import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { isAppError } from '@/lib/errors';
import { log } from '@/lib/core/log';
import type { Caller } from '@/lib/core/access';
import { documentResources, readDocumentText } from '@/lib/services';
import { MCP_SERVER_TOOLS, type McpServerTool } from './tools';

/** Documents listed as resources: at most this many across the caller's projects. */
const MAX_LISTED_RESOURCES = 1_000;

function errorResult(e: unknown, tool: string) {
  if (!isAppError(e)) log.error('mcp.tool_crash', { tool, error: (e as Error)?.name ?? 'unknown' });
  const text = isAppError(e) ? `${e.code}: ${e.message}` : 'E_INTERNAL: the tool failed unexpectedly.';
  return { isError: true, content: [{ type: 'text' as const, text }] };
}

function register(server: McpServer, t: McpServerTool, caller: Caller) {
  server.registerTool(t.name, { title: t.title, description: t.description, inputSchema: t.input }, async (args: Record<string, unknown>, extra) => {
    const started = performance.now();
    let outcome = 'ok';
    try {
      const data = await t.run(args as never, { caller, signal: extra.signal });
      return { content: [{ type: 'text' as const, text: JSON.stringify(data, null, 2) }] };
    } catch (e) {
      outcome = isAppError(e) ? e.code : 'E_INTERNAL';
      return errorResult(e, t.name);
    } finally {
      log.info('mcp.serve', { tool: t.name, caller: caller.id, outcome, durationMs: Math.round(performance.now() - started) });
    }
  });
}

/**
 * The app's MCP server for one request (stateless): the tools of `MCP_SERVER_TOOLS` and every
 * document as the resource `bmad://<projectId>/<path>`, all for this caller only.
 */
export function createAppMcpServer(caller: Caller): McpServer {
  const server = new McpServer({ name: 'bmad-orchestrator', version: '1.0.0' }, { capabilities: { tools: {}, resources: {} } });
  for (const t of MCP_SERVER_TOOLS) register(server, t, caller);
  server.registerResource(
    'document',
    new ResourceTemplate('bmad://{projectId}/{+path}', {
      list: async () => ({ resources: await documentResources(caller, MAX_LISTED_RESOURCES) }),
    }),
    { title: 'Project document', description: "A document of a project's output folder" },
    async (uri, vars) => {
      const projectId = decodeURIComponent(String(vars.projectId));
      const rel = String(vars.path).split('/').map(decodeURIComponent).join('/');
      const doc = await readDocumentText(caller, projectId, rel);
      return { contents: [{ uri: uri.href, mimeType: doc.contentType, text: doc.text ?? `(${doc.contentType}, ${doc.bytes} bytes: not text)` }] };
    },
  );
  return server;
}

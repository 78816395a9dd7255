import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { handle, MAX_BODY_BYTES } from '../_lib/http';
import { callerOf } from '../_lib/caller';
import { createAppMcpServer } from './server';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/**
 * The app as an MCP server (Streamable HTTP, stateless: each request is answered on its own, so
 * any instance can take it). The caller is resolved as for every REST route, before the MCP layer
 * sees the request, and each tool asks the same access policy.
 */
async function serve(request: Request): Promise<Response> {
  return handle(`${request.method} /api/mcp`, request, async () => {
    const caller = await callerOf(request);
    const server = createAppMcpServer(caller);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      // The REST API's bound: a larger body is a 413 before anything is parsed.
      maxRequestBodySize: MAX_BODY_BYTES,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request);
    } finally {
      // With JSON responses the answer is complete here; nothing of this request lives on.
      void server.close();
    }
  });
}

export const POST = serve;
export const GET = serve;
export const DELETE = serve;

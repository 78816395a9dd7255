import { createHash } from 'node:crypto';

/** What OpenAI accepts as a function name. */
export const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The function name a server's tool is offered under: `<server>__<tool>`, with every character
 * OpenAI refuses turned into `_`. A name that had to change or is too long gets a short hash of the
 * real one, so two tools never share a function name.
 */
export function functionName(server: string, tool: string): string {
  const plain = `${server}__${tool}`;
  if (FUNCTION_NAME.test(plain)) return plain;
  const hash = createHash('sha256').update(plain).digest('hex').slice(0, 6);
  const safe = `${server}__${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  return `${safe.slice(0, 64 - 7)}_${hash}`;
}

/** How BMAD's skills name an MCP tool: `server:tool`. */
export function bmadReference(server: string, tool: string): string {
  return `${server}:${tool}`;
}

const MAX_DESCRIPTION = 1_000;

/** What the model reads about a server's tool: its own description, and the name BMAD's skills use for it. */
export function describeTool(server: string, tool: string, description: string | undefined): string {
  const own = (description ?? '').replace(/\s+/g, ' ').trim();
  const cut = own.length > MAX_DESCRIPTION ? `${own.slice(0, MAX_DESCRIPTION)}…` : own;
  return `${cut ? `${cut} ` : ''}(MCP server "${server}"; skills name it ${bmadReference(server, tool)}.)`;
}

/**
 * A server's input schema as a function's parameters: always an object schema; `$schema` and
 * other keys models reject at the top are dropped. Anything that is no object schema becomes an
 * open object (the server still validates).
 */
export function parametersOf(inputSchema: unknown): Record<string, unknown> {
  if (!inputSchema || typeof inputSchema !== 'object' || Array.isArray(inputSchema)) return { type: 'object', properties: {} };
  const { $schema: _schema, $id: _id, ...rest } = inputSchema as Record<string, unknown>;
  void _schema;
  void _id;
  if (rest.type !== 'object') return { type: 'object', properties: {} };
  return { ...rest, properties: rest.properties && typeof rest.properties === 'object' ? rest.properties : {} };
}

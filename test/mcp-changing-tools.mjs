/**
 * An MCP server over stdio whose tool list changes while it runs, for the hub's tests.
 * `add_tool { name, notify }` adds a tool named `name`; with `notify` the server sends
 * notifications/tools/list_changed, without it the list changes silently (a server that never
 * says so). `break_list` makes every later tools/list fail. Every other tool answers with its own name.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const tool = (name) => ({ name, description: `the tool ${name}`, inputSchema: { type: 'object', properties: {} } });
const tools = [
  {
    name: 'add_tool',
    description: 'adds a tool',
    inputSchema: { type: 'object', properties: { name: { type: 'string' }, notify: { type: 'boolean' } }, required: ['name'] },
  },
  { name: 'break_list', description: 'makes tools/list fail from now on', inputSchema: { type: 'object', properties: {} } },
  tool('first'),
];
let broken = false;

const server = new Server({ name: 'changing-tools', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => {
  if (broken) throw new Error('the list is broken');
  return { tools };
});
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  if (name === 'add_tool') {
    tools.push(tool(String(args.name)));
    if (args.notify) await server.sendToolListChanged();
    return { content: [{ type: 'text', text: `added ${args.name}` }] };
  }
  if (name === 'break_list') broken = true;
  return { content: [{ type: 'text', text: name }] };
});
await server.connect(new StdioServerTransport());

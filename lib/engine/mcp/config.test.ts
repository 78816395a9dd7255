import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkConfiguration } from '../runtime/startup';
import { DEFAULT_MCP_TIMEOUT_MS, loadMcpSetup, McpServersFileError, parseMcpServers } from './config';
import { functionName, parametersOf, FUNCTION_NAME } from './names';

const FILE = '/etc/team/mcp.yaml';
const parse = (text: string, env: Record<string, string> = {}) => parseMcpServers(FILE, text, env);
const error = (text: string) => {
  try {
    parse(text);
  } catch (e) {
    expect(e).toBeInstanceOf(McpServersFileError);
    return (e as Error).message;
  }
  throw new Error('no error');
};

describe('MCP_SERVERS_FILE', () => {
  it("reads the issue's example: stdio and Streamable HTTP, variables looked up by name, defaults", () => {
    const servers = parse(
      [
        'servers:',
        '  corp:                                   # stdio',
        '    command: node',
        '    args: [tools/corp-mcp.js, stdio]',
        '    env: { JIRA_TOKEN: CORP_JIRA_TOKEN }',
        '    timeoutMs: 30000',
        '    projects: [shop]',
        '  tracker:',
        '    url: http://127.0.0.1:8123/mcp',
        '    headers: { Authorization: TRACKER_AUTH }',
      ].join('\n'),
      { CORP_JIRA_TOKEN: 'jira-secret', TRACKER_AUTH: 'Bearer t' },
    );
    expect(servers).toEqual([
      { name: 'corp', transport: 'stdio', command: 'node', cwd: '/etc/team', args: ['tools/corp-mcp.js', 'stdio'], env: { JIRA_TOKEN: 'jira-secret' }, headers: {}, timeoutMs: 30000, projects: ['shop'] },
      { name: 'tracker', transport: 'http', url: 'http://127.0.0.1:8123/mcp', args: [], env: {}, headers: { Authorization: 'Bearer t' }, timeoutMs: DEFAULT_MCP_TIMEOUT_MS },
    ]);
  });

  it('a variable that is not set leaves that server unusable, naming the variable and never a value', () => {
    const [corp] = parse('servers:\n  corp:\n    command: node\n    env: { A: SET_ONE, B: MISSING_ONE }\n', { SET_ONE: 'x' });
    expect(corp!.problem).toBe('MISSING_ONE is not set');
  });

  it.each([
    ['servers:\n  corp:\n    command: node\n    timeout: 5\n', '(line 4, servers.corp.timeout): unknown field "timeout" (known: command, args, env, url, headers, timeoutMs, projects)'],
    ['servers:\n  corp:\n    args: [x]\n', '(line 3, servers.corp.command): is required (or url, for a Streamable HTTP server)'],
    ['servers:\n  corp:\n    command: node\n    url: http://x/mcp\n', '(line 4, servers.corp.url): cannot be combined with command'],
    ['servers:\n  web:\n    url: ftp://x\n', '(line 3, servers.web.url): must be an http(s) URL'],
    ['servers:\n  web:\n    url: http://x/mcp\n    env: { A: B }\n', '(line 4, servers.web.env): is for stdio servers (command)'],
    ['servers:\n  corp:\n    command: node\n    env: { TOKEN: "not a name" }\n', "(line 4, servers.corp.env.TOKEN): must name a variable of the app"],
    ['servers:\n  corp:\n    command: node\n    timeoutMs: soon\n', '(line 4, servers.corp.timeoutMs): must be a number'],
    ['servers:\n  a__b:\n    command: node\n', '(line 2, servers.a__b): must be letters, digits, "_" or "-" (at most 32, no "__")'],
    ['servers:\n  corp: [node]\n', '(line 2, servers.corp): must be a mapping with command (stdio) or url (Streamable HTTP)'],
    ['servers:\n  corp:\n    command: node\n  corp:\n    command: x\n', '(line 4): not valid YAML'],
    ['server: {}\n', '(line 1, server): unknown field "server" (known: servers)'],
  ])('%j → %s', (text, expected) => {
    expect(error(text)).toContain(`MCP_SERVERS_FILE ${FILE} ${expected}`);
  });

  it('absent: no servers; a missing file and a bad one stop start-up with the file, the line and the field', async () => {
    expect(loadMcpSetup({}, '/')).toEqual({ file: null, servers: [] });
    const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-config-'));
    try {
      expect(checkConfiguration({ MCP_SERVERS_FILE: 'nope.yaml' }, tmp)).toEqual({ error: `MCP_SERVERS_FILE ${path.join(tmp, 'nope.yaml')}: the file does not exist` });
      await fs.writeFile(path.join(tmp, 'mcp.yaml'), 'servers:\n  corp:\n    command: node\n    projects: shop\n');
      expect(checkConfiguration({ MCP_SERVERS_FILE: 'mcp.yaml' }, tmp)).toEqual({ error: `MCP_SERVERS_FILE ${path.join(tmp, 'mcp.yaml')} (line 4, servers.corp.projects): must be a list of project ids` });
      await fs.writeFile(path.join(tmp, 'mcp.yaml'), 'servers:\n  corp:\n    command: node\n');
      expect(checkConfiguration({ MCP_SERVERS_FILE: 'mcp.yaml' }, tmp)).toEqual({ config: expect.anything() });
    } finally {
      await fs.rm(tmp, { recursive: true, force: true });
    }
  });
});

describe('function names and schemas', () => {
  it('<server>__<tool>, with what OpenAI refuses replaced and a short hash so names stay apart', () => {
    expect(functionName('corp', 'confluence_upload')).toBe('corp__confluence_upload');
    expect(functionName('everything', 'get-env')).toBe('everything__get-env');
    const dotted = functionName('corp', 'kb.search');
    expect(dotted).toMatch(/^corp__kb_search_[0-9a-f]{6}$/);
    expect(functionName('corp', 'kb:search')).not.toBe(dotted);
    const long = functionName('corp', 'x'.repeat(100));
    expect(long).toMatch(FUNCTION_NAME);
    expect(long).not.toBe(functionName('corp', 'x'.repeat(101)));
    expect(functionName('corp', 'ünïcode tool')).toMatch(FUNCTION_NAME);
  });

  it('parameters are always an object schema', () => {
    expect(parametersOf({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })).toEqual({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] });
    expect(parametersOf({ type: 'object' })).toEqual({ type: 'object', properties: {} });
    expect(parametersOf({ type: 'string' })).toEqual({ type: 'object', properties: {} });
    expect(parametersOf(null)).toEqual({ type: 'object', properties: {} });
  });
});

import path from 'node:path';
import type { DynamicTool } from '../tools';
import type { McpServerConfig } from './config';
import { createMcpHub, type McpHub } from './hub';

/** A real stdio MCP server whose tools change while it runs (test/mcp-changing-tools.mjs). */
const FIXTURE = path.join(__dirname, '../../../test/mcp-changing-tools.mjs');
const server: McpServerConfig = { name: 'changing', transport: 'stdio', command: process.execPath, args: [FIXTURE], env: {}, headers: {}, timeoutMs: 10_000 };

const names = (tools: DynamicTool[]) => tools.map((t) => t.name).sort();
const signal = () => new AbortController().signal;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(20);
  }
}

async function call(hub: McpHub, tool: string, args: Record<string, unknown> = {}) {
  const t = (await hub.toolsFor(undefined)).find((x) => x.name === `changing__${tool}`);
  if (!t) throw new Error(`no tool ${tool}`);
  return t.run(args, signal());
}

let hub: McpHub;
afterEach(async () => {
  await hub?.close();
});

describe('an MCP server whose tools change', () => {
  it('adds a tool and sends tools/list_changed: the hub offers it without connecting again', async () => {
    hub = createMcpHub({ file: null, servers: [server] });
    expect(names(await hub.toolsFor(undefined))).toEqual(['changing__add_tool', 'changing__break_list', 'changing__first']);
    expect(await call(hub, 'add_tool', { name: 'second', notify: true })).toMatchObject({ ok: true });
    await until(() => hub.status()[0]!.tools?.includes('second') ?? false);
    const after = await hub.toolsFor(undefined);
    expect(names(after)).toContain('changing__second');
    expect(await after.find((t) => t.name === 'changing__second')!.run({}, signal())).toMatchObject({ ok: true, content: 'second' });
    expect(hub.status()[0]).toMatchObject({ state: 'ready', restarts: 0 });
  });

  it('changes its tools silently: listed again on use once the list is older than the bound, the turn not waiting for it', async () => {
    hub = createMcpHub({ file: null, servers: [server] }, { relistAfterMs: 1_000 });
    await hub.toolsFor(undefined);
    expect(await call(hub, 'add_tool', { name: 'third' })).toMatchObject({ ok: true });
    // Within the bound: the list as it was, and nothing asked of the server.
    expect(names(await hub.toolsFor(undefined))).not.toContain('changing__third');
    await sleep(200);
    expect(hub.status()[0]!.tools).not.toContain('third');
    await sleep(1_000);
    // Past it: this turn gets the list it had (it does not wait), the server is asked in the background.
    expect(names(await hub.toolsFor(undefined))).not.toContain('changing__third');
    await until(() => hub.status()[0]!.tools?.includes('third') ?? false);
    expect(names(await hub.toolsFor(undefined))).toContain('changing__third');
    expect(hub.status()[0]!.restarts).toBe(0);
  });

  it('a list that cannot be read again: the tools listed before stay offered', async () => {
    hub = createMcpHub({ file: null, servers: [server] }, { relistAfterMs: 100 });
    const before = names(await hub.toolsFor(undefined));
    expect(await call(hub, 'break_list')).toMatchObject({ ok: true });
    expect(await call(hub, 'add_tool', { name: 'fourth', notify: true })).toMatchObject({ ok: true });
    await sleep(200);
    expect(names(await hub.toolsFor(undefined))).toEqual(before);
    await sleep(300);
    expect(names(await hub.toolsFor(undefined))).toEqual(before);
    expect(hub.status()[0]).toMatchObject({ state: 'ready', restarts: 0 });
    expect(await call(hub, 'first')).toMatchObject({ ok: true, content: 'first' });
  });
});

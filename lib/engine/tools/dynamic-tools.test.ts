import { runToolCall, toolDefinitions } from '.';
import { readAudit } from '../../store/audit';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';
import type { DynamicTool, ToolContext } from './types';

/** Tools known at run time (an MCP server's) run through the same path as the static ones. */
let sb: Sandbox;
let ctx: ToolContext;
beforeEach(async () => {
  sb = await makeSandbox();
  ctx = sb.ctx;
});
afterEach(async () => {
  await sb.cleanup();
});

function dynamic(name: string, run: DynamicTool['run'], timeoutMs = 5_000): DynamicTool {
  return { name, description: `The ${name} tool of a test server.`, parameters: { type: 'object', properties: { q: { type: 'string' } } }, timeoutMs, origin: { server: 'test', serverTool: name.split('__')[1]! }, run };
}
const withTools = (...tools: DynamicTool[]): ToolContext => ({ ...ctx, dynamicTools: new Map(tools.map((t) => [t.name, t])) });

it('definitions: the static tools, then the dynamic ones; one named like a static tool is left out', () => {
  const echo = dynamic('test__echo', async () => ({ ok: true }));
  const clash = { ...dynamic('test__x', async () => ({ ok: true })), name: 'read_file' };
  const names = toolDefinitions([echo, clash]).map((d) => d.function.name);
  expect(names.slice(-2)).toEqual(['run_script', 'test__echo']);
  expect(names.filter((n) => n === 'read_file')).toHaveLength(1);
  expect(toolDefinitions([echo]).at(-1)!.function.parameters).toEqual(echo.parameters);
});

it('runs with its arguments; audit and log lines name the server and the tool, never argument values', async () => {
  const seen: unknown[] = [];
  const c = withTools(dynamic('test__echo', async (args) => (seen.push(args), { ok: true, content: `got ${String(args.q)}` })));
  const { result } = await runToolCall({ id: 'c1', name: 'test__echo', arguments: '{"q":"the secret"}' }, c);
  expect(result).toEqual({ ok: true, content: 'got the secret' });
  expect(seen).toEqual([{ q: 'the secret' }]);
  const [line] = await readAudit(c.auditDir!, c.conversationId);
  expect(line).toMatchObject({ toolName: 'test__echo', input: { server: 'test', serverTool: 'echo', argumentNames: 'q' } });
  expect(JSON.stringify(line!.input)).not.toContain('the secret');
});

it('its time limit ends the call with E_TIMEOUT naming it, and aborts the signal the tool got', async () => {
  let aborted = false;
  const slow = dynamic('test__slow', (_args, signal) => new Promise((resolve) => signal.addEventListener('abort', () => ((aborted = true), resolve({ ok: true, late: true })))), 200);
  const started = performance.now();
  const { result } = await runToolCall({ id: 'c2', name: 'test__slow', arguments: '{}' }, withTools(slow));
  expect(performance.now() - started).toBeLessThan(2_000);
  expect(result).toMatchObject({ ok: false, error: { code: 'E_TIMEOUT', details: { timeoutMs: 200 } } });
  expect((result as { error: { message: string } }).error.message).toContain('200 ms');
  expect(aborted).toBe(true);
});

it("a stop aborts it at once (E_ABORTED), whatever the tool does", async () => {
  const stop = new AbortController();
  const hang = dynamic('test__hang', () => new Promise(() => undefined));
  const running = runToolCall({ id: 'c3', name: 'test__hang', arguments: '{}' }, { ...withTools(hang), signal: stop.signal });
  setTimeout(() => stop.abort(), 50);
  expect((await running).result).toMatchObject({ ok: false, error: { code: 'E_ABORTED' } });
});

it('a large result is cut to the read limit and says so', async () => {
  const big = dynamic('test__big', async () => ({ ok: true, content: 'é'.repeat(200_000), structuredContent: { rows: [1, 2, 3] } }));
  const c = withTools(big);
  const { result } = await runToolCall({ id: 'c4', name: 'test__big', arguments: '{}' }, c);
  expect(result).toMatchObject({ ok: true, truncated: true });
  expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(c.limits.maxReadBytes);
  expect(result).not.toHaveProperty('structuredContent');
  expect((result as unknown as { content: string }).content).toMatch(/^é+$/);
});

it('a call that throws is E_INTERNAL; bad JSON is E_INVALID_ARGS; an unknown name lists the dynamic tools too', async () => {
  const c = withTools(dynamic('test__boom', async () => { throw new Error('/secret/path exploded'); }));
  const boom = (await runToolCall({ id: 'c5', name: 'test__boom', arguments: '{}' }, c)).result;
  expect(boom).toMatchObject({ ok: false, error: { code: 'E_INTERNAL' } });
  expect(JSON.stringify(boom)).not.toContain('/secret/path');
  expect((await runToolCall({ id: 'c6', name: 'test__boom', arguments: '{"q": ' }, c)).result).toMatchObject({ ok: false, error: { code: 'E_INVALID_ARGS' } });
  const unknown = (await runToolCall({ id: 'c7', name: 'test__nope', arguments: '{}' }, c)).result as { error: { message: string } };
  expect(unknown.error.message).toContain('test__boom');
});

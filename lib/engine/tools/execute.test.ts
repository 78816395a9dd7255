import { promises as fs } from 'node:fs';
import path from 'node:path';
import { executeTool, toolDefinitions, TOOL_NAMES } from '.';
import { readAudit } from '../../store/audit';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';
import type { ToolContext } from './types';

let sb: Sandbox;
let ctx: ToolContext;
beforeEach(async () => {
  sb = await makeSandbox();
  ctx = sb.ctx;
});
afterEach(async () => {
  await sb.cleanup();
});
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe('toolDefinitions', () => {
  it('describes every tool as an OpenAI function with a valid name and object schema', () => {
    const defs = toolDefinitions();
    expect(defs.map((d) => d.function.name)).toEqual([
      'read_file', 'list_files', 'search_files', 'save_output', 'edit_file', 'apply_patch', 'execute_workflow', 'spawn_subagent', 'run_script',
    ]);
    for (const d of defs) {
      expect(d.type).toBe('function');
      expect(d.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(d.function.description.length).toBeGreaterThan(20);
      expect(d.function.parameters.type).toBe('object');
      expect(d.function.parameters).not.toHaveProperty('$schema');
    }
    const read = defs[0].function.parameters as Any;
    expect(read.required).toEqual(['file_path']);
    expect(Object.keys(read.properties)).toEqual(['file_path', 'start_line', 'end_line']);
    const save = defs[3].function.parameters as Any;
    expect(save.required).toEqual(['file_path', 'content']);
    expect(Object.keys(save.properties)).toEqual(['file_path', 'content', 'if_match_sha256']);
  });
});

describe('executeTool', () => {
  it('unknown tools list the available ones', async () => {
    const r: Any = await executeTool({ id: '1', name: 'fs.read', arguments: '{}' }, ctx);
    expect(r.error.code).toBe('E_UNKNOWN_TOOL');
    for (const name of TOOL_NAMES) expect(r.error.message).toContain(name);
  });

  it('bad JSON is E_INVALID_ARGS with a helpful message; empty arguments mean {}', async () => {
    const bad: Any = await executeTool({ id: '1', name: 'read_file', arguments: '{"file_path": ' }, ctx);
    expect(bad.error.code).toBe('E_INVALID_ARGS');
    expect(bad.error.message).toMatch(/not valid JSON/);
    const empty: Any = await executeTool({ id: '2', name: 'list_files', arguments: '' }, ctx);
    expect(empty.ok).toBe(true);
    const missing: Any = await executeTool({ id: '3', name: 'read_file', arguments: '' }, ctx);
    expect(missing.error.code).toBe('E_INVALID_ARGS');
    expect(missing.error.message).toContain('file_path');
    const arr: Any = await executeTool({ id: '4', name: 'read_file', arguments: '[1]' }, ctx);
    expect(arr.error.code).toBe('E_INVALID_ARGS');
  });

  it('names the invalid field', async () => {
    const r: Any = await executeTool({ id: '1', name: 'read_file', arguments: JSON.stringify({ file_path: 'a', start_line: 0 }) }, ctx);
    expect(r.error.code).toBe('E_INVALID_ARGS');
    expect(r.error.message).toContain('start_line');
  });

  it('tolerates double-encoded JSON arguments', async () => {
    const r: Any = await executeTool({ id: '1', name: 'read_file', arguments: JSON.stringify(JSON.stringify({ file_path: '{bundle-root}/bundle.yaml' })) }, ctx);
    expect(r.ok).toBe(true);
  });

  it('returns E_ABORTED when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    const r: Any = await executeTool({ id: '1', name: 'read_file', arguments: JSON.stringify({ file_path: '{bundle-root}/bundle.yaml' }) }, { ...ctx, signal: ac.signal });
    expect(r.error.code).toBe('E_ABORTED');
  });

  it('returns E_ABORTED quickly when aborted mid-call', async () => {
    await fs.writeFile(path.join(ctx.outputRoot, 'slow.txt'), `${'a'.repeat(3000)}\n`.repeat(20));
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 50);
    const r: Any = await executeTool(
      { id: '1', name: 'search_files', arguments: JSON.stringify({ path: '{output_folder}', pattern: '/a*a*a*a*a*a*a*b/' }) },
      { ...ctx, signal: ac.signal },
    );
    expect(r.error.code).toBe('E_ABORTED');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('audits every call, including rejected and malformed ones, one line each', async () => {
    await executeTool({ id: 'a', name: 'read_file', arguments: JSON.stringify({ file_path: '{bundle-root}/bundle.yaml' }) }, ctx);
    await executeTool({ id: 'b', name: 'read_file', arguments: JSON.stringify({ file_path: '{output_folder}/../../../.env' }) }, ctx);
    await executeTool({ id: 'c', name: 'nope', arguments: '{' }, ctx);
    await executeTool({ id: 'd', name: 'save_output', arguments: JSON.stringify({ file_path: 'big.md', content: 'z'.repeat(5000) }) }, ctx);
    const entries = await readAudit(ctx.auditDir as string, ctx.conversationId);
    expect(entries.map((e) => e.toolCallId)).toEqual(['a', 'b', 'c', 'd']);
    const [a, b, c, d] = entries as Any[];
    expect(a).toMatchObject({ kind: 'tool.exec', conversationId: 'conv-1', toolName: 'read_file', agentId: 'analyst', output: { ok: true, path: '{bundle-root}/bundle.yaml', bytes: 28 } });
    expect(a.output.content).toMatchObject({ length: 28, sha256: expect.any(String) });
    expect(typeof a.durationMs).toBe('number');
    expect(b).toMatchObject({ mount: '{output_folder}', reason: '".." segments are not allowed', output: { ok: false, code: 'E_SANDBOX_VIOLATION' } });
    expect(c.output.code).toBe('E_UNKNOWN_TOOL');
    expect(d.input.content).toMatchObject({ length: 5000, sha256: expect.any(String) });
    expect(d.input.content.preview.length).toBeLessThan(100);
    const raw = await fs.readFile(path.join(ctx.auditDir as string, 'conv-1.jsonl'), 'utf8');
    expect(raw).not.toContain('z'.repeat(200));
    expect(raw).not.toContain(sb.base);
  });

  it('parallel calls append one intact line each', async () => {
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        executeTool({ id: `p${i}`, name: 'save_output', arguments: JSON.stringify({ file_path: `f${i}.md`, content: `x${i}`.repeat(300) }) }, ctx),
      ),
    );
    const raw = await fs.readFile(path.join(ctx.auditDir as string, 'conv-1.jsonl'), 'utf8');
    const lines = raw.trim().split('\n');
    expect(lines).toHaveLength(40);
    expect(new Set(lines.map((l) => JSON.parse(l).toolCallId)).size).toBe(40);
  });
});

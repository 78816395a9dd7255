import { promises as fs } from 'node:fs';
import path from 'node:path';
import { executeTool } from '.';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';
import type { ToolContext } from './types';

// The diff edit_file shows back is Myers' algorithm, quadratic when most lines change: it gives
// up after a moment instead of holding the server (the edit itself is written either way).
let sb: Sandbox;
let ctx: ToolContext;
beforeEach(async () => {
  sb = await makeSandbox();
  ctx = { ...sb.ctx, auditDir: undefined };
});
afterEach(async () => {
  await sb.cleanup();
});

it('edits a file where every line changes without holding the server, and says why no diff is shown', async () => {
  const lines = Array.from({ length: 14_000 }, (_, i) => `x${i}`).join('\n');
  await fs.writeFile(path.join(ctx.outputRoot, 'many.txt'), lines);
  const started = performance.now();
  const r = (await executeTool({ id: 'c1', name: 'edit_file', arguments: JSON.stringify({ file_path: '{output_folder}/many.txt', old_text: 'x', new_text: 'y', replace_all: true }) }, ctx)) as { ok: boolean; diff: string; replacements: number };
  expect(performance.now() - started).toBeLessThan(3_000);
  expect(r).toMatchObject({ ok: true, replacements: 14_000 });
  expect(r.diff).toMatch(/^\[no diff: the change touches too many lines to show; read_file \{output_folder\}\/many\.txt/);
  expect(await fs.readFile(path.join(ctx.outputRoot, 'many.txt'), 'utf8')).toBe(lines.replace(/x/g, 'y'));
});

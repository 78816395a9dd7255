import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { executeTool } from '.';
import { splitFrontmatter } from './apply-patch';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';
import type { ToolContext } from './types';
import type { ToolResult } from '../../core/results';

let sb: Sandbox;
let ctx: ToolContext;
beforeEach(async () => {
  sb = await makeSandbox();
  ctx = { ...sb.ctx, auditDir: undefined };
});
afterEach(async () => {
  await sb.cleanup();
});

let n = 0;
function call(name: string, args: unknown, c: ToolContext = ctx): Promise<ToolResult> {
  return executeTool({ id: `call_${++n}`, name, arguments: JSON.stringify(args) }, c);
}
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const out = (rel: string) => path.join(ctx.outputRoot, rel);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe('save_output', () => {
  it('creates folders and files, returning virtual path, bytes and sha256', async () => {
    const r: Any = await call('save_output', { file_path: '{output_folder}/docs/plan.md', content: '# Plan ✓\n' });
    expect(r).toEqual({ ok: true, path: '{output_folder}/docs/plan.md', bytes_written: 11, sha256: sha('# Plan ✓\n'), created: true });
    expect(await fs.readFile(out('docs/plan.md'), 'utf8')).toBe('# Plan ✓\n');
  });

  it('relative paths land in the output folder; overwrites are atomic and leave no temp files', async () => {
    await call('save_output', { file_path: 'a.md', content: 'one' });
    const r: Any = await call('save_output', { file_path: 'a.md', content: 'two' });
    expect(r.created).toBe(false);
    expect(await fs.readFile(out('a.md'), 'utf8')).toBe('two');
    expect(await fs.readdir(ctx.outputRoot)).toEqual(['a.md']);
  });

  it('refuses bundle and core with E_READ_ONLY', async () => {
    expect(((await call('save_output', { file_path: '{bundle-root}/x.md', content: 'x' })) as Any).error.code).toBe('E_READ_ONLY');
    expect(((await call('save_output', { file_path: '{core-root}/x.md', content: 'x' })) as Any).error.code).toBe('E_READ_ONLY');
  });

  it('enforces maxWriteBytes with E_WRITE_LIMIT', async () => {
    const c = { ...ctx, limits: { ...ctx.limits, maxWriteBytes: 10 } };
    expect(((await call('save_output', { file_path: 'a.md', content: 'x'.repeat(11) }, c)) as Any).error.code).toBe('E_WRITE_LIMIT');
    expect(((await call('save_output', { file_path: 'a.md', content: 'é'.repeat(6) }, c)) as Any).error.code).toBe('E_WRITE_LIMIT');
    expect(((await call('save_output', { file_path: 'a.md', content: 'x'.repeat(10) }, c)) as Any).ok).toBe(true);
  });

  it('honours if_match_sha256', async () => {
    const first: Any = await call('save_output', { file_path: 'a.md', content: 'v1' });
    const stale: Any = await call('save_output', { file_path: 'a.md', content: 'v2', if_match_sha256: sha('other') });
    expect(stale.error.code).toBe('E_PRECONDITION_FAILED');
    const good: Any = await call('save_output', { file_path: 'a.md', content: 'v2', if_match_sha256: first.sha256 });
    expect(good.ok).toBe(true);
    const missing: Any = await call('save_output', { file_path: 'new.md', content: 'x', if_match_sha256: first.sha256 });
    expect(missing.error.code).toBe('E_PRECONDITION_FAILED');
  });

  it('a folder target is EISDIR; parallel saves to one file never corrupt it', async () => {
    await fs.mkdir(out('dir'));
    expect(((await call('save_output', { file_path: 'dir', content: 'x' })) as Any).error.code).toBe('EISDIR');
    const contents = Array.from({ length: 20 }, (_, i) => `version ${i} `.repeat(500));
    const results = await Promise.all(contents.map((content) => call('save_output', { file_path: 'race.md', content })));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(contents).toContain(await fs.readFile(out('race.md'), 'utf8'));
    expect((await fs.readdir(ctx.outputRoot)).filter((f) => f.startsWith('.'))).toEqual([]);
  });
});

describe('edit_file', () => {
  it('replaces exactly one match and returns a unified diff', async () => {
    await fs.writeFile(out('doc.md'), 'alpha\nbeta\ngamma\n');
    const r: Any = await call('edit_file', { file_path: '{output_folder}/doc.md', old_text: 'beta', new_text: 'BETA' });
    expect(r.ok).toBe(true);
    expect(r.path).toBe('{output_folder}/doc.md');
    expect(r.diff).toContain('-beta');
    expect(r.diff).toContain('+BETA');
    expect(r.sha256).toBe(sha('alpha\nBETA\ngamma\n'));
    expect(await fs.readFile(out('doc.md'), 'utf8')).toBe('alpha\nBETA\ngamma\n');
  });

  it('E_NO_MATCH and E_AMBIGUOUS_MATCH with the count; replace_all replaces every one', async () => {
    await fs.writeFile(out('doc.md'), 'x y x y x');
    expect(((await call('edit_file', { file_path: 'doc.md', old_text: 'zzz', new_text: '' })) as Any).error.code).toBe('E_NO_MATCH');
    const amb: Any = await call('edit_file', { file_path: 'doc.md', old_text: 'x', new_text: 'z' });
    expect(amb.error.code).toBe('E_AMBIGUOUS_MATCH');
    expect(amb.error.details.count).toBe(3);
    expect(amb.error.message).toContain('3');
    const all: Any = await call('edit_file', { file_path: 'doc.md', old_text: 'x', new_text: 'z', replace_all: true });
    expect(all.ok).toBe(true);
    expect(await fs.readFile(out('doc.md'), 'utf8')).toBe('z y z y z');
  });

  it('keeps $ patterns literal', async () => {
    await fs.writeFile(out('doc.md'), 'price: X');
    await call('edit_file', { file_path: 'doc.md', old_text: 'X', new_text: "$& $1 $$ $' $`" });
    expect(await fs.readFile(out('doc.md'), 'utf8')).toBe("price: $& $1 $$ $' $`");
  });

  it('keeps CRLF files CRLF when the model sends LF', async () => {
    await fs.writeFile(out('win.md'), 'one\r\ntwo\r\nthree\r\n');
    const r: Any = await call('edit_file', { file_path: 'win.md', old_text: 'one\ntwo', new_text: 'uno\ndos' });
    expect(r.ok).toBe(true);
    expect(await fs.readFile(out('win.md'), 'utf8')).toBe('uno\r\ndos\r\nthree\r\n');
  });

  it('is confined to the output folder', async () => {
    expect(((await call('edit_file', { file_path: '{bundle-root}/bundle.yaml', old_text: 'demo', new_text: 'x' })) as Any).error.code).toBe('E_READ_ONLY');
    expect(((await call('edit_file', { file_path: 'missing.md', old_text: 'a', new_text: 'b' })) as Any).error.code).toBe('ENOENT');
  });
});

describe('apply_patch', () => {
  const doc = '---\ntitle: Plan\nstepsCompleted:\n  - intro\ndate: 2025-01-01\n---\n# Body\n\nKeep  this   exactly.\r\n';

  it('updates frontmatter with every op and keeps the body byte-for-byte', async () => {
    await fs.writeFile(out('workflow.md'), doc);
    const r: Any = await call('apply_patch', {
      file_path: '{output_folder}/workflow.md',
      patch: {
        operation: 'updateFrontmatter',
        update: {
          'stepsCompleted.append': ['intro', 'goals'],
          'variables.set': { project_name: 'Apollo' },
          'decisionLog.append': { step: 'goals', decision: 'ship' },
          'artifacts.append': '{output_folder}/prd.md',
          'currentNodeId.set': 'goals',
          'updatedAt.set': '2025-02-03T04:05:06Z',
        },
      },
    });
    expect(r.ok).toBe(true);
    expect(r.sha256Before).toBe(sha(doc));
    const after = await fs.readFile(out('workflow.md'), 'utf8');
    expect(r.sha256After).toBe(sha(after));
    expect(after.endsWith('---\n# Body\n\nKeep  this   exactly.\r\n')).toBe(true);
    const split = splitFrontmatter(after);
    expect(split && split !== 'unclosed' && split.yamlText).toContain('date: 2025-01-01');
    expect(after).toContain('stepsCompleted:\n  - intro\n  - goals\n');
    expect(after).toContain('project_name: Apollo');
    expect(after).toContain('currentNodeId: goals');
    expect(after).toContain('decision: ship');
  });

  it('accepts the nested op form', async () => {
    await fs.writeFile(out('w.md'), doc);
    const r: Any = await call('apply_patch', { file_path: 'w.md', patch: { operation: 'updateFrontmatter', update: { stepsCompleted: { append: 'x' } } } });
    expect(r.ok).toBe(true);
  });

  it('bad YAML is E_INVALID_FRONTMATTER; stale sha is E_PRECONDITION_FAILED; unknown ops are E_INVALID_ARGS', async () => {
    await fs.writeFile(out('bad.md'), '---\ntitle: [unclosed\n---\nbody');
    const bad: Any = await call('apply_patch', { file_path: 'bad.md', patch: { operation: 'updateFrontmatter', update: { 'currentNodeId.set': 'a' } } });
    expect(bad.error.code).toBe('E_INVALID_FRONTMATTER');
    await fs.writeFile(out('w.md'), doc);
    const stale: Any = await call('apply_patch', { file_path: 'w.md', patch: { operation: 'updateFrontmatter', update: { 'currentNodeId.set': 'a' }, ifMatchSha256: sha('x') } });
    expect(stale.error.code).toBe('E_PRECONDITION_FAILED');
    const unknown: Any = await call('apply_patch', { file_path: 'w.md', patch: { operation: 'updateFrontmatter', update: { 'title.set': 'x' } } });
    expect(unknown.error.code).toBe('E_INVALID_ARGS');
    const op: Any = await call('apply_patch', { file_path: 'w.md', patch: { operation: 'replace', update: {} } });
    expect(op.error.code).toBe('E_INVALID_ARGS');
    expect(op.error.message).toContain('patch.operation');
    expect(await fs.readFile(out('w.md'), 'utf8')).toBe(doc);
  });

  it('adds frontmatter to a file that has none, keeping the text', async () => {
    await fs.writeFile(out('plain.md'), '# Just text\n');
    const r: Any = await call('apply_patch', { file_path: 'plain.md', patch: { operation: 'updateFrontmatter', update: { 'currentNodeId.set': 'n1' } } });
    expect(r.ok).toBe(true);
    expect(await fs.readFile(out('plain.md'), 'utf8')).toBe('---\ncurrentNodeId: n1\n---\n# Just text\n');
  });

  it('refuses the bundle', async () => {
    const r: Any = await call('apply_patch', { file_path: '{bundle-root}/bundle.yaml', patch: { operation: 'updateFrontmatter', update: { 'currentNodeId.set': 'a' } } });
    expect(r.error.code).toBe('E_READ_ONLY');
  });
});

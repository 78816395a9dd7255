import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { executeTool } from '.';
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
  return executeTool({ id: `call_${++n}`, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }, c);
}
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe('read_file', () => {
  it('reads a bundle file with size, lines and sha256', async () => {
    const r: Any = await call('read_file', { file_path: '{bundle-root}/bundle.yaml' });
    const text = 'name: demo\ntype: standalone\n';
    expect(r).toEqual({ ok: true, path: '{bundle-root}/bundle.yaml', content: text, bytes: text.length, lines: 2, sha256: sha(text), truncated: false });
  });

  it('returns a 1-based inclusive window of lines', async () => {
    const text = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n');
    await fs.writeFile(path.join(ctx.outputRoot, 'ten.txt'), text);
    const r: Any = await call('read_file', { file_path: '{output_folder}/ten.txt', start_line: 3, end_line: 5 });
    expect(r.content).toBe('line 3\nline 4\nline 5\n');
    expect(r.lines).toBe(10);
    expect(r.sha256).toBe(sha(text));
    expect(r.start_line).toBe(3);
    expect(r.end_line).toBe(5);
    const tail: Any = await call('read_file', { file_path: 'ten.txt', start_line: 9 });
    expect(tail.content).toBe('line 9\nline 10');
  });

  it('end_line before start_line is E_INVALID_ARGS', async () => {
    const r: Any = await call('read_file', { file_path: '{bundle-root}/bundle.yaml', start_line: 5, end_line: 2 });
    expect(r.error.code).toBe('E_INVALID_ARGS');
  });

  it('accepts numbers sent as strings and the path alias', async () => {
    const r: Any = await call('read_file', { path: '{bundle-root}/bundle.yaml', start_line: '2', end_line: '2' });
    expect(r.content).toBe('type: standalone\n');
  });

  it('truncates above maxReadBytes at a line boundary with a hint, hashing the whole file', async () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `row ${i} ${'x'.repeat(40)}`);
    const text = lines.join('\n') + '\n';
    await fs.writeFile(path.join(ctx.outputRoot, 'big.txt'), text);
    const r: Any = await call('read_file', { file_path: '{output_folder}/big.txt' }, { ...ctx, limits: { ...ctx.limits, maxReadBytes: 1000 } });
    expect(r.ok).toBe(true);
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(r.content)).toBeLessThanOrEqual(1000);
    expect(r.content.endsWith('\n')).toBe(true);
    expect(text.startsWith(r.content)).toBe(true);
    expect(r.bytes).toBe(Buffer.byteLength(text));
    expect(r.lines).toBe(5000);
    expect(r.sha256).toBe(sha(text));
    expect(r.hint).toMatch(/start_line=\d+/);
    const next: Any = await call('read_file', { file_path: '{output_folder}/big.txt', start_line: r.end_line + 1, end_line: r.end_line + 2 });
    expect(next.content).toBe(`${lines[r.end_line]}\n${lines[r.end_line + 1]}\n`);
  });

  it('refuses binary files with E_BINARY', async () => {
    await fs.writeFile(path.join(ctx.outputRoot, 'img.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 1]));
    expect(((await call('read_file', { file_path: 'img.png' })) as Any).error.code).toBe('E_BINARY');
  });

  it('cuts very long lines with a marker', async () => {
    await fs.writeFile(path.join(ctx.outputRoot, 'min.js'), 'a'.repeat(20_000));
    const r: Any = await call('read_file', { file_path: 'min.js' });
    expect(r.truncated).toBe(true);
    expect(r.content).toMatch(/…\[line cut: 12000 more characters\]$/);
  });

  it('folders are EISDIR, missing files ENOENT, empty files fine', async () => {
    expect(((await call('read_file', { file_path: '{bundle-root}/workflows' })) as Any).error.code).toBe('EISDIR');
    expect(((await call('read_file', { file_path: '{bundle-root}/nope.md' })) as Any).error.code).toBe('ENOENT');
    await fs.writeFile(path.join(ctx.outputRoot, 'empty.md'), '');
    const r: Any = await call('read_file', { file_path: 'empty.md' });
    expect(r).toMatchObject({ ok: true, content: '', bytes: 0, lines: 0, truncated: false });
  });

  it('reads 1 MB quickly and keeps multi-byte characters whole', async () => {
    const text = 'héllo wörld ✓\n'.repeat(70_000);
    await fs.writeFile(path.join(ctx.outputRoot, 'mb.txt'), text);
    await call('read_file', { file_path: 'mb.txt' });
    const t = performance.now();
    const r: Any = await call('read_file', { file_path: 'mb.txt' });
    const ms = performance.now() - t;
    expect(r.sha256).toBe(sha(text));
    expect(r.content).not.toContain('\uFFFD');
    expect(ms).toBeLessThan(1_000); // loose for a loaded machine; alone it takes a few milliseconds
  });
});

describe('list_files', () => {
  beforeEach(async () => {
    await fs.writeFile(path.join(ctx.bundleRoot, 'workflows', 'intake', 'workflow.yaml'), 'name: intake\n');
    await fs.writeFile(path.join(ctx.bundleRoot, '.hidden'), 'x');
    await fs.symlink(path.join(sb.outside, 'secret.txt'), path.join(ctx.bundleRoot, 'link'));
  });

  it('lists direct children, skipping hidden entries and symlinks', async () => {
    const r: Any = await call('list_files', { path: '{bundle-root}' });
    expect(r.ok).toBe(true);
    expect(r.path).toBe('{bundle-root}');
    expect(r.entries).toEqual([
      { name: 'bundle.yaml', path: '{bundle-root}/bundle.yaml', type: 'file', size: 28 },
      { name: 'config.yaml', path: '{bundle-root}/config.yaml', type: 'file', size: expect.any(Number) },
      { name: 'workflows', path: '{bundle-root}/workflows', type: 'directory' },
    ]);
    expect(r.truncated).toBe(false);
  });

  it('never lists a symlink, wherever it points, at any depth', async () => {
    const sub = path.join(ctx.bundleRoot, 'workflows', 'intake');
    for (const dir of [ctx.bundleRoot, sub]) {
      await fs.symlink(path.join(ctx.bundleRoot, 'bundle.yaml'), path.join(dir, 'inside.yaml'));
      await fs.symlink(sb.outside, path.join(dir, 'outside-dir'));
      await fs.symlink(path.join(sb.outside, 'gone.txt'), path.join(dir, 'dangling.txt'));
    }
    const flat: Any = await call('list_files', { path: '{bundle-root}' });
    const deep: Any = await call('list_files', { path: '{bundle-root}', recursive: true });
    expect(flat.entries.map((e: Any) => e.name)).toEqual(['bundle.yaml', 'config.yaml', 'workflows']);
    expect(deep.entries.map((e: Any) => e.path)).toEqual([
      '{bundle-root}/bundle.yaml',
      '{bundle-root}/config.yaml',
      '{bundle-root}/workflows',
      '{bundle-root}/workflows/intake',
      '{bundle-root}/workflows/intake/workflow.yaml',
    ]);
    expect(JSON.stringify([flat, deep])).not.toMatch(/inside|outside|dangling|link|secret/);
  });

  it('lists node_modules without opening it', async () => {
    await fs.mkdir(path.join(ctx.outputRoot, 'node_modules', 'pkg'), { recursive: true });
    await fs.writeFile(path.join(ctx.outputRoot, 'node_modules', 'pkg', 'index.js'), '');
    const r: Any = await call('list_files', { path: '{output_folder}', recursive: true });
    expect(r.entries).toEqual([{ name: 'node_modules', path: '{output_folder}/node_modules', type: 'directory' }]);
    const inside: Any = await call('list_files', { path: '{output_folder}/node_modules' });
    expect(inside.entries.map((e: Any) => e.name)).toEqual(['pkg']);
  });

  it('lists recursively', async () => {
    const r: Any = await call('list_files', { path: '{bundle-root}/workflows', recursive: true });
    expect(r.entries.map((e: Any) => e.path)).toEqual([
      '{bundle-root}/workflows/intake',
      '{bundle-root}/workflows/intake/workflow.yaml',
    ]);
  });

  it('an empty path lists the bundle root; a missing output folder is empty', async () => {
    expect(((await call('list_files', {})) as Any).path).toBe('{bundle-root}');
    expect(((await call('list_files', { path: '.' })) as Any).path).toBe('{bundle-root}');
    await fs.rm(ctx.outputRoot, { recursive: true });
    expect(await call('list_files', { path: '{output_folder}' })).toEqual({ ok: true, path: '{output_folder}', entries: [], truncated: false });
  });

  it('caps entries at maxEntries with truncated and a hint', async () => {
    for (let i = 0; i < 12; i++) await fs.writeFile(path.join(ctx.outputRoot, `f${String(i).padStart(2, '0')}.md`), '');
    const r: Any = await call('list_files', { path: '{output_folder}' }, { ...ctx, limits: { ...ctx.limits, maxEntries: 5 } });
    expect(r.entries).toHaveLength(5);
    expect(r.truncated).toBe(true);
    expect(r.hint).toBeTruthy();
  });

  it('a file is ENOTDIR', async () => {
    expect(((await call('list_files', { path: '{bundle-root}/bundle.yaml' })) as Any).error.code).toBe('ENOTDIR');
  });
});

describe('search_files', () => {
  beforeEach(async () => {
    await fs.mkdir(path.join(ctx.outputRoot, 'docs'), { recursive: true });
    await fs.writeFile(path.join(ctx.outputRoot, 'docs', 'a.md'), 'one\nTODO: first\nthree\nfour\nTODO second\n');
    await fs.writeFile(path.join(ctx.outputRoot, 'b.md'), 'nothing here\n');
    await fs.mkdir(path.join(ctx.outputRoot, 'node_modules'), { recursive: true });
    await fs.writeFile(path.join(ctx.outputRoot, 'node_modules', 'x.md'), 'TODO hidden\n');
    await fs.mkdir(path.join(ctx.outputRoot, '.git'), { recursive: true });
    await fs.writeFile(path.join(ctx.outputRoot, '.git', 'x.md'), 'TODO hidden\n');
    await fs.writeFile(path.join(ctx.outputRoot, 'bin.dat'), Buffer.from('TODO\0\0\0'));
    await fs.symlink(path.join(sb.outside, 'secret.txt'), path.join(ctx.outputRoot, 'leak.md'));
    await fs.writeFile(path.join(sb.outside, 'secret.txt'), 'TODO secret\n');
  });

  it('finds literal matches with context, skipping node_modules, .git, binaries and symlinks', async () => {
    const r: Any = await call('search_files', { path: '{output_folder}', pattern: 'TODO' });
    expect(r.ok).toBe(true);
    expect(r.truncated).toBe(false);
    expect(r.matches).toEqual([
      { path: '{output_folder}/docs/a.md', line: 2, text: 'TODO: first', before: ['one'], after: ['three'] },
      { path: '{output_folder}/docs/a.md', line: 5, text: 'TODO second', before: ['four'], after: [] },
    ]);
  });

  it('supports /regex/flags and regex:true', async () => {
    const r: Any = await call('search_files', { path: '{output_folder}', pattern: '/^todo:/i', before: 0, after: 0 });
    expect(r.matches).toEqual([{ path: '{output_folder}/docs/a.md', line: 2, text: 'TODO: first' }]);
    const r2: Any = await call('search_files', { path: '{output_folder}/docs/a.md', pattern: 'T.DO\\s', regex: true });
    expect(r2.matches.map((m: Any) => m.line)).toEqual([5]);
  });

  it('caps matches and reports truncated', async () => {
    const r: Any = await call('search_files', { path: '{output_folder}', pattern: 'TODO', max_matches: 1 });
    expect(r.matches).toHaveLength(1);
    expect(r.truncated).toBe(true);
  });

  it('rejects invalid and catastrophic regexes', async () => {
    expect(((await call('search_files', { path: '', pattern: '/(unclosed/' })) as Any).error.code).toBe('E_INVALID_ARGS');
    expect(((await call('search_files', { path: '', pattern: '/(a+)+$/' })) as Any).error.code).toBe('E_INVALID_ARGS');
    expect(((await call('search_files', { path: '', pattern: 'x'.repeat(501) })) as Any).error.code).toBe('E_INVALID_ARGS');
  });

  it('a slow regex is stopped by the time budget', async () => {
    await fs.writeFile(path.join(ctx.outputRoot, 'slow.txt'), `${'a'.repeat(3000)}\n`.repeat(20));
    const t = Date.now();
    const r: Any = await call('search_files', { path: '{output_folder}/slow.txt', pattern: '/a*a*a*a*a*a*a*b/' });
    expect(Date.now() - t).toBeLessThan(5000);
    expect(r.ok).toBe(true);
    expect(r.truncated).toBe(true);
  });
});

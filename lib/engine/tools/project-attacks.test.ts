import { promises as fs } from 'node:fs';
import path from 'node:path';
import { executeTool } from '.';
import type { ToolContext } from './types';
import type { ToolResult } from '../../core/results';
import { bmadProject } from '../../../test/bmad-installs';
import { projectContext } from '../../../test/project-context';

/**
 * The sandbox in a BMAD project (a real 6.0.4 install): the project is readable but for secrets
 * and machinery, only the output folder (and folders the project allows) are writable, the
 * installed method never is, and nothing outside the project is reachable by any path or link.
 */
let project: string;
let outside: string;
let ctx: ToolContext;
beforeEach(async () => {
  project = await bmadProject('6.0.4');
  outside = path.join(path.dirname(project), 'outside');
  await fs.mkdir(outside, { recursive: true });
  await fs.writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET');
  await fs.writeFile(path.join(project, '.env'), 'OPENAI_API_KEY=sk-test-project');
  await fs.writeFile(path.join(project, '.env.local'), 'X=sk-test-local');
  await fs.mkdir(path.join(project, '.git'), { recursive: true });
  await fs.writeFile(path.join(project, '.git', 'config'), '[core]\n');
  await fs.mkdir(path.join(project, 'node_modules', 'x'), { recursive: true });
  await fs.writeFile(path.join(project, 'node_modules', 'x', 'index.js'), 'secret()');
  await fs.mkdir(path.join(project, 'docs'), { recursive: true });
  await fs.writeFile(path.join(project, 'docs', 'readme.md'), '# Docs');
  ctx = await projectContext(project);
});
afterEach(async () => {
  await fs.rm(path.dirname(project), { recursive: true, force: true });
});

const run = (name: string, args: Record<string, unknown>, over: Partial<ToolContext> = {}): Promise<ToolResult> =>
  executeTool({ id: 'c', name, arguments: JSON.stringify(args) }, { ...ctx, auditDir: undefined, ...over });

function expectNoLeak(r: ToolResult) {
  const text = JSON.stringify(r);
  for (const secret of ['TOP SECRET', 'sk-test', 'secret()', project, outside]) expect(text).not.toContain(secret);
}

describe('project sandbox', () => {
  it.each([
    ['{project-root}/.env'],
    ['{project-root}/.env.local'],
    ['{project-root}/docs/../.env'],
    ['{project-root}/.git/config'],
    ['{project-root}/node_modules/x/index.js'],
    ['{project-root}/../outside/secret.txt'],
    ['{project-root}/DOCS/../.ENV'],
    ['.env'],
    ['{project-root}/.env\u0000.md'],
  ])('refuses to read %s', async (p) => {
    const r = await run('read_file', { file_path: p });
    expect(r.ok).toBe(false);
    expectNoLeak(r);
  });

  it('reads the project, the method and the shared output folder', async () => {
    expect(await run('read_file', { file_path: '{project-root}/docs/readme.md' })).toMatchObject({ ok: true, path: '{project-root}/docs/readme.md' });
    expect(await run('read_file', { file_path: '{project-root}/_bmad/bmm/config.yaml' })).toMatchObject({ ok: true, path: '{bundle-root}/bmm/config.yaml' });
    const listed = (await run('list_files', { path: '{project-root}' })) as ToolResult & { entries: { name: string }[] };
    const names = listed.entries.map((e) => e.name);
    expect(names).toEqual(expect.arrayContaining(['docs', '_bmad', '_bmad-output']));
    for (const hidden of ['.env', '.env.local', '.git']) expect(names).not.toContain(hidden);
    const found = (await run('search_files', { path: '{project-root}', pattern: 'sk-test' })) as ToolResult & { matches: unknown[] };
    expect(found.ok && found.matches).toEqual([]);
  });

  it.each([
    ['{project-root}/_bmad/bmm/config.yaml', 'E_READ_ONLY'],
    ['{bundle-root}/bmm/config.yaml', 'E_READ_ONLY'],
    ['{core-root}/tasks/x.md', 'E_READ_ONLY'],
    ['{project-root}/docs/new.md', 'E_READ_ONLY'],
    ['{project-root}/src/index.ts', 'E_READ_ONLY'],
    ['{project-root}/.env', 'E_SANDBOX_VIOLATION'],
    ['{project-root}/../outside/x.md', 'E_SANDBOX_VIOLATION'],
  ])('refuses to write %s', async (p, code) => {
    const before = await fs.readFile(path.join(project, '_bmad', 'bmm', 'config.yaml'), 'utf8');
    const r = await run('save_output', { file_path: p, content: 'pwned' });
    expect(r).toMatchObject({ ok: false, error: { code } });
    expect(await fs.readFile(path.join(project, '_bmad', 'bmm', 'config.yaml'), 'utf8')).toBe(before);
    await expect(fs.readFile(path.join(project, 'docs', 'new.md'))).rejects.toThrow();
    await expect(fs.readFile(path.join(outside, 'x.md'))).rejects.toThrow();
  });

  it('writes only into the folders the project allows, never through them into the method', async () => {
    const allowed = { ...ctx, project: { writable: ['docs'] } };
    expect(await run('save_output', { file_path: '{project-root}/docs/new.md', content: 'ok' }, allowed)).toMatchObject({ ok: true });
    await fs.symlink(path.join(project, '_bmad'), path.join(project, 'docs', 'method'));
    const r = await run('save_output', { file_path: '{project-root}/docs/method/bmm/config.yaml', content: 'pwned' }, allowed);
    expect(r.ok).toBe(false);
    // A writable folder that is itself a link into the method is refused too.
    await fs.rm(path.join(project, 'docs'), { recursive: true });
    await fs.symlink(path.join(project, '_bmad'), path.join(project, 'docs'));
    const r2 = await run('save_output', { file_path: '{project-root}/docs/bmm/config.yaml', content: 'pwned' }, allowed);
    expect(r2.ok).toBe(false);
    expect(await fs.readFile(path.join(project, '_bmad', 'bmm', 'config.yaml'), 'utf8')).not.toContain('pwned');
  });

  it('follows no link out of the project', async () => {
    await fs.symlink(path.join(outside, 'secret.txt'), path.join(project, 'docs', 'leak.md'));
    await fs.symlink(outside, path.join(project, 'docs', 'out'));
    await fs.symlink(path.join(project, '.env'), path.join(project, 'docs', 'env.md'));
    for (const p of ['{project-root}/docs/leak.md', '{project-root}/docs/out/secret.txt', '{project-root}/docs/env.md']) {
      const r = await run('read_file', { file_path: p });
      expect(r.ok).toBe(false);
      expectNoLeak(r);
    }
    const listed = (await run('list_files', { path: '{project-root}/docs' })) as ToolResult & { entries: { name: string }[] };
    expect(listed.entries.map((e) => e.name)).toEqual(['readme.md']);
  });

  it('reads nothing through an installed method swapped for a link out of the project', async () => {
    await fs.rename(path.join(project, '_bmad'), path.join(project, '_bmad-real'));
    await fs.symlink(outside, path.join(project, '_bmad'));
    const r = await run('read_file', { file_path: '{bundle-root}/secret.txt' });
    expect(r.ok).toBe(false);
    expectNoLeak(r);
  });

  it('never writes through an output folder swapped for a link, nor a project folder swapped for one', async () => {
    await fs.rm(ctx.outputRoot, { recursive: true, force: true });
    await fs.symlink(outside, ctx.outputRoot);
    const r = await run('save_output', { file_path: '{output_folder}/x.md', content: 'pwned' });
    expect(r.ok).toBe(false);
    await expect(fs.readFile(path.join(outside, 'x.md'))).rejects.toThrow();
    // The project folder itself replaced by a link elsewhere: reads through {project-root} land nowhere outside.
    const moved = `${project}-real`;
    await fs.rename(project, moved);
    await fs.symlink(outside, project);
    const read = await run('read_file', { file_path: '{project-root}/secret.txt' });
    expect(read.ok).toBe(false);
    expectNoLeak(read);
    await fs.unlink(project);
    await fs.rename(moved, project);
  });
});

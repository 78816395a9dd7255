import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expandVariables, resolveInRoot, resolvePath, toVirtual, today, type ResolvedPath } from '.';
import type { ToolResult } from '../results';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

function okPath(r: ResolvedPath | ToolResult): ResolvedPath {
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r)}`);
  return r as ResolvedPath;
}
function code(r: ResolvedPath | ToolResult): string | undefined {
  return r.ok ? undefined : (r as { error: { code: string } }).error.code;
}

describe('expandVariables', () => {
  it('keeps mount variables as virtual tokens and expands config values', () => {
    const r = expandVariables('{output_folder}/{user_name}-{date}.md', { variables: { user_name: 'Ada' }, date: '2025-01-02' });
    expect(r).toEqual({ text: '{output_folder}/Ada-2025-01-02.md', unresolved: [], recursive: [] });
  });

  it('reports unknown variables by name and keeps them in the text', () => {
    const r = expandVariables('{bundle-root}/{nope}/{config_source}:missing', {});
    expect(r.text).toBe('{bundle-root}/{nope}/{config_source}:missing');
    expect(r.unresolved.sort()).toEqual(['missing', 'nope']);
  });

  it('resolves values that contain variables until stable', () => {
    const r = expandVariables('{a}', { variables: { a: '{b}/x', b: '{c}', c: '{bundle-root}' } });
    expect(r.text).toBe('{bundle-root}/x');
  });

  it('detects recursive variables', () => {
    const r = expandVariables('{a}', { variables: { a: '{b}', b: '{a}' } });
    expect(r.recursive.length).toBeGreaterThan(0);
    expect(r.unresolved).toEqual([]);
  });

  it('rewrites {project-root} paths that land in a mount, in both spellings', () => {
    const roots = sb.ctx;
    expect(expandVariables('{project-root}/bmad/core/tasks/workflow.md', { roots }).text).toBe('{core-root}/tasks/workflow.md');
    expect(expandVariables('{project_root}/bmad/custom/bundles/demo', { roots }).text).toBe('{bundle-root}');
    expect(expandVariables('{project-root}/output/conv-1/a.md', { roots }).text).toBe('{output_folder}/a.md');
    // separator-aware: demo-evil is not demo
    expect(expandVariables('{project-root}/bmad/custom/bundles/demo-evil/x', { roots }).text).toBe('{project-root}/bmad/custom/bundles/demo-evil/x');
    expect(expandVariables('{project-root}/.env', { roots }).text).toBe('{project-root}/.env');
  });

  it('{output_folder} and {config_source}:output_folder always mean the conversation folder', () => {
    const r = expandVariables('{config_source}:output_folder/x.md', { config: { output_folder: '/etc' }, variables: { output_folder: '/etc' } });
    expect(r.text).toBe('{output_folder}/x.md');
  });

  it('leaves {{template}} placeholders alone', () => {
    expect(expandVariables('Hello {{user_name}}', { variables: { user_name: 'Ada' } })).toEqual({
      text: 'Hello {{user_name}}',
      unresolved: [],
      recursive: [],
    });
  });

  it('uses today for {date} by default', () => {
    expect(expandVariables('{date}').text).toBe(today());
    expect(today()).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});

describe('resolvePath', () => {
  it('resolves mount paths to virtual paths', async () => {
    const r = okPath(await resolvePath('{bundle-root}/bundle.yaml', sb.ctx, 'read'));
    expect(r.virtual).toBe('{bundle-root}/bundle.yaml');
    expect(r.mount).toBe('{bundle-root}');
    expect(r.kind).toBe('file');
    expect(r.abs).toBe(path.join(sb.ctx.bundleRoot, 'bundle.yaml'));
  });

  it('relative reads try the output folder, then the bundle', async () => {
    await fs.writeFile(path.join(sb.ctx.outputRoot, 'bundle.yaml'), 'mine');
    expect(okPath(await resolvePath('bundle.yaml', sb.ctx, 'read')).virtual).toBe('{output_folder}/bundle.yaml');
    expect(okPath(await resolvePath('config.yaml', sb.ctx, 'read')).virtual).toBe('{bundle-root}/config.yaml');
    expect(code(await resolvePath('nothing.md', sb.ctx, 'read'))).toBe('ENOENT');
  });

  it('relative writes land in the output folder; new files report exists=false', async () => {
    const r = okPath(await resolvePath('notes/plan.md', sb.ctx, 'write'));
    expect(r.virtual).toBe('{output_folder}/notes/plan.md');
    expect(r.exists).toBe(false);
  });

  it('writes into bundle or core are E_READ_ONLY', async () => {
    expect(code(await resolvePath('{bundle-root}/x.md', sb.ctx, 'write'))).toBe('E_READ_ONLY');
    expect(code(await resolvePath('{core-root}/tasks/workflow.md', sb.ctx, 'write'))).toBe('E_READ_ONLY');
    expect(code(await resolvePath('{project-root}/bmad/core/x', sb.ctx, 'write'))).toBe('E_READ_ONLY');
  });

  it('{project-root} is allowed only inside a mount', async () => {
    expect(okPath(await resolvePath('{project-root}/bmad/core/tasks/workflow.md', sb.ctx, 'read')).virtual).toBe('{core-root}/tasks/workflow.md');
    expect(code(await resolvePath('{project-root}/.env', sb.ctx, 'read'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolvePath('{project-root}/package.json', sb.ctx, 'read'))).toBe('E_SANDBOX_VIOLATION');
  });

  it('unknown variables fail with E_UNRESOLVED_VARIABLE naming them', async () => {
    const r = await resolvePath('{output_folder}/{who_knows}.md', sb.ctx, 'write');
    expect(code(r)).toBe('E_UNRESOLVED_VARIABLE');
    expect(JSON.stringify(r)).toContain('who_knows');
  });

  it('agent variables expand inside paths', async () => {
    const r = okPath(await resolvePath('{output_folder}/{user_name}.md', sb.ctx, 'write'));
    expect(r.virtual).toBe('{output_folder}/Ada.md');
  });

  it('reading the output folder before it exists is ENOENT with its virtual path', async () => {
    await fs.rm(sb.ctx.outputRoot, { recursive: true });
    const r = await resolvePath('{output_folder}', sb.ctx, 'read');
    expect(code(r)).toBe('ENOENT');
    expect((r as { path?: string }).path).toBe('{output_folder}');
  });

  it('writing creates the output folder when missing', async () => {
    await fs.rm(sb.ctx.outputRoot, { recursive: true });
    okPath(await resolvePath('{output_folder}/a.md', sb.ctx, 'write'));
    expect((await fs.stat(sb.ctx.outputRoot)).isDirectory()).toBe(true);
  });

  it('empty path reads the bundle root', async () => {
    expect(okPath(await resolvePath('', sb.ctx, 'read')).virtual).toBe('{bundle-root}');
  });

  it('messages never contain absolute paths', async () => {
    const inputs = [`${sb.ctx.outputRoot}/x`, '{output_folder}/../../x', '{project-root}/.env', '{output_folder}/a\\b'];
    for (const input of inputs) {
      const r = await resolvePath(input, sb.ctx, 'read');
      expect(r.ok).toBe(false);
      expect(JSON.stringify(r)).not.toContain(sb.base);
    }
  });
});

describe('resolveInRoot', () => {
  it('serves files of one root and refuses to leave it', async () => {
    await fs.writeFile(path.join(sb.ctx.outputRoot, 'a.md'), 'x');
    await fs.mkdir(path.join(sb.outputPath, 'conv-2'), { recursive: true });
    await fs.writeFile(path.join(sb.outputPath, 'conv-2', 'b.md'), 'y');
    expect(okPath(await resolveInRoot(sb.ctx.outputRoot, 'a.md', 'read')).virtual).toBe('{output_folder}/a.md');
    expect(code(await resolveInRoot(sb.ctx.outputRoot, '../conv-2/b.md', 'read'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolveInRoot(sb.ctx.outputRoot, '/etc/passwd', 'read'))).toBe('E_SANDBOX_VIOLATION');
    await fs.symlink(path.join(sb.outputPath, 'conv-2'), path.join(sb.ctx.outputRoot, 'other'));
    expect(code(await resolveInRoot(sb.ctx.outputRoot, 'other/b.md', 'read'))).toBe('E_SANDBOX_VIOLATION');
  });
});

describe('toVirtual', () => {
  it('maps server paths inside mounts and nothing else', () => {
    expect(toVirtual(path.join(sb.ctx.outputRoot, 'a', 'b.md'), sb.ctx)).toBe('{output_folder}/a/b.md');
    expect(toVirtual(sb.ctx.coreRoot, sb.ctx)).toBe('{core-root}');
    expect(toVirtual(`${sb.ctx.outputRoot}-evil/x`, sb.ctx)).toBeNull();
    expect(toVirtual(path.join(sb.project, '.env'), sb.ctx)).toBeNull();
  });
});

describe('a conversation folder replaced by a symlink', () => {
  it('is refused for reads and writes, and nothing lands in the link target', async () => {
    const sb = await makeSandbox();
    try {
      const elsewhere = await fs.mkdtemp(path.join(os.tmpdir(), 'elsewhere-'));
      await fs.writeFile(path.join(elsewhere, 'secret.db'), 'secret');
      await fs.rm(sb.ctx.outputRoot, { recursive: true, force: true });
      await fs.symlink(elsewhere, sb.ctx.outputRoot);
      expect(code(await resolveInRoot(sb.ctx.outputRoot, 'secret.db', 'read'))).toBe('E_SANDBOX_VIOLATION');
      expect(code(await resolvePath('{output_folder}/secret.db', sb.ctx, 'read'))).toBe('E_SANDBOX_VIOLATION');
      expect(code(await resolvePath('{output_folder}/new.md', sb.ctx, 'write'))).toBe('E_SANDBOX_VIOLATION');
      expect(await fs.readdir(elsewhere)).toEqual(['secret.db']);
      await fs.rm(elsewhere, { recursive: true, force: true });
    } finally {
      await sb.cleanup();
    }
  });
});

describe('paths as the sandboxes show them', () => {
  it('reads /workspace/..., /project/... and /tmp/... as the files they are, with every check; refuses them elsewhere', async () => {
    const checkout = path.join(sb.base, 'checkout');
    const project = path.join(checkout, 'app');
    const tmpRoot = path.join(sb.base, 'ws-tmp');
    await fs.mkdir(path.join(project, '_bmad', 'render'), { recursive: true });
    await fs.mkdir(tmpRoot, { recursive: true });
    await fs.writeFile(path.join(project, '_bmad', 'render', 'step-01.md'), '# Step 1\n');
    await fs.writeFile(path.join(checkout, 'outside.txt'), 'not the project\n');
    await fs.writeFile(path.join(project, '.env'), 'SECRET=1\n');
    await fs.writeFile(path.join(tmpRoot, 'story.diff'), '+x\n');
    const ctx = { ...sb.ctx, projectRoot: project, project: { writable: [], everywhere: true }, checkoutRoot: checkout, tmpRoot };
    expect(okPath(await resolvePath('/workspace/app/_bmad/render/step-01.md', ctx, 'read'))).toMatchObject({ virtual: '{project-root}/_bmad/render/step-01.md', abs: path.join(await fs.realpath(project), '_bmad', 'render', 'step-01.md') });
    expect(okPath(await resolvePath('/project/_bmad/render/step-01.md', ctx, 'read')).virtual).toBe('{project-root}/_bmad/render/step-01.md');
    expect(okPath(await resolvePath('/tmp/story.diff', ctx, 'read')).virtual).toBe('{tmp}/story.diff');
    // The same rules as for the file tools' own names.
    expect(code(await resolvePath('/workspace/app/.env', ctx, 'read'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolvePath('/tmp/story.diff', ctx, 'write'))).toBe('E_READ_ONLY');
    expect(code(await resolvePath('/workspace/app/_bmad/render/step-01.md', ctx, 'write'))).toBe('E_READ_ONLY');
    // Outside the project folder, escapes, and without a workspace: absolute paths stay refused.
    expect(code(await resolvePath('/workspace/outside.txt', ctx, 'read'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolvePath('/project/../outside.txt', ctx, 'read'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolvePath('/workspace/app/_bmad/render/step-01.md', { ...ctx, checkoutRoot: undefined }, 'read'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolvePath('/tmp/story.diff', { ...ctx, tmpRoot: undefined }, 'read'))).toBe('E_SANDBOX_VIOLATION');
    expect(code(await resolvePath('/etc/passwd', ctx, 'read'))).toBe('E_SANDBOX_VIOLATION');
  });
});

/**
 * Sandbox attack suite: every vector of the MCP filesystem server's path-validation tests and
 * advisories (prefix collision, symlink escape, swapped parent, quote/whitespace normalisation,
 * NUL, traversal, UNC / drive / ADS), plus variable-specific ones. Each case runs against the real
 * resolver and real files, states its expected code, and is followed by a write through the same
 * vector that must leave nothing outside the output folder.
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { executeTool } from '.';
import type { ToolContext } from './types';
import type { ToolResult } from '../../core/results';
import { resolvePath, writeFileAtomic, type ResolvedPath } from '../../core/paths';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';

type Expect = 'ok' | 'ENOENT' | 'E_SANDBOX_VIOLATION' | 'E_READ_ONLY' | 'E_UNRESOLVED_VARIABLE' | 'E_INVALID_ARGS';

interface Case {
  name: string;
  /** The path the model sends; a function when it needs the temp folder's real location. */
  path: string | ((sb: Sandbox) => string);
  expect: Expect;
  tool?: 'read_file' | 'save_output' | 'list_files' | 'search_files' | 'edit_file';
  setup?: (sb: Sandbox, ctx: ToolContext) => Promise<void> | void;
  variables?: Record<string, string>;
  /** Extra assertions on disk after the call. */
  check?: (sb: Sandbox) => Promise<void>;
}

const openServers: net.Server[] = [];
const out = (sb: Sandbox, ...p: string[]) => path.join(sb.ctx.outputRoot, ...p);
const link = (target: string, at: string) => fs.symlink(target, at);
const withTmp = async (sb: Sandbox, ctx: ToolContext) => {
  ctx.tmpRoot = path.join(sb.base, 'wtmp');
  await fs.mkdir(ctx.tmpRoot, { recursive: true });
};

const cases: Case[] = [
  // A workspace's command temp folder ({tmp}): readable only where a workspace gave one, never a way out
  { name: '{tmp} outside a workspace', path: '{tmp}/diff.patch', expect: 'E_SANDBOX_VIOLATION' },
  { name: '{tmp} dot-dot', path: '{tmp}/../outside/secret.txt', expect: 'E_SANDBOX_VIOLATION', setup: (sb, ctx) => withTmp(sb, ctx) },
  {
    name: '{tmp} symlink a command left pointing out',
    path: '{tmp}/leak',
    expect: 'E_SANDBOX_VIOLATION',
    setup: async (sb, ctx) => {
      await withTmp(sb, ctx);
      await link(path.join(sb.outside, 'secret.txt'), path.join(sb.base, 'wtmp', 'leak'));
    },
  },
  { name: '{tmp} is not writable by the file tools', path: '{tmp}/x.md', expect: 'E_READ_ONLY', tool: 'save_output', setup: (sb, ctx) => withTmp(sb, ctx) },
  { name: '{tmp} not at the start', path: '{output_folder}/../{tmp}/x', expect: 'E_SANDBOX_VIOLATION', setup: (sb, ctx) => withTmp(sb, ctx) },
  // Traversal, in every spelling
  { name: 'dot-dot out of the output folder', path: '{output_folder}/../../../.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'relative dot-dot', path: '../.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'bare dot-dot', path: '..', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'mount then dot-dot', path: '{output_folder}/..', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'dot-dot between mounts that exist', path: '{bundle-root}/../../../core/tasks/workflow.md', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'dot-dot after a real folder', path: '{output_folder}/a/../../x.md', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'backslash traversal', path: '{output_folder}/..\\..\\.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'mixed separators', path: '{output_folder}/../\\../.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'four dots', path: '....//....//.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'dot-dot with trailing space', path: '{output_folder}/.. /.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'fullwidth dots (NFKC ..)', path: '{output_folder}/\uFF0E\uFF0E/\uFF0E\uFF0E/.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'one-dot leader dots (NFKC ..)', path: '{output_folder}/\u2025/.env', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'URL-encoded dots are a literal name (read)', path: '{output_folder}/%2e%2e/%2e%2e/.env', expect: 'ENOENT' },
  {
    name: 'URL-encoded dots are a literal name (write stays inside)',
    path: '%2e%2e%2f%2e%2e%2f.env',
    expect: 'ok',
    tool: 'save_output',
    check: async (sb) => {
      expect(await fs.readFile(out(sb, '%2e%2e%2f%2e%2e%2f.env'), 'utf8')).toBe('pwned');
    },
  },
  { name: 'double-encoded dots are literal', path: '{output_folder}/%252e%252e/x', expect: 'ENOENT' },
  { name: 'dot segments are harmless', path: '{output_folder}/./././a.md', expect: 'ok', tool: 'save_output' },
  { name: 'double slashes are harmless', path: '{output_folder}//a.md', expect: 'ok', tool: 'save_output' },

  // Absolute paths: POSIX, Windows, UNC, drive letters, alternate data streams
  { name: 'absolute POSIX path', path: '/etc/passwd', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'absolute path outside', path: (sb) => path.join(sb.outside, 'secret.txt'), expect: 'E_SANDBOX_VIOLATION' },
  { name: 'absolute path inside the output folder is still refused', path: (sb) => out(sb, 'a.md'), expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'POSIX UNC-like //server', path: '//server/share/x', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'Windows UNC', path: '\\\\server\\share\\x', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'Windows device namespace', path: '\\\\?\\C:\\Windows\\win.ini', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'drive letter with backslash', path: 'C:\\Windows\\win.ini', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'drive letter with slash', path: 'C:/Windows/win.ini', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'drive-relative path', path: 'c:secret.txt', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'alternate data stream', path: '{output_folder}/notes.md:hidden', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'ADS $DATA', path: '{output_folder}/notes.md::$DATA', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'home folder', path: '~/.ssh/id_rsa', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'file URL', path: 'file:///etc/passwd', expect: 'E_SANDBOX_VIOLATION' },

  // NUL anywhere
  { name: 'NUL in the middle', path: '{output_folder}/a.md\0.txt', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'NUL first', path: '\0/etc/passwd', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'NUL last', path: '{bundle-root}/bundle.yaml\0', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'NUL from a variable', path: '{output_folder}/{evil}', variables: { evil: 'a\0b' }, expect: 'E_SANDBOX_VIOLATION' },

  // Prefix confusion (/out vs /out-evil) and other conversations
  {
    name: 'sibling folder sharing the prefix via {project-root}',
    path: '{project-root}/output/conv-1-evil/secret.md',
    expect: 'E_SANDBOX_VIOLATION',
    setup: async (sb) => {
      await fs.mkdir(path.join(sb.outputPath, 'conv-1-evil'), { recursive: true });
      await fs.writeFile(path.join(sb.outputPath, 'conv-1-evil', 'secret.md'), 'evil');
    },
  },
  { name: 'mount token glued to a suffix', path: '{output_folder}-evil/secret.md', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'bundle prefix collision', path: '{project-root}/bmad/custom/bundles/demo-evil/x', expect: 'E_SANDBOX_VIOLATION' },
  {
    name: 'symlink to a prefix-sharing sibling',
    path: '{output_folder}/lnk/secret.md',
    expect: 'E_SANDBOX_VIOLATION',
    setup: async (sb) => {
      await fs.mkdir(path.join(sb.outputPath, 'conv-1-evil'), { recursive: true });
      await fs.writeFile(path.join(sb.outputPath, 'conv-1-evil', 'secret.md'), 'evil');
      await link(path.join(sb.outputPath, 'conv-1-evil'), out(sb, 'lnk'));
    },
  },
  { name: "another conversation's folder via {project-root}", path: '{project-root}/output/conv-2/x.md', expect: 'E_SANDBOX_VIOLATION' },
  { name: "another conversation's folder via dot-dot", path: '{output_folder}/../conv-2/x.md', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'the output parent folder itself', path: '{project-root}/output', expect: 'E_SANDBOX_VIOLATION', tool: 'list_files' },

  // Quote and whitespace normalisation
  { name: 'surrounding double quotes are stripped', path: '"{output_folder}/q.md"', expect: 'ok', tool: 'save_output', check: async (sb) => void (await fs.access(out(sb, 'q.md'))) },
  { name: 'trailing quote is refused', path: '{output_folder}/q.md"', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'surrounding whitespace is trimmed', path: '  {output_folder}/s.md \n', expect: 'ok', tool: 'save_output', check: async (sb) => void (await fs.access(out(sb, 's.md'))) },
  { name: 'folder name ending in a space', path: '{output_folder}/dir /x.md', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'quoted absolute path', path: "'/etc/passwd'", expect: 'E_SANDBOX_VIOLATION' },
  { name: 'quoted traversal', path: '"../.env"', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'quoted path with trailing spaces inside', path: '"/etc/passwd  "', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'trailing dot (Windows strips it)', path: '{output_folder}/x.md.', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'tab in a name', path: '{output_folder}/a\tb.md', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'newline in a name', path: '{output_folder}/a\nb.md', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },
  { name: 'wildcards', path: '{output_folder}/*.md', expect: 'E_SANDBOX_VIOLATION' },

  // Symlinks
  {
    name: 'symlinked folder pointing outside',
    path: '{output_folder}/out-dir/secret.txt',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(sb.outside, out(sb, 'out-dir')),
  },
  {
    name: 'symlinked file pointing outside',
    path: '{output_folder}/secret-link',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(path.join(sb.outside, 'secret.txt'), out(sb, 'secret-link')),
  },
  {
    name: 'write through a symlinked file pointing outside',
    path: '{output_folder}/secret-link',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(path.join(sb.outside, 'secret.txt'), out(sb, 'secret-link')),
  },
  {
    name: 'new file inside a symlinked folder pointing outside',
    path: '{output_folder}/out-dir/new.md',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(sb.outside, out(sb, 'out-dir')),
  },
  {
    name: 'new nested folders under a symlinked folder',
    path: '{output_folder}/out-dir/a/b/c.md',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(sb.outside, out(sb, 'out-dir')),
  },
  {
    name: '3-hop symlink chain ending outside',
    path: '{output_folder}/h1',
    expect: 'E_SANDBOX_VIOLATION',
    setup: async (sb) => {
      await link(path.join(sb.outside, 'secret.txt'), out(sb, 'h3'));
      await link('h3', out(sb, 'h2'));
      await link(out(sb, 'h2'), out(sb, 'h1'));
    },
  },
  {
    name: '3-hop symlink chain staying inside',
    path: '{output_folder}/h1',
    expect: 'ok',
    setup: async (sb) => {
      await fs.writeFile(out(sb, 'real.md'), 'fine');
      await link('real.md', out(sb, 'h3'));
      await link('h3', out(sb, 'h2'));
      await link('h2', out(sb, 'h1'));
    },
  },
  {
    name: 'symlink loop',
    path: '{output_folder}/loopA/x',
    expect: 'E_SANDBOX_VIOLATION',
    setup: async (sb) => {
      await link('loopB', out(sb, 'loopA'));
      await link('loopA', out(sb, 'loopB'));
    },
  },
  {
    name: 'self-referencing symlink',
    path: '{output_folder}/self',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link('self', out(sb, 'self')),
  },
  {
    name: 'dangling symlink to a new file outside',
    path: '{output_folder}/dangle',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(path.join(sb.outside, 'created-by-attack.txt'), out(sb, 'dangle')),
    check: async (sb) => expect(await fs.readdir(sb.outside)).toEqual(['secret.txt']),
  },
  {
    name: 'dangling relative symlink climbing out',
    path: '{output_folder}/dangle2',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link('../../../outside/new.txt', out(sb, 'dangle2')),
  },
  {
    name: 'dangling symlink as a parent folder',
    path: '{output_folder}/ghost/x.md',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(path.join(sb.outside, 'ghost-dir'), out(sb, 'ghost')),
  },
  {
    name: 'bundle symlink to the .env file',
    path: '{bundle-root}/envlink',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(path.join(sb.project, '.env'), path.join(sb.ctx.bundleRoot, 'envlink')),
  },
  {
    name: 'bundle symlink into another mount',
    path: '{bundle-root}/corelink/tasks/workflow.md',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(sb.ctx.coreRoot, path.join(sb.ctx.bundleRoot, 'corelink')),
  },
  {
    name: 'symlink to the parent folder',
    path: '{output_folder}/up/conv-2/x.md',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link('..', out(sb, 'up')),
  },
  {
    name: 'relative symlink staying inside',
    path: '{output_folder}/inner/a.md',
    expect: 'ok',
    setup: async (sb) => {
      await fs.mkdir(out(sb, 'docs'));
      await fs.writeFile(out(sb, 'docs', 'a.md'), 'a');
      await link('./docs', out(sb, 'inner'));
    },
  },
  {
    name: 'list a symlinked folder pointing outside',
    path: '{bundle-root}/outlink',
    tool: 'list_files',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(sb.outside, path.join(sb.ctx.bundleRoot, 'outlink')),
  },
  {
    name: 'search a symlinked folder pointing outside',
    path: '{bundle-root}/outlink',
    tool: 'search_files',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(sb.outside, path.join(sb.ctx.bundleRoot, 'outlink')),
  },
  {
    name: 'edit through a symlink pointing outside',
    path: '{output_folder}/secret-link',
    tool: 'edit_file',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => link(path.join(sb.outside, 'secret.txt'), out(sb, 'secret-link')),
  },
  {
    name: 'the output folder itself swapped for a symlink outside',
    path: '{output_folder}/x.md',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    // The conversation folder is made by the server; a link in its place would move the whole
    // mount (to another conversation or the data folder), so it is refused.
    setup: async (sb) => {
      await fs.rm(sb.ctx.outputRoot, { recursive: true });
      await fs.mkdir(path.join(sb.base, 'real-out'));
      await link(path.join(sb.base, 'real-out'), sb.ctx.outputRoot);
    },
  },

  // FIFOs, sockets, devices
  {
    name: 'FIFO is refused (and never blocks)',
    path: '{output_folder}/pipe',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => void execFileSync('mkfifo', [out(sb, 'pipe')]),
  },
  {
    name: 'write over a FIFO is refused',
    path: '{output_folder}/pipe',
    tool: 'save_output',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => void execFileSync('mkfifo', [out(sb, 'pipe')]),
  },
  {
    name: 'unix socket is refused',
    path: '{output_folder}/sock',
    expect: 'E_SANDBOX_VIOLATION',
    setup: async (sb) => {
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(out(sb, 'sock'), resolve));
      openServers.push(server);
    },
    check: async () => {
      for (const s of openServers.splice(0)) await new Promise((resolve) => s.close(resolve));
    },
  },
  {
    name: 'character device inside the mount is refused',
    path: '{output_folder}/zero',
    expect: 'E_SANDBOX_VIOLATION',
    setup: (sb) => {
      try {
        execFileSync('mknod', [out(sb, 'zero'), 'c', '1', '5']);
      } catch {
        // Without the right to mknod, a symlink to the device exercises the same refusal.
        return link('/dev/zero', out(sb, 'zero'));
      }
    },
  },
  { name: '/dev/zero by absolute path', path: '/dev/zero', expect: 'E_SANDBOX_VIOLATION' },
  { name: '/dev/zero by traversal', path: '{output_folder}/../../../../../../../../dev/zero', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'symlink to /dev/null', path: '{output_folder}/null', expect: 'E_SANDBOX_VIOLATION', setup: (sb) => link('/dev/null', out(sb, 'null')) },
  { name: '/proc self environment', path: '/proc/self/environ', expect: 'E_SANDBOX_VIOLATION' },

  // Variables
  { name: '{config_source}: without a workflow', path: '{config_source}:output_folder/x.md', tool: 'save_output', expect: 'ok' },
  { name: 'variable expanding to ..', path: '{output_folder}/{evil}/{evil}/.env', variables: { evil: '..' }, expect: 'E_SANDBOX_VIOLATION' },
  { name: 'variable expanding to an absolute path', path: '{evil}/secret.txt', variables: { evil: '/etc' }, expect: 'E_SANDBOX_VIOLATION' },
  { name: 'variable expanding to {project-root}/..', path: '{evil}/outside/secret.txt', variables: { evil: '{project-root}/..' }, expect: 'E_SANDBOX_VIOLATION' },
  { name: 'variable expanding to a mount then ..', path: '{evil}/.env', variables: { evil: '{output_folder}/../..' }, expect: 'E_SANDBOX_VIOLATION' },
  { name: 'variable holding a Windows path', path: '{output_folder}/{evil}', variables: { evil: '..\\..\\x' }, expect: 'E_SANDBOX_VIOLATION' },
  { name: 'mutually recursive variables', path: '{output_folder}/{a}', variables: { a: '{b}', b: '{a}' }, expect: 'E_UNRESOLVED_VARIABLE' },
  { name: 'self-recursive variable', path: '{output_folder}/{a}', variables: { a: '{a}/x' }, expect: 'E_UNRESOLVED_VARIABLE' },
  { name: 'deeply nested variables', path: '{v0}', variables: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`v${i}`, `{v${i + 1}}`])), expect: 'E_UNRESOLVED_VARIABLE' },
  { name: 'unknown variable', path: '{secret_dir}/x', expect: 'E_UNRESOLVED_VARIABLE' },
  {
    name: 'config cannot move {output_folder}',
    path: '{output_folder}/moved.md',
    variables: { output_folder: '/tmp/evil' },
    tool: 'save_output',
    expect: 'ok',
    check: async (sb) => void (await fs.access(out(sb, 'moved.md'))),
  },
  { name: 'config cannot move {bundle-root}', path: '{bundle-root}/bundle.yaml', variables: { 'bundle-root': '/etc' }, expect: 'ok' },
  { name: 'mount token not at the start', path: 'a/{bundle-root}/x', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'mount token without a slash', path: '{output_folder}x.md', expect: 'E_SANDBOX_VIOLATION', tool: 'save_output' },

  // Read-only mounts
  { name: 'write into the bundle', path: '{bundle-root}/pwned.md', tool: 'save_output', expect: 'E_READ_ONLY' },
  { name: 'overwrite the core engine', path: '{core-root}/tasks/workflow.md', tool: 'save_output', expect: 'E_READ_ONLY' },
  { name: 'write into core via {project-root}', path: '{project-root}/bmad/core/x.md', tool: 'save_output', expect: 'E_READ_ONLY' },
  { name: 'edit a bundle file', path: '{bundle-root}/bundle.yaml', tool: 'edit_file', expect: 'E_READ_ONLY' },
  { name: 'write the app .env', path: '{project-root}/.env', tool: 'save_output', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'read the app code', path: '{project-root}/package.json', expect: 'E_SANDBOX_VIOLATION' },

  // Unicode normalisation and size limits
  {
    name: 'NFD name does not find an NFC file (no normalisation)',
    path: '{output_folder}/cafe\u0301.md',
    expect: 'ENOENT',
    setup: (sb) => fs.writeFile(out(sb, 'caf\u00e9.md'), 'nfc'),
  },
  { name: 'NFD name is written as given, inside', path: '{output_folder}/cafe\u0301.md', tool: 'save_output', expect: 'ok' },
  { name: 'a name longer than 255 bytes', path: `{output_folder}/${'a'.repeat(256)}.md`, tool: 'save_output', expect: 'E_SANDBOX_VIOLATION' },
  { name: 'a path longer than 1024 characters', path: `{output_folder}/${'a/'.repeat(600)}x.md`, tool: 'save_output', expect: 'E_INVALID_ARGS' },
];

async function treeOutsideOutput(sb: Sandbox): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (p === sb.ctx.outputRoot || p === path.join(sb.base, 'real-out')) continue;
      const st = await fs.lstat(p);
      out.push(`${path.relative(sb.base, p)}:${st.isDirectory() ? 'd' : st.size}`);
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk(sb.base);
  return out.sort();
}

function argsFor(tool: NonNullable<Case['tool']>, p: string): Record<string, unknown> {
  switch (tool) {
    case 'read_file':
      return { file_path: p };
    case 'save_output':
      return { file_path: p, content: 'pwned' };
    case 'edit_file':
      return { file_path: p, old_text: 'SECRET', new_text: 'pwned' };
    case 'list_files':
      return { path: p };
    case 'search_files':
      return { path: p, pattern: 'SECRET' };
  }
}

describe('sandbox attack suite', () => {
  let sb: Sandbox;
  beforeEach(async () => {
    sb = await makeSandbox();
    await fs.mkdir(path.join(sb.outputPath, 'conv-2'), { recursive: true });
    await fs.writeFile(path.join(sb.outputPath, 'conv-2', 'x.md'), 'other conversation');
    await fs.mkdir(path.join(sb.ctx.bundleRoot + '-evil'), { recursive: true });
    await fs.writeFile(path.join(sb.ctx.bundleRoot + '-evil', 'x'), 'evil');
  });
  afterEach(async () => {
    await sb.cleanup();
  });

  it('has at least 60 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const ctx: ToolContext = { ...sb.ctx, auditDir: path.join(sb.base, 'audit'), variables: { ...sb.ctx.variables, ...c.variables } };
    await c.setup?.(sb, ctx);
    const before = await treeOutsideOutput(sb);
    const tool = c.tool ?? 'read_file';
    const p = typeof c.path === 'function' ? c.path(sb) : c.path;

    const started = Date.now();
    const result: ToolResult = await executeTool({ id: 'attack', name: tool, arguments: JSON.stringify(argsFor(tool, p)) }, ctx);
    expect(Date.now() - started).toBeLessThan(3000);
    if (c.expect === 'ok') expect(result).toMatchObject({ ok: true });
    else expect(result).toMatchObject({ ok: false, error: { code: c.expect } });
    const text = JSON.stringify(result);
    expect(text).not.toContain(sb.base);
    expect(text).not.toContain('TOP SECRET');
    expect(text).not.toContain('sk-test');
    if (!result.ok && result.error.code === 'E_SANDBOX_VIOLATION') {
      expect(result.error.details).toMatchObject({ mount: expect.any(String), reason: expect.any(String) });
    }

    // The same vector used for a write must not put anything outside the output folder.
    if (tool !== 'save_output') {
      await executeTool({ id: 'attack-write', name: 'save_output', arguments: JSON.stringify({ file_path: p, content: 'pwned' }) }, ctx);
    }
    const after = await treeOutsideOutput(sb);
    expect(after.filter((e) => !e.startsWith('audit'))).toEqual(before.filter((e) => !e.startsWith('audit')));
    expect(await fs.readFile(path.join(sb.outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET\n');
    expect(await fs.readFile(path.join(sb.project, '.env'), 'utf8')).toBe('OPENAI_API_KEY=sk-test\n');
    await c.check?.(sb);

    // Audit lines never carry a server path in their path field.
    const audit = await fs.readFile(path.join(sb.base, 'audit', 'conv-1.jsonl'), 'utf8');
    for (const line of audit.trim().split('\n')) {
      const entry = JSON.parse(line);
      expect(JSON.stringify(entry.output)).not.toContain(sb.base);
      if (entry.path) expect(entry.path).not.toContain(sb.base);
    }
  });

  it('a parent folder swapped for a symlink between check and write does not let a file land outside', async () => {
    await fs.mkdir(path.join(sb.ctx.outputRoot, 'sub'));
    const target = (await resolvePath('{output_folder}/sub/x.md', sb.ctx, 'write')) as ResolvedPath;
    expect(target.ok).toBe(true);
    await fs.rm(path.join(sb.ctx.outputRoot, 'sub'), { recursive: true });
    await fs.symlink(sb.outside, path.join(sb.ctx.outputRoot, 'sub'));
    const r = await writeFileAtomic(target, Buffer.from('pwned'));
    expect(r).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_VIOLATION' } });
    expect(await fs.readdir(sb.outside)).toEqual(['secret.txt']);
    expect(JSON.stringify(r)).not.toContain(sb.base);
  });

  it('a missing parent created then swapped is re-validated', async () => {
    const target = (await resolvePath('{output_folder}/new/deeper/x.md', sb.ctx, 'write')) as ResolvedPath;
    expect(target.ok).toBe(true);
    await fs.symlink(sb.outside, path.join(sb.ctx.outputRoot, 'new'));
    const r = await writeFileAtomic(target, Buffer.from('pwned'));
    expect(r).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_VIOLATION' } });
    expect(await fs.readdir(sb.outside)).toEqual(['secret.txt']);
  });

  it('a target swapped for a symlink after the check is replaced, not followed', async () => {
    await fs.writeFile(path.join(sb.ctx.outputRoot, 'doc.md'), 'mine');
    const target = (await resolvePath('{output_folder}/doc.md', sb.ctx, 'write')) as ResolvedPath;
    await fs.rm(path.join(sb.ctx.outputRoot, 'doc.md'));
    await fs.symlink(path.join(sb.outside, 'secret.txt'), path.join(sb.ctx.outputRoot, 'doc.md'));
    const r = await writeFileAtomic(target, Buffer.from('pwned'));
    expect(r).toMatchObject({ bytes: 5 });
    expect(await fs.readFile(path.join(sb.outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET\n');
    expect((await fs.lstat(path.join(sb.ctx.outputRoot, 'doc.md'))).isFile()).toBe(true);
  });

  describe('workflow variables', () => {
    const wfDir = () => path.join(sb.ctx.bundleRoot, 'workflows', 'intake');
    const run = () =>
      executeTool(
        { id: 'wf', name: 'execute_workflow', arguments: JSON.stringify({ workflow_path: '{bundle-root}/workflows/intake/workflow.yaml' }) },
        { ...sb.ctx, auditDir: undefined },
      );
    const cases2: Array<[string, string, string, Expect]> = [
      ['{config_source}: value that is an absolute path', 'evil: /etc/passwd\n', 'instructions: "{config_source}:evil"', 'E_SANDBOX_VIOLATION'],
      ['{config_source}: value with traversal', 'evil: "../../../../.env"\n', 'template: "{config_source}:evil"', 'E_SANDBOX_VIOLATION'],
      ['{config_source}: value pointing at the temp folder outside', '', 'instructions: "{config_source}:evil"', 'E_SANDBOX_VIOLATION'],
      ['{config_source}: value using {project-root} outside mounts', 'evil: "{project-root}/.env"\n', 'instructions: "{config_source}:evil"', 'E_SANDBOX_VIOLATION'],
      ['{config_source}: value pointing into another conversation', 'evil: "{project-root}/output/conv-2/x.md"\n', 'instructions: "{config_source}:evil"', 'E_SANDBOX_VIOLATION'],
      ['config_source itself outside the mounts', '', 'config_source: "{project-root}/.env"', 'E_SANDBOX_VIOLATION'],
      ['recursive config values', 'a: "{config_source}:b"\nb: "{config_source}:a"\n', 'instructions: "{config_source}:a"', 'E_UNRESOLVED_VARIABLE'],
      ['config output_folder cannot redirect outputs', 'output_folder: /tmp/evil\n', 'default_output_file: "{config_source}:output_folder/x.md"', 'ok'],
    ];
    it.each(cases2)('%s', async (_name, configExtra, workflowLine, expected) => {
      const evilAbs = path.join(sb.outside, 'secret.txt');
      await fs.writeFile(path.join(sb.ctx.bundleRoot, 'config.yaml'), `user_name: Ada\n${configExtra || `evil: "${evilAbs}"\n`}`);
      await fs.writeFile(path.join(wfDir(), 'instructions.md'), 'steps');
      await fs.writeFile(
        path.join(wfDir(), 'workflow.yaml'),
        `name: intake\n${workflowLine.startsWith('config_source') ? '' : 'config_source: "{bundle-root}/config.yaml"\n'}${workflowLine}\n`,
      );
      const r = await run();
      if (expected === 'ok') {
        expect(r).toMatchObject({ ok: true, workflow: { default_output_file: '{output_folder}/x.md', output_folder: '{output_folder}' } });
      } else {
        expect(r).toMatchObject({ ok: false, error: { code: expected } });
      }
      const text = JSON.stringify(r);
      expect(text).not.toContain('TOP SECRET');
      expect(text).not.toContain('sk-test');
      expect(text).not.toContain('other conversation');
    });
  });
});

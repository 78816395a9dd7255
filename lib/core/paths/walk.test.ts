import { promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { walkFolder, WalkError, type WalkEntry, type WalkOptions } from './walk';

let base: string;
let root: string;
let outside: string;
beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-walk-')));
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  await fs.mkdir(outside, { recursive: true });
  await fs.writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET\n');
  await fs.mkdir(root);
});
afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

async function files(tree: Record<string, string>): Promise<void> {
  for (const [rel, text] of Object.entries(tree)) {
    await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await fs.writeFile(path.join(root, rel), text);
  }
}

async function collect(options?: WalkOptions, from = root): Promise<{ entries: WalkEntry[]; truncated: boolean; tooDeep: boolean }> {
  const walk = walkFolder(from, options);
  const entries: WalkEntry[] = [];
  for await (const e of walk) entries.push(e);
  return { entries, truncated: walk.truncated, tooDeep: walk.tooDeep };
}

const paths = (entries: WalkEntry[]) => entries.map((e) => e.path);

describe('walkFolder', () => {
  it('walks depth first, each folder in code-unit order, with posix paths relative to the root', async () => {
    await files({ 'b.md': 'b', 'a/z.md': 'z', 'a/B.md': 'B', 'a/c/d.md': 'd', 'Z.md': 'Z' });
    const { entries, truncated, tooDeep } = await collect();
    expect(paths(entries)).toEqual(['Z.md', 'a', 'a/B.md', 'a/c', 'a/c/d.md', 'a/z.md', 'b.md']);
    expect(entries.find((e) => e.path === 'a/c/d.md')).toEqual({ name: 'd.md', path: 'a/c/d.md', type: 'file', depth: 2 });
    expect(entries.find((e) => e.path === 'a')).toEqual({ name: 'a', path: 'a', type: 'directory', depth: 0 });
    expect([truncated, tooDeep]).toEqual([false, false]);
  });

  it('skips hidden entries: dotfiles, .env*, .git, temp files of atomic writes', async () => {
    await files({ 'keep.md': 'k', '.env': 'KEY=x', '.env.local': 'KEY=y', '.git/config': 'x', '.plan.md.tmp-0123456789ab': 'half', 'sub/.hidden': 'h' });
    expect(paths((await collect()).entries)).toEqual(['keep.md', 'sub']);
  });

  it('never lists nor follows a symlink: to a file inside, to a folder outside, dangling, a loop', async () => {
    await files({ 'real.md': 'r', 'sub/inner.md': 'i' });
    await fs.symlink(path.join(root, 'real.md'), path.join(root, 'inside.md'));
    await fs.symlink(path.join(root, 'sub'), path.join(root, 'inside-dir'));
    await fs.symlink(outside, path.join(root, 'outside-dir'));
    await fs.symlink(path.join(outside, 'gone.txt'), path.join(root, 'dangling.txt'));
    await fs.symlink(path.join(root, 'loop'), path.join(root, 'loop'));
    for (const options of [{}, { stat: true }, { upkeep: true }]) {
      expect(paths((await collect(options)).entries)).toEqual(['real.md', 'sub', 'sub/inner.md']);
    }
  });

  it('skips what is neither file nor folder', async () => {
    await files({ 'a.md': 'a' });
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(root, 'sock'), resolve));
    try {
      expect(paths((await collect({ upkeep: true })).entries)).toEqual(['a.md']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('lists node_modules without opening it', async () => {
    await files({ 'node_modules/pkg/index.js': '', 'sub/node_modules/x.js': '', 'sub/a.md': 'a' });
    expect(paths((await collect()).entries)).toEqual(['node_modules', 'sub', 'sub/a.md', 'sub/node_modules']);
    // Listing the folder itself is a request for its contents.
    expect(paths((await collect({}, path.join(root, 'node_modules'))).entries)).toEqual(['pkg', 'pkg/index.js']);
  });

  it('upkeep reaches hidden entries and node_modules, never links', async () => {
    await files({ '.drafts/.a.md.tmp-0123456789ab': '', 'node_modules/.b.tmp-0123456789ab': '', 'c.md': '' });
    await fs.symlink(outside, path.join(root, '.link'));
    expect(paths((await collect({ upkeep: true })).entries)).toEqual([
      '.drafts',
      '.drafts/.a.md.tmp-0123456789ab',
      'c.md',
      'node_modules',
      'node_modules/.b.tmp-0123456789ab',
    ]);
  });

  it('recursive: false yields the direct children only', async () => {
    await files({ 'a/b/c.md': 'c', 'd.md': 'd' });
    expect(await collect({ recursive: false })).toEqual({
      entries: [
        { name: 'a', path: 'a', type: 'directory', depth: 0 },
        { name: 'd.md', path: 'd.md', type: 'file', depth: 0 },
      ],
      truncated: false,
      tooDeep: false,
    });
  });

  it('maxDepth yields folders at that depth without opening them, and says so', async () => {
    await files({ 'a/b/c/d.md': 'd', 'x/y.md': 'y' });
    const shallow = await collect({ maxDepth: 1 });
    expect(paths(shallow.entries)).toEqual(['a', 'a/b', 'x', 'x/y.md']);
    expect(shallow.tooDeep).toBe(true);
    const enough = await collect({ maxDepth: 3 });
    expect(paths(enough.entries)).toContain('a/b/c/d.md');
    expect(enough.tooDeep).toBe(false);
  });

  it('maxEntries stops the walk; truncated only when something was left out', async () => {
    await files({ 'a/1.md': '', 'a/2.md': '', 'b.md': '' });
    const cut = await collect({ maxEntries: 2 });
    expect(paths(cut.entries)).toEqual(['a', 'a/1.md']);
    expect(cut.truncated).toBe(true);
    const exact = await collect({ maxEntries: 4 });
    expect(exact.entries).toHaveLength(4);
    expect(exact.truncated).toBe(false);
  });

  it('stat adds size to files and mtime to every entry', async () => {
    await files({ 'a/b.md': 'hello' });
    const { entries } = await collect({ stat: true });
    const mtimeOf = async (rel: string) => (await fs.lstat(path.join(root, rel))).mtime.getTime();
    expect(entries.map((e) => ({ ...e, mtime: e.mtime?.getTime() }))).toEqual([
      { name: 'a', path: 'a', type: 'directory', depth: 0, mtime: await mtimeOf('a') },
      { name: 'b.md', path: 'a/b.md', type: 'file', depth: 1, size: 5, mtime: await mtimeOf('a/b.md') },
    ]);
  });

  it('orders names by a given comparison', async () => {
    await files({ 'b.md': '', 'A.md': '', 'a.md': '' });
    expect(paths((await collect({ compare: (a, b) => (a < b ? 1 : a > b ? -1 : 0) })).entries)).toEqual(['b.md', 'a.md', 'A.md']);
  });

  it('an aborted signal stops the walk before the next folder is read', async () => {
    await files({ 'a/b.md': '', 'c.md': '' });
    const controller = new AbortController();
    const seen: string[] = [];
    const run = async () => {
      for await (const e of walkFolder(root, { signal: controller.signal })) {
        seen.push(e.path);
        controller.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ name: 'WalkError', reason: 'aborted', path: 'a' });
    expect(seen).toEqual(['a']);
  });

  it('an unreadable folder throws with its relative path, or is walked as empty', async () => {
    await files({ 'a.md': '' });
    const missing = path.join(root, 'missing');
    const error = await collect({}, missing).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WalkError);
    expect(error).toMatchObject({ reason: 'unreadable', path: '', cause: { code: 'ENOENT' } });
    expect((await collect({ onUnreadable: 'skip' }, missing)).entries).toEqual([]);
  });

  it('refuses a root that is a link, even to a folder inside', async () => {
    await files({ 'real/a.md': '' });
    await fs.symlink(path.join(root, 'real'), path.join(root, 'alias'));
    const error = await collect({}, path.join(root, 'alias')).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'unreadable', path: '', cause: { code: 'ELOOP' } });
    expect((await collect({ onUnreadable: 'skip' }, path.join(root, 'alias'))).entries).toEqual([]);
  });
});

import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listOutputTree, sweepTempFiles } from '.';

const TEMP = 'tmp-0123456789ab';
let base: string;
let root: string;
let outside: string;
beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-outputs-')));
  root = path.join(base, 'conv-1');
  outside = path.join(base, 'outside');
  await fs.mkdir(root);
  await fs.mkdir(outside);
});
afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

async function write(dir: string, rel: string, text = ''): Promise<void> {
  await fs.mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
  await fs.writeFile(path.join(dir, rel), text);
}

describe('listOutputTree', () => {
  it('is a tree of files and folders in locale order, without hidden entries or links', async () => {
    await write(root, 'B.md', 'bee');
    await write(root, 'a.md', 'a');
    await write(root, 'docs/plan.md', 'plan');
    await write(root, `docs/.plan.md.${TEMP}`, 'half');
    await write(root, '.notes/x.md');
    await write(outside, 'secret.md', 'TOP SECRET');
    await fs.symlink(path.join(outside, 'secret.md'), path.join(root, 'leak.md'));
    await fs.symlink(outside, path.join(root, 'docs', 'elsewhere'));
    await fs.symlink(path.join(root, 'a.md'), path.join(root, 'alias.md'));
    const mtime = async (rel: string) => (await fs.lstat(path.join(root, rel))).mtime.toISOString();
    expect(await listOutputTree(root)).toEqual([
      { path: 'a.md', name: 'a.md', type: 'file', size: 1, modifiedAt: await mtime('a.md') },
      { path: 'B.md', name: 'B.md', type: 'file', size: 3, modifiedAt: await mtime('B.md') },
      {
        path: 'docs',
        name: 'docs',
        type: 'directory',
        modifiedAt: await mtime('docs'),
        children: [{ path: 'docs/plan.md', name: 'plan.md', type: 'file', size: 4, modifiedAt: await mtime('docs/plan.md') }],
      },
    ]);
  });

  it('is empty for a missing folder and for a conversation folder replaced by a link', async () => {
    expect(await listOutputTree(path.join(base, 'missing'))).toEqual([]);
    await write(outside, 'secret.md');
    await fs.rm(root, { recursive: true });
    await fs.symlink(outside, root);
    expect(await listOutputTree(root)).toEqual([]);
  });
});

describe('sweepTempFiles', () => {
  it('removes the temp files of atomic writes wherever a save could leave them, and nothing else', async () => {
    const temps = [`.a.md.${TEMP}`, `docs/.plan.md.${TEMP}`, `.drafts/.x.md.${TEMP}`, `node_modules/.y.md.${TEMP}`];
    const kept = ['a.md', '.env', '.drafts/x.md', `docs/.plan.md.tmp-short`, `docs/plan.md.${TEMP}`];
    for (const rel of [...temps, ...kept]) await write(root, rel);
    expect(await sweepTempFiles(root)).toBe(temps.length);
    for (const rel of temps) await expect(fs.lstat(path.join(root, rel))).rejects.toMatchObject({ code: 'ENOENT' });
    for (const rel of kept) await expect(fs.lstat(path.join(root, rel))).resolves.toBeTruthy();
  });

  it('never deletes through a link', async () => {
    await write(outside, `.z.md.${TEMP}`);
    await fs.symlink(outside, path.join(root, 'elsewhere'));
    await fs.symlink(path.join(outside, `.z.md.${TEMP}`), path.join(root, `.link.md.${TEMP}`));
    expect(await sweepTempFiles(root)).toBe(0);
    await fs.rm(root, { recursive: true });
    await fs.symlink(outside, root);
    expect(await sweepTempFiles(root)).toBe(0);
    await expect(fs.lstat(path.join(outside, `.z.md.${TEMP}`))).resolves.toBeTruthy();
  });
});

import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clearSetIdNoFollow } from './setid';

describe('clearSetIdNoFollow', () => {
  let base: string;
  let root: string;
  let outside: string;
  beforeEach(async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-setid-')));
    root = path.join(base, 'root');
    outside = path.join(base, 'outside');
    await fs.mkdir(root);
    await fs.mkdir(outside);
  });
  afterEach(async () => {
    await fs.rm(base, { recursive: true, force: true });
  });
  const mode = async (p: string) => (await fs.stat(p)).mode & 0o7777;

  it('clears the bits of a file or folder inside, even one its owner cannot read', async () => {
    const file = path.join(root, 'prog');
    await fs.writeFile(file, 'x');
    await fs.chmod(file, 0o4711);
    await fs.mkdir(path.join(root, 'd'));
    await fs.chmod(path.join(root, 'd'), 0o2755);
    const unreadable = path.join(root, 'locked');
    await fs.writeFile(unreadable, 'x');
    await fs.chmod(unreadable, 0o6000);
    expect(await clearSetIdNoFollow(file, [root])).toBe(true);
    expect(await clearSetIdNoFollow(path.join(root, 'd'), [root])).toBe(true);
    expect(await clearSetIdNoFollow(unreadable, [root])).toBe(true);
    expect([await mode(file), await mode(path.join(root, 'd')), await mode(unreadable)]).toEqual([0o711, 0o755, 0o000]);
  });

  it('changes nothing through a link: as the last part, or as a folder on the way', async () => {
    const target = path.join(outside, 'target');
    await fs.writeFile(target, 'x');
    await fs.chmod(target, 0o4755);
    await fs.symlink(target, path.join(root, 'link'));
    await fs.symlink(outside, path.join(root, 'dir'));
    expect(await clearSetIdNoFollow(path.join(root, 'link'), [root])).toBe(false);
    expect(await clearSetIdNoFollow(path.join(root, 'dir', 'target'), [root])).toBe(false);
    expect(await mode(target)).toBe(0o4755);
  });
});

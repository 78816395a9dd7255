import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';

/**
 * Node's file system as isomorphic-git wants it, but writing every file through a temp file and a
 * rename. isomorphic-git writes loose objects in place and never rewrites one that exists, so a
 * process killed mid-write would leave a truncated object that every later write of the same
 * content would trust.
 */
export const gitFs = {
  readFile: fsp.readFile.bind(fsp),
  async writeFile(file: string, data: string | Uint8Array, options?: Parameters<typeof fsp.writeFile>[2]): Promise<void> {
    const tmp = `${file}.tmp-${randomBytes(6).toString('hex')}`;
    try {
      await fsp.writeFile(tmp, data, options);
      await fsp.rename(tmp, file);
    } catch (e) {
      await fsp.unlink(tmp).catch(() => undefined);
      throw e;
    }
  },
  mkdir: fsp.mkdir.bind(fsp),
  rmdir: fsp.rmdir.bind(fsp),
  rm: fsp.rm.bind(fsp),
  unlink: fsp.unlink.bind(fsp),
  stat: fsp.stat.bind(fsp),
  lstat: fsp.lstat.bind(fsp),
  readdir: fsp.readdir.bind(fsp),
  readlink: fsp.readlink.bind(fsp),
  symlink: fsp.symlink.bind(fsp),
};

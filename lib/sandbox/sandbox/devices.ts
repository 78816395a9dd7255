import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { log } from '../../core/log';

/** The device nodes bwrap's `--dev` binds from the host, by name: major and minor numbers. */
const NODES: Array<[string, number, number]> = [
  ['null', 1, 3],
  ['zero', 1, 5],
  ['full', 1, 7],
  ['random', 1, 8],
  ['urandom', 1, 9],
  ['tty', 5, 0],
];

/** Owned by nobody: inside the sandbox nobody is unmapped, so no process there may chmod them. */
const NOBODY = 65534;

let made: Array<[string, string]> | null = null;

/** The options of the mount holding `dir` (a real path), from /proc/self/mountinfo; null when unknown. */
export function mountOptions(dir: string): string[] | null {
  let best = '';
  let options: string[] | null = null;
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 6) continue;
    // Mount points escape spaces and the like as octal.
    const at = f[4].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const inside = at === '/' || dir === at || dir.startsWith(`${at}/`);
    if (inside && at.length >= best.length) {
      best = at;
      options = f[5].split(',');
    }
  }
  return options;
}

/**
 * Where the server runs as root, the sandbox's user is root outside, so the host's device nodes
 * that `bwrap --dev` binds (/dev/null, /dev/zero, ...) are its own: `chmod 000 /dev/null` in a
 * command would change the host's. Instead the sandbox gets nodes of its own, same devices,
 * owned by nobody, made once per process in a private folder. An unprivileged server needs none
 * (the host's nodes belong to root, unmapped inside). Pairs of name and host path; empty when
 * the host's nodes are used.
 */
export function safeDevices(): Array<[string, string]> {
  if (made) return made;
  made = [];
  if (process.getuid?.() !== 0) return made;
  for (const base of [os.tmpdir(), '/var/tmp', '/dev']) {
    let dir: string | null = null;
    try {
      const real = realpathSync(base);
      const options = mountOptions(real);
      if (!options || options.includes('nodev')) continue;
      dir = mkdtempSync(path.join(real, 'bmad-sandbox-dev-'));
      const script = NODES.map(([name, major, minor]) => `mknod -m 666 "$1/${name}" c ${major} ${minor}`).join(' && ');
      execFileSync('/bin/sh', ['-c', `${script} && chown ${NOBODY}:${NOBODY} "$1"/* && chmod 755 "$1"`, 'sh', dir], { env: { PATH: '/usr/bin:/bin' } as unknown as NodeJS.ProcessEnv, stdio: 'ignore', timeout: 10_000 });
      for (const [name, major, minor] of NODES) {
        const st = statSync(path.join(dir, name));
        if (!st.isCharacterDevice() || st.rdev !== ((major << 8) | minor) || st.uid !== NOBODY) throw new Error('unexpected node');
      }
      const folder = dir;
      made = NODES.map(([name]) => [name, path.join(folder, name)]);
      process.once('exit', () => rmSync(folder, { recursive: true, force: true }));
      return made;
    } catch {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }
  log.warn('sandbox.host_devices', { reason: 'the server runs as root and could not make device nodes of its own (mknod refused, or every candidate folder is on a nodev mount); a command can change the permissions of the host\'s /dev/null and the like' });
  return made;
}

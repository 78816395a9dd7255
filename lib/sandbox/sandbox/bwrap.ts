import { lstatSync, readlinkSync } from 'node:fs';
import { safeDevices } from './devices';

/**
 * One bubblewrap invocation, described as data: which host folders appear where, what is hidden,
 * where the command starts. `bwrapArgs` turns it into bwrap's argument list; nothing here runs
 * anything, so the isolation can be read (and tested) as a list of flags.
 */
export type Mount =
  /** A host folder or file, read-only. */
  | { kind: 'ro'; host: string; at: string }
  /** A host folder or file, read-only, left out when the host has none. */
  | { kind: 'ro-try'; host: string; at: string }
  /** A host folder the script may change. */
  | { kind: 'rw'; host: string; at: string }
  /** A folder replaced by an empty read-only one (`.git`, `node_modules`, ...). */
  | { kind: 'hide-dir'; at: string }
  /** A file (or socket, FIFO) replaced by /dev/null on a nodev mount, so opening it is refused. */
  | { kind: 'hide-file'; at: string };

export interface SandboxSpec {
  /** Applied in order after the system mounts: later mounts cover earlier ones. */
  mounts: Mount[];
  cwd: string;
  command: string[];
  /** The whole environment; nothing of the server's is inherited. */
  env: Record<string, string>;
  /** bwrap 0.8 can forbid further user namespaces inside; older ones cannot. */
  disableUserns?: boolean;
  /**
   * The command is the sandbox's pid 1 (no bwrap reaper in front of it): nothing inside can
   * signal it, and when it ends every other process of the sandbox dies with it.
   */
  asPid1?: boolean;
}

/** The user the script runs as inside: never root, whoever runs the server. */
export const SANDBOX_UID = 1000;

/**
 * Namespaces: a user namespace (mapped to the server's user, no capabilities), its own pids (so
 * everything it started dies with it), network (loopback only: nothing outside is reachable, but
 * what a setup's network.ts adds before the command starts), IPC, hostname and cgroup view. It
 * dies with the server, cannot reach the server's terminal, and no capability survives.
 */
function isolation(): string[] {
  return [
    '--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID),
    '--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
    '--hostname', 'sandbox',
    '--die-with-parent', '--new-session', '--cap-drop', 'ALL',
  ];
}

let systemMounts: string[] | null = null;

/**
 * The interpreter and its libraries: /usr read-only, the merged-/usr links (`/bin` → `usr/bin`)
 * as the host has them, the dynamic linker's cache and the local time zone. Never the rest of
 * /etc (passwords, keys, the server's configuration).
 */
function system(): string[] {
  if (systemMounts) return systemMounts;
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    try {
      const st = lstatSync(top);
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
      else if (st.isDirectory()) args.push('--ro-bind', top, top);
    } catch {
      // Not on this host.
    }
  }
  args.push('--ro-bind-try', '/etc/ld.so.cache', '/etc/ld.so.cache', '--ro-bind-try', '/etc/localtime', '/etc/localtime');
  args.push('--proc', '/proc', '--dev', '/dev');
  // bwrap's /dev binds the host's own device nodes: where the sandbox's user is their owner
  // outside (a server running as root), a command could chmod or touch the host's /dev/null.
  for (const [name, host] of safeDevices()) args.push('--dev-bind', host, `/dev/${name}`);
  args.push('--tmpfs', '/tmp');
  systemMounts = args;
  return args;
}

/** bwrap's whole argument list, options then `--` and the command. */
export function bwrapArgs(spec: SandboxSpec): string[] {
  return [...bwrapOptions(spec), '--', ...spec.command];
}

/**
 * The options (namespaces, mounts, environment) apart from the command: `runSandboxed` hands
 * them to bwrap on a file descriptor (`--args`), so no host path ever appears in the command line
 * of a process inside, where /proc/1/cmdline would show it.
 */
export function bwrapOptions(spec: SandboxSpec): string[] {
  const args = isolation();
  if (spec.disableUserns) args.push('--disable-userns');
  if (spec.asPid1) args.push('--as-pid-1');
  args.push(...system());
  for (const m of spec.mounts) {
    switch (m.kind) {
      case 'ro':
        args.push('--ro-bind', m.host, m.at);
        break;
      case 'ro-try':
        args.push('--ro-bind-try', m.host, m.at);
        break;
      case 'rw':
        args.push('--bind', m.host, m.at);
        break;
      case 'hide-dir':
        args.push('--tmpfs', m.at, '--remount-ro', m.at);
        break;
      case 'hide-file':
        args.push('--ro-bind', '/dev/null', m.at);
        break;
    }
  }
  args.push('--chdir', spec.cwd, '--clearenv');
  for (const [k, v] of Object.entries(spec.env)) args.push('--setenv', k, v);
  return args;
}

/** The environment a script gets: a fixed PATH and locale, HOME and TMPDIR in its private /tmp. */
export const SANDBOX_ENV: Record<string, string> = {
  PATH: '/usr/bin:/bin',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  HOME: '/tmp',
  TMPDIR: '/tmp',
};

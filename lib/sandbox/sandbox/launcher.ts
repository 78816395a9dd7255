import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/**
 * A process started ahead of a run, already inside the run's cgroups, waiting for the program to
 * become. Moving a process into a cgroup waits for the kernel's RCU grace period (milliseconds
 * each, one per hierarchy on cgroup v1, longer on a busy host), and forking the server costs a
 * few more: done while the previous run is still going, neither is paid when a command starts.
 * It is the server's own shell with an empty environment, reading nothing but the server's pipe;
 * what it becomes (bwrap) gets its stdio exactly as a fresh spawn would give it: stdin /dev/null,
 * stdout, stderr, the report channel (fd 3) and bwrap's options (fd 4).
 */
export interface Launcher {
  readonly child: ChildProcess;
  /** False once it has ended (its cgroup was gone, or it was disposed of) or been used. */
  usable(): boolean;
  /** Becomes `file` with `args`; the caller listens on child from now on. */
  exec(file: string, args: string[]): ChildProcess;
  /** Ends it unused. */
  dispose(): void;
}

/**
 * Joins each cgroup.procs file given (as the wrapper does with its descriptors), then reads the
 * program and its arguments NUL-separated from stdin, lets go of that pipe and becomes it. A
 * failed join ends it with the wrapper's message and status, before anything else runs.
 */
const LAUNCH = [
  'for f; do echo 0 > "$f" || { echo "sandbox: the command could not join its cgroup; nothing was run" >&2; exit 125; }; done',
  "mapfile -d '' -t a",
  'exec </dev/null',
  '[ ${#a[@]} -gt 0 ] || exit 125',
  'exec "${a[@]}"',
].join('\n');

export function startLauncher(procsFiles: string[]): Launcher {
  const child = spawn('/bin/bash', ['--noprofile', '--norc', '-c', LAUNCH, 'launcher', ...procsFiles], {
    // stdin (the program to become), stdout, stderr, the report channel and bwrap's options.
    stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
    detached: true,
    env: {} as NodeJS.ProcessEnv,
  });
  let ended = false;
  let used = false;
  child.on('exit', () => {
    ended = true;
  });
  child.on('error', () => {
    ended = true;
  });
  // Waiting costs the server nothing: neither the process nor its pipes keep it alive.
  const handles = () => child.stdio.filter((s): s is Readable | Writable => !!s) as Array<(Readable | Writable) & { ref?: () => void; unref?: () => void }>;
  for (const s of handles()) {
    s.on('error', () => undefined);
    s.unref?.();
  }
  child.unref();
  return {
    child,
    usable: () => !ended && !used && child.pid !== undefined,
    exec(file, args) {
      // One argument holding a NUL would come out as two.
      if ([file, ...args].some((a) => a.includes('\0'))) throw new Error('an argument holds a NUL byte');
      used = true;
      child.ref();
      for (const s of handles()) s.ref?.();
      (child.stdin as Writable).end(Buffer.from([file, ...args].map((a) => `${a}\0`).join('')));
      return child;
    },
    dispose() {
      if (used || ended || child.pid === undefined) return;
      used = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      for (const s of handles()) s.destroy();
    },
  };
}

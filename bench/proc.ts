/** Processes the benchmark starts, and what /proc says about them (CPU time and RSS of a process tree). */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { appEnv, freePort, REPO, waitHealthy, type Folders } from '../e2e/support';

export { makeFolders, REPO, type Folders } from '../e2e/support';


let clkTck = 0;
function ticksPerSecond(): number {
  if (!clkTck) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** Fields of /proc/<pid>/stat after the command name: [0] = state (field 3), [1] = ppid, [11] = utime, [12] = stime, [13] = cutime, [14] = cstime. */
function statFields(pid: number): string[] | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The pid and every live descendant (`next start` may run the server in a child process). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(Number(name));
    if (!f) continue;
    const ppid = Number(f[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(children.get(p) ?? []));
  }
  return out;
}

/** user + sys CPU milliseconds of a process tree (all threads; live processes only). */
export function treeCpuMs(root: number): { userMs: number; sysMs: number } {
  const hz = ticksPerSecond();
  let u = 0;
  let s = 0;
  for (const pid of processTree(root)) {
    const f = statFields(pid);
    if (!f) continue;
    u += Number(f[11]);
    s += Number(f[12]);
  }
  return { userMs: (u * 1000) / hz, sysMs: (s * 1000) / hz };
}

/**
 * CPU milliseconds of a process tree, split into the root's own and everything under it: each live
 * process's time and what it has already waited for (cutime + cstime, its children that ended), so
 * a difference of two readings counts a child that ended between them once.
 */
export function treeCpuSplitMs(root: number): { ownMs: number; underMs: number } {
  const hz = ticksPerSecond();
  let own = 0;
  let under = 0;
  for (const pid of processTree(root)) {
    const f = statFields(pid);
    if (!f) continue;
    const self = Number(f[11]) + Number(f[12]);
    const reaped = Number(f[13]) + Number(f[14]);
    if (pid === root) {
      own += self;
      under += reaped;
    } else under += self + reaped;
  }
  return { ownMs: (own * 1000) / hz, underMs: (under * 1000) / hz };
}

/** Resident set size of a process tree, in MB. */
export function treeRssMb(root: number): number {
  let kb = 0;
  for (const pid of processTree(root)) {
    try {
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // gone
    }
  }
  return kb / 1024;
}

export interface Started {
  proc: ChildProcess;
  pid: number;
  stop(): Promise<void>;
}

function stopper(proc: ChildProcess): () => Promise<void> {
  const exited = new Promise<void>((resolve) => (proc.exitCode !== null ? resolve() : proc.once('exit', () => resolve())));
  return async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    const t = setTimeout(() => proc.exitCode === null && proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  };
}

export interface BenchModel extends Started {
  url: string;
  control: string;
}

export async function startModel(ttftMs: number, tokenDelayMs: number, extra: string[] = []): Promise<BenchModel> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'bench/model.ts'), '--ttft-ms', String(ttftMs), '--token-delay-ms', String(tokenDelayMs), ...extra], {
    cwd: REPO,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await new Promise<{ url: string; control: string }>((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout! });
    rl.on('line', (line) => {
      try {
        const v = JSON.parse(line) as { event?: string; url: string; control: string };
        if (v.event === 'bench-model.ready') resolve(v);
      } catch {
        // not ours
      }
    });
    proc.once('exit', (code) => reject(new Error(`bench model exited (${code})`)));
    setTimeout(() => reject(new Error('bench model did not start within 30 s')), 30_000);
  });
  return { proc, pid: proc.pid!, url: ready.url, control: ready.control, stop: stopper(proc) };
}

export interface AppServer extends Started {
  url: string;
  logFile: string;
}

/**
 * `next start` on the production build, logging as in production (JSON lines at info, to a file
 * rather than a pipe the driver would have to drain).
 */
export async function startApp(appDir: string, folders: Folders, env: Record<string, string>, nodeArgs: string[] = []): Promise<AppServer> {
  const port = await freePort();
  const logFile = path.join(folders.root, `server-${port}.log`);
  const fd = fs.openSync(logFile, 'a');
  const proc = spawn(process.execPath, [...nodeArgs, path.join(REPO, 'node_modules/next/dist/bin/next'), 'start', appDir, '-p', String(port), '-H', '127.0.0.1'], {
    cwd: appDir,
    env: appEnv(folders, { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', ...env }),
    stdio: ['ignore', fd, fd],
  });
  fs.closeSync(fd);
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, proc, () => fs.readFileSync(logFile, 'utf8').slice(-3000));
  return { proc, pid: proc.pid!, url, logFile, stop: stopper(proc) };
}

function buildRunning(): boolean {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (/next(\/dist\/bin\/next)? build|next-build/.test(cmd)) return true;
    } catch {
      // gone
    }
  }
  return false;
}

async function sleep(ms: number) {
  await new Promise((r) => setTimeout(r, ms));
}

/**
 * A private copy of the production build, so another engineer's `next build` (e2e runs rebuild)
 * cannot swap files under the running benchmark. Builds once when there is no build and nobody
 * is building; otherwise waits for the running build.
 */
export async function snapshotBuild(log: (s: string) => void): Promise<{ appDir: string; buildId: string }> {
  const dist = path.join(REPO, '.next');
  const idFile = path.join(dist, 'BUILD_ID');
  const deadline = Date.now() + 15 * 60_000;
  let built = false;
  for (;;) {
    if (Date.now() > deadline) throw new Error('no stable production build within 15 minutes');
    if (buildRunning()) {
      log('a `next build` is running; waiting for it');
      await sleep(3000);
      continue;
    }
    if (!fs.existsSync(idFile)) {
      if (built) throw new Error('next build finished without .next/BUILD_ID');
      log('no production build: running `next build`');
      execFileSync(process.execPath, [path.join(REPO, 'node_modules/next/dist/bin/next'), 'build'], {
        cwd: REPO,
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
      });
      built = true;
      continue;
    }
    const buildId = fs.readFileSync(idFile, 'utf8').trim();
    const appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-bench-app-'));
    try {
      fs.cpSync(dist, path.join(appDir, '.next'), {
        recursive: true,
        verbatimSymlinks: true,
        filter: (src) => !['cache', 'dev', 'trace', 'diagnostics'].includes(path.relative(dist, src).split(path.sep)[0]),
      });
    } catch {
      fs.rmSync(appDir, { recursive: true, force: true });
      await sleep(2000);
      continue;
    }
    const same = fs.existsSync(idFile) && fs.readFileSync(idFile, 'utf8').trim() === buildId && !buildRunning();
    if (!same) {
      fs.rmSync(appDir, { recursive: true, force: true });
      continue;
    }
    for (const f of ['node_modules']) fs.symlinkSync(path.join(REPO, f), path.join(appDir, f));
    for (const f of ['package.json', 'next.config.js']) fs.copyFileSync(path.join(REPO, f), path.join(appDir, f));
    if (fs.existsSync(path.join(REPO, 'public'))) fs.symlinkSync(path.join(REPO, 'public'), path.join(appDir, 'public'));
    return { appDir, buildId };
  }
}

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { startLauncher, type Launcher } from './launcher';

/**
 * A cgroup of its own for one run, where the host lets the server make one: a hard cap on the
 * number of processes and on the memory of everything the script starts together. Process
 * limits (rlimits) cannot do either when the server runs as root (the kernel exempts root from
 * RLIMIT_NPROC, and RLIMIT_AS counts one process at a time), so a fork bomb is held by the pids
 * controller here, or else only by the pid namespace and the time limit.
 */
export interface RunCgroup {
  /** `cgroup.procs` files the run's first process writes its own pid into before anything else. */
  procsFiles: string[];
  /** Which limits hold: 'pids', 'memory'. */
  controllers: string[];
  /** True when the memory controller killed a process of the run. */
  memoryExceeded(): Promise<boolean>;
  /** A process already in the group waiting to become the run's first (see launcher.ts), once; null when none was made or it ended. */
  takeLauncher(): Launcher | null;
  dispose(): Promise<void>;
}

const ROOT = '/sys/fs/cgroup';
const GROUP = 'bmad-scripts';

interface Hierarchy {
  version: 1 | 2;
  /** The server's own cgroup folder in this hierarchy. */
  own: string;
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(() => true, () => false);
}

/** Where the server's cgroup is, per controller, from /proc/self/cgroup. */
async function hierarchies(): Promise<Record<'pids' | 'memory', Hierarchy | null>> {
  const found: Record<'pids' | 'memory', Hierarchy | null> = { pids: null, memory: null };
  const text = await fs.readFile('/proc/self/cgroup', 'utf8').catch(() => '');
  let unified: string | null = null;
  for (const line of text.split('\n')) {
    const [, controllers, where] = line.split(':');
    if (where === undefined) continue;
    if (controllers === '') unified = where;
    for (const c of ['pids', 'memory'] as const) {
      if (controllers.split(',').includes(c) && (await exists(path.join(ROOT, c, 'cgroup.procs')))) {
        found[c] = { version: 1, own: path.join(ROOT, c, where) };
      }
    }
  }
  if (unified !== null) {
    const base = (await exists(path.join(ROOT, 'cgroup.controllers'))) ? ROOT : path.join(ROOT, 'unified');
    const available = await fs.readFile(path.join(base, unified, 'cgroup.controllers'), 'utf8').catch(() => '');
    for (const c of ['pids', 'memory'] as const) {
      if (!found[c] && available.split(/\s+/).includes(c)) found[c] = { version: 2, own: path.join(base, unified) };
    }
  }
  return found;
}

let cached: Promise<Record<'pids' | 'memory', Hierarchy | null>> | null = null;
const cleaned = new Set<string>();

/** A group younger than this may be another process's, made ahead for its next run. */
const YOUNG_MS = 10 * 60_000;

/**
 * Run folders left by a server that died mid-run; empty ones are removed, busy ones kept, and
 * young ones too (`run-<time>-...`: another process's group made ahead and not used yet).
 */
async function removeStale(parent: string): Promise<void> {
  if (cleaned.has(parent)) return;
  cleaned.add(parent);
  const names = await fs.readdir(parent).catch(() => [] as string[]);
  const young = (n: string) => {
    const made = parseInt(n.split('-')[1] ?? '', 36);
    return Number.isFinite(made) && Math.abs(Date.now() - made) < YOUNG_MS;
  };
  await Promise.all(names.filter((n) => n.startsWith('run-') && !young(n)).map((n) => fs.rmdir(path.join(parent, n)).catch(() => undefined)));
}

async function write(file: string, value: string): Promise<boolean> {
  return fs.writeFile(file, value).then(() => true, () => false);
}

async function makeGroup(h: Hierarchy, controller: 'pids' | 'memory', name: string): Promise<string | null> {
  const parent = path.join(h.own, GROUP);
  try {
    await fs.mkdir(parent, { recursive: true });
  } catch {
    return null;
  }
  if (h.version === 2) {
    // A v2 controller reaches a child only when each parent hands it down.
    await write(path.join(h.own, 'cgroup.subtree_control'), `+${controller}`);
    await write(path.join(parent, 'cgroup.subtree_control'), `+${controller}`);
  }
  await removeStale(parent);
  const dir = path.join(parent, name);
  try {
    await fs.mkdir(dir);
  } catch {
    return null;
  }
  if (h.version === 2) {
    const available = await fs.readFile(path.join(dir, 'cgroup.controllers'), 'utf8').catch(() => '');
    if (!available.split(/\s+/).includes(controller)) {
      await fs.rmdir(dir).catch(() => undefined);
      return null;
    }
  }
  return dir;
}

async function emptyAndRemove(dir: string, version: 1 | 2): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    if (version === 2) await write(path.join(dir, 'cgroup.kill'), '1');
    const pids = (await fs.readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => ''))
      .split('\n')
      .map(Number)
      .filter((n) => n > 0);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    const removed = await fs.rmdir(dir).then(() => true, (e: NodeJS.ErrnoException) => e.code === 'ENOENT');
    if (removed) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Memory and, where the host has swap, memory plus swap: a script never swaps past the limit. */
async function limitMemory(dir: string, version: 1 | 2, bytes: number): Promise<boolean> {
  if (version === 2) {
    const ok = await write(path.join(dir, 'memory.max'), String(bytes));
    await write(path.join(dir, 'memory.swap.max'), '0');
    return ok;
  }
  const ok = await write(path.join(dir, 'memory.limit_in_bytes'), String(bytes));
  await write(path.join(dir, 'memory.memsw.limit_in_bytes'), String(bytes));
  return ok;
}

/** One group made ahead for the next run with the same limits, so a run does not wait for the mkdirs. */
let spare: { key: string; group: Promise<RunCgroup | null> } | null = null;

/**
 * A cgroup for one run, or null when the host does not let the server make one. Each run gets a
 * fresh group; the next one is made in the background meanwhile.
 */
export async function createRunCgroup(limits: { maxProcesses: number; memoryBytes: number }): Promise<RunCgroup | null> {
  const key = `${limits.maxProcesses}:${limits.memoryBytes}`;
  const ready = spare?.key === key ? spare.group : null;
  if (spare && !ready) void spare.group.then((g) => g?.dispose()).catch(() => undefined);
  const next = makeRunCgroup(limits, true);
  next.catch(() => undefined);
  spare = { key, group: next };
  if (ready) {
    const group = await ready.catch(() => null);
    // Another process cleaning up may have removed it meanwhile: then a fresh one.
    if (group && (await Promise.all(group.procsFiles.map(exists))).every(Boolean)) return group;
    void group?.dispose().catch(() => undefined);
  }
  return makeRunCgroup(limits);
}

async function makeRunCgroup(limits: { maxProcesses: number; memoryBytes: number }, withLauncher = false): Promise<RunCgroup | null> {
  cached ??= hierarchies();
  const found = await cached;
  // No pid of the server in it: a command reads its own group's name in /proc/self/cgroup.
  const name = `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  const made: Array<{ dir: string; version: 1 | 2; controller: 'pids' | 'memory' }> = [];
  for (const controller of ['pids', 'memory'] as const) {
    const h = found[controller];
    if (!h) continue;
    // One v2 group carries both controllers.
    const shared = h.version === 2 ? made.find((m) => m.version === 2) : undefined;
    const dir = shared?.dir ?? (await makeGroup(h, controller, name));
    if (!dir) continue;
    const ok =
      controller === 'pids'
        ? await write(path.join(dir, 'pids.max'), String(limits.maxProcesses))
        : await limitMemory(dir, h.version, limits.memoryBytes);
    if (ok) made.push({ dir, version: h.version, controller });
    else if (!shared) await fs.rmdir(dir).catch(() => undefined);
  }
  if (!made.length) return null;
  const dirs = [...new Map(made.map((m) => [m.dir, m])).values()];
  const procsFiles = dirs.map((m) => path.join(m.dir, 'cgroup.procs'));
  let launcher: Launcher | null = null;
  if (withLauncher) {
    try {
      launcher = startLauncher(procsFiles);
    } catch {
      launcher = null;
    }
  }
  return {
    procsFiles,
    controllers: made.map((m) => m.controller),
    async memoryExceeded() {
      const m = made.find((x) => x.controller === 'memory');
      if (!m) return false;
      const text = await fs.readFile(path.join(m.dir, m.version === 1 ? 'memory.oom_control' : 'memory.events'), 'utf8').catch(() => '');
      return /^oom_kill\s+[1-9]/m.test(text);
    },
    takeLauncher() {
      const l = launcher;
      launcher = null;
      return l?.usable() ? l : null;
    },
    async dispose() {
      launcher?.dispose();
      launcher = null;
      await Promise.all(dirs.map((m) => emptyAndRemove(m.dir, m.version)));
    },
  };
}

import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { performance } from 'node:perf_hooks';

/**
 * A workspace's disk use (checkout with its .git, and its temp folder) against WORKSPACE_MAX_MB,
 * at little cost to short commands: du(1) runs in a process of its own (it follows no link and
 * stays on one file system), and between two du runs the growth of the file systems holding the
 * folders (statfs, one system call) says when to look again. A command that passes the quota is
 * stopped by its watch; the usage is kept per checkout, so the next command knows it at once.
 */

export interface Usage {
  bytes: number;
  /** When du measured it (ms, performance.now()). */
  at: number;
}

const known = new Map<string, Usage>();

/** Bytes in use by the folders (du's disk usage, hard links once), or null when du failed. */
export function measure(dirs: string[]): Promise<number | null> {
  return new Promise((resolve) => {
    execFile('/usr/bin/du', ['-s', '-k', '-x', '-c', '--', ...dirs], { env: {} as NodeJS.ProcessEnv, timeout: 300_000, maxBuffer: 1_000_000 }, (_e, stdout) => {
      // du exits 1 when a file vanished meanwhile; its total still stands.
      const total = /^(\d+)\s+total$/m.exec(String(stdout));
      resolve(total ? Number(total[1]) * 1024 : null);
    });
  });
}

/** The last usage measured for this checkout in this process. */
export function lastUsage(checkout: string): Usage | undefined {
  return known.get(checkout);
}

/** Keeps a usage: measured by du now, or estimated (keeping when du last measured). */
export function rememberUsage(checkout: string, bytes: number, measured = true): void {
  known.set(checkout, { bytes, at: measured ? performance.now() : (known.get(checkout)?.at ?? -Infinity) });
}

/** Past this, an estimate is measured again (in the background) after a command. */
const REMEASURE_MS = 60_000;

/** Used bytes of each file system holding one of the folders, by device. */
async function fsUsed(dirs: string[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  await Promise.all(
    dirs.map(async (d) => {
      const [st, sf] = await Promise.all([fs.stat(d).catch(() => null), fs.statfs(d).catch(() => null)]);
      if (st && sf) out.set(st.dev, (sf.blocks - sf.bfree) * sf.bsize);
    }),
  );
  return out;
}

function growth(from: Map<number, number>, to: Map<number, number>): number {
  let g = 0;
  for (const [dev, used] of to) g += used - (from.get(dev) ?? used);
  return g;
}

/** How often the file systems are looked at while a command runs, and du run at least. */
const STATFS_MS = 250;
const DU_MIN_MS = 2_000;

export interface QuotaWatch {
  /** The quota was passed while the command ran (onExceeded was called). */
  readonly exceeded: boolean;
  /** Ends the watch; resolves with the usage as best known then (measured when in doubt). */
  finish(): Promise<number | null>;
}

/**
 * Watches the folders while a command runs: du at most every DU_MIN_MS (or ten times as long as
 * du itself takes), sooner when the file systems grew past what is left of the quota. The first
 * du runs after DU_MIN_MS, so a short command costs two statfs calls.
 */
export function watchQuota(checkout: string, dirs: string[], maxBytes: number, onExceeded: () => void): QuotaWatch {
  let base = known.get(checkout)?.bytes ?? null;
  let baseFs: Map<number, number> | null = null;
  let exceeded = false;
  let stopped = false;
  let running: Promise<void> | null = null;
  let lastDu = performance.now();
  let duCost = 0;
  const started = performance.now();
  const ready = fsUsed(dirs).then((m) => {
    baseFs = m;
  });

  const du = (): Promise<void> => {
    running ??= (async () => {
      const fsAt = await fsUsed(dirs);
      const t = performance.now();
      const bytes = await measure(dirs);
      duCost = performance.now() - t;
      lastDu = performance.now();
      if (bytes !== null) {
        base = bytes;
        baseFs = fsAt;
        rememberUsage(checkout, bytes);
        if (bytes > maxBytes && !stopped && !exceeded) {
          exceeded = true;
          onExceeded();
        }
      }
    })().finally(() => {
      running = null;
    });
    return running;
  };

  const timer = setInterval(() => {
    if (stopped || running || exceeded) return;
    const now = performance.now();
    if (now - started >= DU_MIN_MS && now - lastDu >= Math.max(DU_MIN_MS, duCost * 10)) {
      void du();
      return;
    }
    if (base === null || !baseFs) return;
    const from = baseFs;
    const b = base;
    void fsUsed(dirs).then((m) => {
      if (!stopped && !running && b + growth(from, m) > maxBytes) void du();
    });
  }, STATFS_MS);
  timer.unref?.();

  return {
    get exceeded() {
      return exceeded;
    },
    async finish() {
      stopped = true;
      clearInterval(timer);
      await ready;
      if (running) await running;
      if (exceeded) return base;
      // Nothing measured in this process yet, or the file systems grew past the quota: measure.
      const estimate = base !== null && baseFs ? base + growth(baseFs, await fsUsed(dirs)) : null;
      if (estimate === null || estimate > maxBytes) {
        const bytes = await measure(dirs);
        if (bytes !== null) rememberUsage(checkout, bytes);
        return bytes;
      }
      rememberUsage(checkout, Math.max(0, estimate), false);
      if (performance.now() - (known.get(checkout)?.at ?? -Infinity) > REMEASURE_MS) {
        // Other writers on the same file systems blur the estimate now and then: du again, unawaited.
        void measure(dirs).then((bytes) => bytes !== null && rememberUsage(checkout, bytes));
      }
      return estimate;
    },
  };
}

/**
 * A line that only removes files: `rm`, options, plain paths (globs allowed; no variables,
 * substitutions, redirections or second commands). The one kind of command a workspace over its
 * quota still runs, so the model can make room.
 */
export function onlyRemoves(line: string): boolean {
  return /^\s*rm(\s+-[-A-Za-z]*)*(\s+[A-Za-z0-9_.\/@%+,:=*-]+)+\s*$/.test(line);
}

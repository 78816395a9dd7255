// A turn lease names its holder (host, pid, store instance, process start time), so a lock is
// only honoured while its holder could still be running: a `kill -9` never leaves a conversation
// busy forever, even when another process has taken the dead holder's pid.
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import os from 'node:os';

// Holders (store instances) open in this process, by nonce. Kept on globalThis so that a dev-mode
// module reload, which builds a fresh copy of this module, still sees the leases of the old one.
const LIVE_KEY = Symbol.for('bmad-orchestrator.conversations.liveStores');
const liveHolders: Set<string> = ((globalThis as Record<symbol, unknown>)[LIVE_KEY] ??= new Set<string>()) as Set<string>;

/**
 * When a process started (clock ticks since boot, /proc/<pid>/stat field 22), or null where
 * /proc is missing. With the pid it names one process for good: a reused pid has a new start time.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

const OWN_START = processStartTime(process.pid);

/** Who holds a lease: host, pid, holder instance and the process's start time. */
export interface HolderIdentity {
  host: string;
  pid: number;
  nonce: string;
  started: string | null;
}

/** The text stored with a lease; isHolderAlive reads it back. */
export function encodeHolder(h: HolderIdentity): string {
  return JSON.stringify([h.host, h.pid, h.nonce, h.started]);
}

export interface LeaseHolder {
  /** This holder's encoded identity, to store with every lease it takes. */
  readonly tag: string;
  /** From now on its leases count as dead; call when the store closes. */
  release(): void;
}

/** A new holder in this process, alive until released. */
export function registerHolder(): LeaseHolder {
  const nonce = randomUUID();
  liveHolders.add(nonce);
  return {
    tag: encodeHolder({ host: os.hostname(), pid: process.pid, nonce, started: OWN_START }),
    release: () => void liveHolders.delete(nonce),
  };
}

/** Whether a holder's tag names this host (a holder elsewhere cannot be looked up from here). */
export function isHolderOnThisHost(tag: string | null): boolean {
  try {
    const parsed: unknown = tag ? JSON.parse(tag) : null;
    return Array.isArray(parsed) && parsed[0] === os.hostname();
  } catch {
    return false;
  }
}

export function isHolderAlive(tag: string | null): boolean {
  let parsed: unknown;
  try {
    parsed = tag ? JSON.parse(tag) : null;
  } catch {
    return false;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) return false;
  const [host, pid, nonce, started] = parsed as [unknown, unknown, unknown, unknown];
  // Leases are shared through one SQLite file, and its WAL mode only works between processes on
  // one host (shared memory), so a holder on another host is a previous incarnation of this
  // machine or container: gone.
  if (host !== os.hostname() || typeof pid !== 'number') return false;
  // Same pid: either us, or a process before a restart that reused our pid (common as pid 1 in
  // containers); only our own open holders count.
  if (pid === process.pid) return typeof nonce === 'string' && liveHolders.has(nonce);
  if (typeof started === 'string') {
    const now = processStartTime(pid);
    if (now !== null) return now === started;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

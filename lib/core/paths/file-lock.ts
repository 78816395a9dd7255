import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * An async mutex per key: callers with one key run one at a time, in arrival order; other keys
 * are not held up. Nothing is held across processes (withFileLock adds that).
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => done);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      // The last holder clears its key, so the map holds only keys that someone is waiting on.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys held or waited on now (for tests and diagnostics). */
  get size(): number {
    return this.tails.size;
  }
}

// On globalThis so that one file has one lock even when a bundler loads this module twice
// (dev-mode reloads, one copy per route bundle).
const KEY = Symbol.for('bmad-orchestrator.paths.fileLocks');
const fileLocks: KeyedLock = ((globalThis as Record<symbol, unknown>)[KEY] ??= new KeyedLock()) as KeyedLock;

/**
 * Runs `fn` holding the lock of one file, keyed by its real absolute path (a `ResolvedPath.abs`),
 * so two writers reaching one file through different names still queue: first this process's
 * lock, then a lock file every process sharing the lock folder sees (several instances on one
 * shared volume).
 */
export function withFileLock<T>(abs: string, fn: () => Promise<T>, opts: LockWait = {}): Promise<T> {
  return fileLocks.run(abs, async () => {
    const release = await acquireLockFile(abs, opts);
    try {
      return await fn();
    } finally {
      await release();
    }
  });
}

// Where the lock files live: every instance writing the same files must use the same folder (the
// runtime puts it in DATA_DIR, which instances share); without one, this host's temp folder.
const FOLDER_KEY = Symbol.for('bmad-orchestrator.paths.fileLockFolder');
const settings = ((globalThis as Record<symbol, unknown>)[FOLDER_KEY] ??= { folder: path.join(os.tmpdir(), 'bmad-orchestrator-locks') }) as { folder: string };

/** The folder of the cross-process lock files. */
export function setFileLockFolder(folder: string): void {
  settings.folder = folder;
}

/** Where the cross-process lock files are (shared by the instances that share files). */
export function fileLockFolder(): string {
  return settings.folder;
}

export interface LockWait {
  /** Longest wait for another process's hold (WAIT_MS when not said); past it the call fails. */
  waitMs?: number;
  /** Stops waiting for another process's hold (the call fails with the signal's reason). */
  signal?: AbortSignal;
}

/** How long a lock file is refreshed, and after what silence another host takes it as abandoned. */
const REFRESH_MS = 2_000;
const STALE_MS = 15_000;
/** Longer than any write under the lock takes; past it the waiter fails rather than hangs. */
const WAIT_MS = 60_000;

const HOST = os.hostname();
const OWN_START = startTimeOf(process.pid);
// Lock files this process holds now, by nonce: one of ours with another nonce was left by an
// earlier process that had our pid (a container restarted).
const HELD_KEY = Symbol.for('bmad-orchestrator.paths.heldLockFiles');
const heldNonces = ((globalThis as Record<symbol, unknown>)[HELD_KEY] ??= new Set<string>()) as Set<string>;

function startTimeOf(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

interface LockOwner {
  host: string;
  pid: number;
  started: string | null;
  nonce: string;
}

/** Whether the lock file's writer is gone: a dead process on this host, or silence from another. */
function isAbandoned(owner: LockOwner | null, mtimeMs: number): boolean {
  if (Date.now() - mtimeMs > STALE_MS) return true;
  // Unreadable: being written this instant, or junk; the age above decides.
  if (!owner) return false;
  if (owner.host !== HOST) return false;
  if (owner.pid === process.pid) return owner.started !== OWN_START || !heldNonces.has(owner.nonce);
  if (owner.started !== null) {
    const now = startTimeOf(owner.pid);
    if (now !== null) return now !== owner.started;
  }
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

function readOwner(text: string): LockOwner | null {
  try {
    const o = JSON.parse(text) as LockOwner;
    return o && typeof o.host === 'string' && typeof o.pid === 'number' && typeof o.nonce === 'string' ? o : null;
  } catch {
    return null;
  }
}

/**
 * Takes the file's lock file (created with O_EXCL, so one process wins), waiting while a live
 * holder has it; resolves with its release. The holder touches it while it holds it, so a holder
 * on another host that died is recognised by its silence.
 */
async function acquireLockFile(abs: string, opts: LockWait): Promise<() => Promise<void>> {
  const folder = settings.folder;
  const file = path.join(folder, `${createHash('sha256').update(abs).digest('hex').slice(0, 40)}.lock`);
  const me: LockOwner = { host: HOST, pid: process.pid, started: OWN_START, nonce: randomUUID() };
  const text = JSON.stringify(me);
  const deadline = Date.now() + (opts.waitMs ?? WAIT_MS);
  for (let delay = 2; ; delay = Math.min(50, delay * 2)) {
    try {
      await fsp.writeFile(file, text, { flag: 'wx' });
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        await fsp.mkdir(folder, { recursive: true });
        continue;
      }
      if (code !== 'EEXIST') throw e;
    }
    const [content, st] = await Promise.all([fsp.readFile(file, 'utf8').catch(() => null), fsp.stat(file).catch(() => null)]);
    if (content === null || st === null) continue;
    if (isAbandoned(readOwner(content), st.mtimeMs)) {
      // Removed only while it still holds what was judged abandoned (another waiter may have
      // replaced it meanwhile); a narrow window remains between this read and the unlink.
      if ((await fsp.readFile(file, 'utf8').catch(() => null)) === content) await fsp.unlink(file).catch(() => undefined);
      continue;
    }
    if (Date.now() > deadline) throw new Error('A file stayed locked by another process for too long; try again.');
    opts.signal?.throwIfAborted();
    await new Promise((r) => setTimeout(r, delay));
  }
  heldNonces.add(me.nonce);
  const refresh = setInterval(() => {
    const now = new Date();
    void fsp.utimes(file, now, now).catch(() => undefined);
  }, REFRESH_MS);
  refresh.unref?.();
  return async () => {
    clearInterval(refresh);
    heldNonces.delete(me.nonce);
    if ((await fsp.readFile(file, 'utf8').catch(() => null)) === text) await fsp.unlink(file).catch(() => undefined);
  };
}

/**
 * An async mutex per key: callers with one key run one at a time, in arrival order; other keys
 * are not held up. Nothing is held across processes.
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
 * Runs `fn` holding the process-wide lock of one file, keyed by its real absolute path (a
 * `ResolvedPath.abs`), so two writers reaching one file through different names still queue.
 */
export function withFileLock<T>(abs: string, fn: () => Promise<T>): Promise<T> {
  return fileLocks.run(abs, fn);
}

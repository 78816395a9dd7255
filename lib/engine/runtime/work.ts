/**
 * Work of a runtime that no request waits for any more: a tool call a stop stopped waiting for
 * (its write and its version still land), a version record past its time limit. The runtime's
 * close waits for all of it, so nothing writes into its folders once it is closed.
 */
export class PendingWork {
  private readonly items = new Set<Promise<void>>();

  /** Takes one piece of work; its failure is its own (already logged where it happened). */
  readonly track = (work: Promise<unknown>): void => {
    const item: Promise<void> = work.then(
      () => undefined,
      () => undefined,
    );
    this.items.add(item);
    void item.finally(() => this.items.delete(item));
  };

  get size(): number {
    return this.items.size;
  }

  /** Resolves once nothing is pending, work taken while waiting included. */
  async settled(): Promise<void> {
    while (this.items.size) await Promise.all([...this.items]);
  }
}

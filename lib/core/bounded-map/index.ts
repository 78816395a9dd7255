/**
 * A map holding at most `max` entries: past that, the one used least recently goes (a read is a
 * use). For what is kept to save work (git's answers, boards read at a commit), never for state.
 */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, V>();
  constructor(private readonly max: number) {}

  get(key: K): V | undefined {
    if (!this.map.has(key)) return undefined;
    const value = this.map.get(key) as V;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  /** Sets the entry (the most recent now) and answers its value. */
  set(key: K, value: V): V {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as K);
    return value;
  }

  get size(): number {
    return this.map.size;
  }
}

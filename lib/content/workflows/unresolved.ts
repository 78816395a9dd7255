/**
 * What a workflow names but the loader could not give a usable value: `name: reason` strings, so a
 * list of them reads well to a model and in a UI label alike. The name is a variable (`{name}`,
 * `{config_source}:name`) or the key holding a path (`default_output_file`, `step.outputFile`).
 */
export class Unresolved {
  private readonly entries = new Map<string, string>();

  /** The first reason given for a name is kept: it is the closest to the cause. */
  add(name: string, reason: string): void {
    if (!this.entries.has(name)) this.entries.set(name, reason);
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  list(): string[] {
    return [...this.entries].map(([name, reason]) => `${name}: ${reason}`);
  }
}

/** The name of an `unresolved[]` entry. */
export function unresolvedName(entry: string): string {
  const i = entry.indexOf(': ');
  return i === -1 ? entry : entry.slice(0, i);
}

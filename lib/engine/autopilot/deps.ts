/**
 * Which sprint stories may start: a story is ready when it is `ready-for-dev` and every story it
 * depends on is `done`. Its dependencies are its own list when it has one (a ticket's `after`, or
 * `after:` / `depends_on:` in the story file's frontmatter), else the project's order: `epic`
 * (a story waits for the one before it in its epic, epics side by side) or `free` (none).
 * Cycles and keys no story has are problems; their stories are never ready. Linear in the number
 * of stories and edges.
 */

export type StoryOrder = 'epic' | 'free';

export interface DependencyStory {
  key: string;
  /** The epic it is in (`epic-1`); stories of one epic come in sprint order. */
  epic: string;
  status: string | null;
  /** Its own dependency list (ticket `after`, frontmatter); undefined: the order decides. */
  after?: string[];
}

export interface DependencyProblem {
  kind: 'cycle' | 'unknown-dependency';
  stories: string[];
  text: string;
}

export interface DependencyPlan {
  /** Each story's dependencies, in the order given. */
  dependsOn: Map<string, string[]>;
  /** Stories that may start now, in sprint order. */
  ready: string[];
  /** Stories a problem keeps from starting (in a cycle, naming an unknown key). */
  held: Set<string>;
  problems: DependencyProblem[];
}

/** A frontmatter value read as a list of story keys: `[a, b]`, `a, b`, or one key. */
export function dependencyList(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[,\s]+/) : [value];
  const out: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string' && typeof item !== 'number') continue;
    const key = String(item).trim();
    if (key && !out.includes(key)) out.push(key);
  }
  return out;
}

/** A story's own list from its frontmatter: `after`, else `depends_on` (`dependsOn`). */
export function dependenciesInFrontmatter(data: Record<string, unknown>): string[] | undefined {
  return dependencyList(data.after ?? data.depends_on ?? data.dependsOn);
}

export function planDependencies(stories: DependencyStory[], order: StoryOrder): DependencyPlan {
  const byKey = new Map<string, DependencyStory>();
  for (const s of stories) byKey.set(s.key, s);
  const dependsOn = new Map<string, string[]>();
  const previousInEpic = new Map<string, string>();
  for (const s of stories) {
    const before = previousInEpic.get(s.epic);
    previousInEpic.set(s.epic, s.key);
    dependsOn.set(s.key, s.after ?? (order === 'epic' && before !== undefined ? [before] : []));
  }
  const held = new Set<string>();
  const problems: DependencyProblem[] = [];
  for (const s of stories) {
    const unknown = dependsOn.get(s.key)!.filter((d) => !byKey.has(d));
    if (unknown.length) {
      held.add(s.key);
      problems.push({ kind: 'unknown-dependency', stories: [s.key], text: `${s.key} depends on ${unknown.join(', ')}, which the sprint does not have.` });
    }
  }
  for (const cycle of cyclesOf(stories.map((s) => s.key), (k) => dependsOn.get(k)!.filter((d) => byKey.has(d)))) {
    for (const k of cycle) held.add(k);
    problems.push({ kind: 'cycle', stories: cycle, text: `${cycle.join(', ')} depend on each other in a cycle: none of them can start.` });
  }
  const ready: string[] = [];
  for (const s of stories) {
    if (s.status !== 'ready-for-dev' || held.has(s.key)) continue;
    if (dependsOn.get(s.key)!.every((d) => byKey.get(d)?.status === 'done')) ready.push(s.key);
  }
  return { dependsOn, ready, held, problems };
}

/**
 * The cycles of a graph: its strongly connected components with more than one node, or one node
 * depending on itself (Tarjan's algorithm, iterative so a long chain cannot overflow the stack).
 */
export function cyclesOf(nodes: string[], edges: (node: string) => string[]): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let next = 0;
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: { node: string; edges: string[]; at: number }[] = [];
    const enter = (node: string) => {
      index.set(node, next);
      low.set(node, next);
      next++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: edges(node), at: 0 });
    };
    enter(root);
    while (work.length) {
      const frame = work[work.length - 1]!;
      if (frame.at < frame.edges.length) {
        const to = frame.edges[frame.at++]!;
        if (!index.has(to)) enter(to);
        else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      for (;;) {
        const n = stack.pop()!;
        onStack.delete(n);
        component.push(n);
        if (n === frame.node) break;
      }
      if (component.length > 1 || frame.edges.includes(frame.node)) out.push(component.reverse());
    }
  }
  return out;
}

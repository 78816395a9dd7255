import type { Problem, Severity } from '../../core/results';

const RANK: Record<Severity, number> = { error: 0, warning: 1, note: 2 };

/** A menu item a problem was reached through. */
export interface Via {
  agent: string;
  command: string;
}

/**
 * Collects problems once each: a workflow broken for the nine agents whose menus run it is one
 * problem, told with the first menu item that reaches it and how many more do.
 */
export class Report {
  private readonly items = new Map<string, { problem: Problem; via: Via[] }>();

  /** The first word on a file and reason wins: the same check made twice is one problem. */
  add(problem: Problem, via?: Via): void {
    const key = `${problem.file}\0${problem.reason}`;
    let item = this.items.get(key);
    if (!item) {
      item = { problem: { ...problem }, via: [] };
      this.items.set(key, item);
    }
    if (via && !item.via.some((v) => v.agent === via.agent && v.command === via.command)) item.via.push(via);
  }

  /** Files that have an error of their own. */
  filesWithErrors(): Set<string> {
    const out = new Set<string>();
    for (const { problem } of this.items.values()) if (problem.severity === 'error') out.add(problem.file);
    return out;
  }

  /** Sorted by file, then severity, then reason; the menu items that reach a problem end its reason. */
  problems(): Problem[] {
    return [...this.items.values()]
      .map(({ problem, via }) => {
        if (!via.length) return problem;
        const first = via[0];
        const more = via.length > 1 ? ` and ${via.length - 1} more` : '';
        return { ...problem, reason: `${problem.reason} (via ${first.agent} ${first.command}${more})`, agent: problem.agent ?? first.agent, command: problem.command ?? first.command };
      })
      .sort((a, b) => a.file.localeCompare(b.file, 'en') || RANK[a.severity] - RANK[b.severity] || a.reason.localeCompare(b.reason, 'en'));
  }
}

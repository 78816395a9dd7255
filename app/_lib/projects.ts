import type { AgentSummary, ProjectView } from '@/types/api';

/**
 * A project is named by its folder (its id): two copies of one install differ there, while
 * BMAD's `project_name` is often the same in both. The name shows beside it where it differs.
 */
export function projectSubtitle(p: Pick<ProjectView, 'id' | 'name'>): string | undefined {
  const name = p.name?.trim();
  return name && name !== p.id ? name : undefined;
}

/** `shop (v612)`, or `shop` when its `project_name` says the same: for one line of text. */
export function projectLabel(p: Pick<ProjectView, 'id' | 'name'>): string {
  const sub = projectSubtitle(p);
  return sub ? `${p.id} (${sub})` : p.id;
}

export const byProjectId = (a: ProjectView, b: ProjectView) => a.id.localeCompare(b.id);

/**
 * The agents with the doctor's marks on their commands (from GET /api/projects/:id), added to
 * a list read without them: a menu item found broken is marked wherever it is offered.
 */
export function withCommandMarks(agents: AgentSummary[], marked: AgentSummary[] | undefined): AgentSummary[] {
  if (!marked?.length) return agents;
  const marks = new Map<string, Pick<AgentSummary['commands'][number], 'problem' | 'problemSeverity'>>();
  for (const a of marked) for (const c of a.commands) if (c.problem) marks.set(`${a.id}\0${c.cmd}`, { problem: c.problem, ...(c.problemSeverity ? { problemSeverity: c.problemSeverity } : {}) });
  if (!marks.size) return agents;
  return agents.map((a) => {
    if (!a.commands.some((c) => !c.problem && marks.has(`${a.id}\0${c.cmd}`))) return a;
    return { ...a, commands: a.commands.map((c) => (c.problem || !marks.has(`${a.id}\0${c.cmd}`) ? c : { ...c, ...marks.get(`${a.id}\0${c.cmd}`) })) };
  });
}

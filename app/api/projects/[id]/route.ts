import { getRuntime } from '@/lib/runtime';
import { withResolvedGreetings } from '@/lib/chat/greeting';
import { problemLine } from '@/lib/results';
import { countBySeverity, countLine, markCommands } from '@/lib/doctor';
import { projectUsageView } from '@/lib/chat/views';
import { repositoryView } from '@/lib/services';
import type { ProjectDetail } from '@/types/api';
import { handle, ok } from '../../_lib/http';
import { projectOr404 } from '../../_lib/projects';
import { callerOf } from '../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/**
 * The project with the doctor's diagnosis: every agent's start, menu targets, workflows, steps,
 * templates and config keys. A diagnosis loads every workflow of the install (about 90 files for
 * 6.0.4: 0.2 to 0.9 s, median 0.4 s, measured on two busy cores), so it is kept 5 s per project: a page polling the
 * detail costs one diagnosis per 5 s, and an edit shows within that. GET /api/projects keeps
 * only the install's own cheap checks.
 */
export async function GET(request: Request, ctx: { params: Promise<{ id: string }> }) {
  return handle('GET /api/projects/:id', request, async () => {
    const caller = await callerOf(request);
    const { id } = await ctx.params;
    const project = await projectOr404(id, caller);
    const rt = getRuntime();
    const [view, diagnosis, agents, usage, repository] = await Promise.all([
      rt.projects.view(project),
      rt.doctor.project(project),
      rt.projects.agents(project).then((list) => withResolvedGreetings(rt, list)),
      projectUsageView(rt.store, project.id, (c) => rt.access.conversation(caller, c, 'read')),
      repositoryView(project),
    ]);
    const counts = countBySeverity(diagnosis);
    const detail: ProjectDetail = {
      ...view,
      role: (await rt.access.projectRole(caller, project.id)) ?? 'viewer',
      // The same lines, and the same count, as `npm run doctor` prints for the project's folder.
      problems: diagnosis.filter((p) => p.severity !== 'note').map(problemLine),
      notes: diagnosis.filter((p) => p.severity === 'note').map(problemLine),
      doctor: { summary: countLine(diagnosis), errors: counts.error, warnings: counts.warning, notes: counts.note },
      agents: markCommands(agents, diagnosis),
      usage,
      repository,
    };
    return ok(detail);
  });
}

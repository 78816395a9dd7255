import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { createProject } from '@/lib/projects';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const NewProjectBody = z.object({
  name: z.string().trim().min(1, 'name is required').max(64, 'name must be at most 64 characters'),
  modules: z.array(z.string().trim().min(1).max(40)).max(10).optional(),
  userName: z.string().trim().min(1).max(100).optional(),
  communicationLanguage: z.string().trim().min(1).max(40).optional(),
  documentLanguage: z.string().trim().min(1).max(40).optional(),
});

/**
 * Every project with the problems reading its install finds (manifests, module configs, the
 * settings file): a few stats and small reads each, so the list stays fast however many projects
 * there are. The doctor's full diagnosis loads every workflow of a project and is in
 * GET /api/projects/:id only.
 */
export async function GET(request: Request) {
  return handle('GET /api/projects', request, async () => {
    const caller = await callerOf(request);
    const { projects, access } = getRuntime();
    const list = await projects.list();
    // Only the projects the caller may see: the others do not exist for them.
    const roles = await Promise.all(list.map((p) => access.projectRole(caller, p.id)));
    return ok(await Promise.all(list.filter((_, i) => roles[i] !== null).map((p) => projects.view(p))));
  });
}

export async function POST(request: Request) {
  return handle('POST /api/projects', request, async () => {
    const caller = await callerOf(request);
    if (caller.projectIds) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects; it cannot create one.');
    const body = await readJson(request, NewProjectBody);
    const { projects, accounts } = getRuntime();
    const project = await createProject(projects, body);
    // The creator owns it; nobody else sees it until they add members.
    if (accounts && caller.kind !== 'local') await accounts.setMember(project.id, caller.id, 'owner');
    return ok(await projects.view(project), { status: 201 });
  });
}

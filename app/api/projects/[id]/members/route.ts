import { z } from 'zod';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../../../_lib/http';
import { accountsOr404, callerOf } from '../../../_lib/caller';
import { projectOr404 } from '../../../_lib/projects';
import { getRuntime } from '@/lib/runtime';
import { roleAllows, type Caller } from '@/lib/access';

/**
 * Everyone with access (members, then admins who are not members) and whether the caller may
 * manage them, so a screen offers only what will work.
 */
async function view(projectId: string, caller: Caller) {
  const role = await getRuntime().access.projectRole(caller, projectId);
  const canManage = !!role && roleAllows(role, 'own');
  const members = await accountsOr404().members(projectId);
  // Addresses are for those who manage the members (by email); everyone else, and a token
  // limited to projects, sees names only.
  if (canManage && !caller.projectIds) return { members, canManage };
  return { members: members.map(({ email: _email, ...rest }) => rest), canManage };
}

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's people and their roles (anyone who sees the project). */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/members', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const project = await projectOr404(id, caller, 'read');
    return ok(await view(project.id, caller));
  });
}

const Put = z.object({
  email: z.email('email must be an email address').max(254),
  role: z.enum(['owner', 'editor', 'viewer']),
});

/** Adds a person to the project or changes their role (its owners and admins). */
export async function PUT(request: Request, { params }: Params) {
  return handle('PUT /api/projects/:id/members', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const project = await projectOr404(id, caller, 'own');
    const body = await readJson(request, Put);
    const accounts = accountsOr404();
    const person = await accounts.personByEmail(body.email);
    if (!person) throw new AppError('E_NOT_FOUND', `No person with email ${body.email}; an admin creates people on the People page.`, { field: 'email' });
    await accounts.setMember(project.id, person.id, body.role);
    return ok(await view(project.id, caller));
  });
}

const Delete = z.object({ email: z.email('email must be an email address').max(254) });

/** Removes a person from the project (its owners and admins); the last owner stays. */
export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/projects/:id/members', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const project = await projectOr404(id, caller, 'own');
    const body = await readJson(request, Delete);
    const accounts = accountsOr404();
    const person = await accounts.personByEmail(body.email);
    if (!person || !(await accounts.removeMember(project.id, person.id))) {
      throw new AppError('E_NOT_FOUND', `${body.email} is not a member of this project.`, { field: 'email' });
    }
    return ok(await view(project.id, caller));
  });
}

import { z } from 'zod';
import { listMembers, putMember, removeMember } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's people and their roles (anyone who sees the project), and whether the caller may manage them. */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/members', request, async () => {
    const caller = await callerOf(request);
    return ok(await listMembers(caller, (await params).id));
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
    return ok(await putMember(caller, (await params).id, () => readJson(request, Put)));
  });
}

const Delete = z.object({ email: z.email('email must be an email address').max(254) });

/** Removes a person from the project (its owners and admins); the last owner stays. */
export async function DELETE(request: Request, { params }: Params) {
  return handle('DELETE /api/projects/:id/members', request, async () => {
    const caller = await callerOf(request);
    return ok(await removeMember(caller, (await params).id, () => readJson(request, Delete)));
  });
}

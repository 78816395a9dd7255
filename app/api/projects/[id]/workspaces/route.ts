import { z } from 'zod';
import { createWorkspace, listWorkspaces } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's workspaces, newest first (discarded ones left out). */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/workspaces', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await listWorkspaces(caller, id));
  });
}

// The name's rules (letters, digits, '.', '_', '-') are the workspaces' own: one place says them.
const Post = z.object({ name: z.string('name must be a text') });

/** Makes a workspace: a checkout of its own on the new branch `bmad/<name>` (owners and editors). */
export async function POST(request: Request, { params }: Params) {
  return handle('POST /api/projects/:id/workspaces', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const body = await readJson(request, Post);
    return ok(await createWorkspace(caller, id, body), { status: 201 });
  });
}

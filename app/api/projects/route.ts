import { z } from 'zod';
import { getRuntime } from '@/lib/runtime';
import { claimProject, installClaimed, type Project } from '@/lib/projects';
import { AppError, isAppError } from '@/lib/errors';
import { log } from '@/lib/log';
import { handle, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';
import type { Caller } from '@/lib/access';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const NewProjectBody = z.object({
  name: z.string().trim().min(1, 'name is required').max(64, 'name must be at most 64 characters'),
  bmadVersion: z.string().trim().min(1).max(40).optional(),
  tools: z.array(z.string().trim().min(1).max(60)).max(20).optional(),
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
    const seen = list.flatMap((p, i) => (roles[i] ? [{ project: p, role: roles[i] }] : []));
    return ok(
      await Promise.all(
        seen.map(async ({ project, role }) => ({ ...(await projects.view(project)), role, lastActivity: await lastActivity(project.id, caller) })),
      ),
    );
  });
}

/**
 * When the newest conversation of the project the caller may read last changed: one indexed
 * query (newest first), so the home can say where each project stands without a walk of its
 * folder. Only called for a project the caller has a role in: an admin (and the single-user
 * mode) reads all of it, anyone else their own conversations and the shared ones.
 */
async function lastActivity(projectId: string, caller: Caller): Promise<string | null> {
  const { store } = getRuntime();
  const all = caller.kind === 'local' || caller.role === 'admin';
  try {
    const page = await store.list({ projectId, limit: 1, ...(all ? {} : { ownedOrSharedFor: caller.id }) });
    return page.items[0]?.updatedAt ?? null;
  } catch {
    // The store being away costs the home a date, not the list.
  }
  return null;
}

/**
 * Creates a project with BMAD's installer. With `Accept: application/x-ndjson` the answer streams
 * the installer's steps as they happen, one JSON line each (`{"type":"step","text":...}`), then
 * `{"type":"done","status":201,"data":<project>}` or `{"type":"error","status","code","error"}`.
 * Whatever the request got wrong (400, 409) is answered as a plain error before anything streams.
 */
export async function POST(request: Request) {
  return handle('POST /api/projects', request, async () => {
    const caller = await callerOf(request);
    if (caller.projectIds) throw new AppError('E_FORBIDDEN', 'This token is limited to some projects; it cannot create one.');
    const body = await readJson(request, NewProjectBody);
    const { projects, accounts } = getRuntime();
    const claim = await claimProject(projects, body);
    // The creator owns it; nobody else sees it until they add members.
    const created = async (project: Project) => {
      if (accounts && caller.kind !== 'local') await accounts.setMember(project.id, caller.id, 'owner');
      return projects.view(project);
    };
    if (!(request.headers.get('accept') ?? '').includes('application/x-ndjson')) {
      return ok(await created(await installClaimed(projects, claim)), { status: 201 });
    }
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        let open = true;
        const send = (line: Record<string, unknown>) => {
          if (!open) return;
          try {
            controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
          } catch {
            open = false;
          }
        };
        try {
          const project = await installClaimed(projects, claim, (text) => send({ type: 'step', text }));
          send({ type: 'done', status: 201, data: await created(project) });
        } catch (e) {
          if (!isAppError(e)) log.error('request.crash', { route: 'POST /api/projects', error: (e as Error)?.name ?? 'unknown' });
          send(isAppError(e) ? { type: 'error', status: e.status, code: e.code, error: e.message } : { type: 'error', status: 500, code: 'E_INTERNAL', error: 'Internal server error.' });
        }
        if (open) controller.close();
        open = false;
      },
      cancel() {
        // The install goes on without a reader: the project appears when it is done.
      },
    });
    return new Response(stream, { status: 200, headers: { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' } });
  });
}

import { z } from 'zod';
import { createProject, listProjects } from '@/lib/services';
import { handle, ndjsonResponse, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';

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

/** Every project the caller may see, with the problems reading its install finds (the doctor's diagnosis is in the detail). */
export async function GET(request: Request) {
  return handle('GET /api/projects', request, async () => ok(await listProjects(await callerOf(request))));
}

/**
 * Creates a project with BMAD's installer. With `Accept: application/x-ndjson` the answer streams
 * the installer's steps as they happen, one JSON line each (`{"type":"step","text":...}`), then
 * `{"type":"done","status":201,"data":<project>}` or `{"type":"error","status","code","error"}`.
 * Whatever the request got wrong (400, 409) is answered as a plain error before anything streams.
 */
export async function POST(request: Request) {
  return handle('POST /api/projects', request, async () => {
    const install = await createProject(await callerOf(request), () => readJson(request, NewProjectBody));
    if (!(request.headers.get('accept') ?? '').includes('application/x-ndjson')) return ok(await install(), { status: 201 });
    // The install goes on without a reader: the project appears when it is done.
    return ndjsonResponse('POST /api/projects', async (send) => send({ type: 'done', status: 201, data: await install((text) => send({ type: 'step', text })) }));
  });
}

import { z } from 'zod';
import { listProjects, startProject } from '@/lib/services';
import { handle, ndjsonResponse, ok, parseWith, readJson } from '../_lib/http';
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
  inClone: z.boolean().optional(),
});

const Opt = (max: number) => z.string().trim().min(1).max(max).nullable().optional();
const NewCloneBody = z.object({
  id: z.string().trim().min(1).max(64).optional(),
  name: z.string().trim().min(1).max(64).optional(),
  git: z.object({ url: z.string().trim().min(1, 'url is required').max(2048), branch: z.string().trim().min(1).max(200).optional(), forge: Opt(20), apiUrl: Opt(2048), token: z.string().min(1).max(4096).nullable().optional(), username: Opt(100), mode: z.enum(['pull-request', 'push']).optional() }),
});

/** Every project the caller may see, with the problems reading its install finds (the doctor's diagnosis is in the detail). */
export async function GET(request: Request) {
  return handle('GET /api/projects', request, async () => ok(await listProjects(await callerOf(request))));
}

/**
 * Creates a project. With `git` (admins): cloned from the URL, 202 `{ id, clone }` at once, the
 * clone's progress in GET /api/projects/:id. Otherwise BMAD's installer makes it (`inClone`: into a
 * repository cloned without one); with `Accept: application/x-ndjson` its steps stream as JSON lines
 * (`step`, then `done` with the project or `error`). What the request got wrong is answered first.
 */
export async function POST(request: Request) {
  return handle('POST /api/projects', request, async () => {
    const started = await startProject(await callerOf(request), async () => {
      const body: unknown = await readJson(request, z.unknown());
      return body && typeof body === 'object' && 'git' in body ? { git: () => parseWith(NewCloneBody, body) } : { install: parseWith(NewProjectBody, body) };
    });
    if ('clone' in started) return ok(started.clone, { status: 202 });
    if (!(request.headers.get('accept') ?? '').includes('application/x-ndjson')) return ok(await started.install(), { status: 201 });
    // The install goes on without a reader: the project appears when it is done.
    return ndjsonResponse('POST /api/projects', async (send) => send({ type: 'done', status: 201, data: await started.install((text) => send({ type: 'step', text })) }));
  });
}

import { z } from 'zod';
import { getBuildSettings, putBuildSettings } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's build settings (whoever sees the project). */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/build', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await getBuildSettings(caller, id));
  });
}

const Put = z.object({
  enabled: z.boolean('enabled must be true or false').optional(),
  baseBranch: z.string('baseBranch must be a branch name or null').max(255).nullable().optional(),
  setup: z.string('setup must be one shell line or null').max(4000).nullable().optional(),
  env: z.record(z.string(), z.string('env values must be texts'), 'env must be an object of names to texts').optional(),
  test: z.string('test must be one shell line or null').max(4000).nullable().optional(),
  appendOnly: z.array(z.string('appendOnly must be a list of paths'), 'appendOnly must be a list of paths relative to the project').max(50).optional(),
});

/** Changes the build settings (the project's owners and admins); fields left out keep their values. */
export async function PUT(request: Request, { params }: Params) {
  return handle('PUT /api/projects/:id/build', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    const body = await readJson(request, Put);
    return ok(await putBuildSettings(caller, id, body));
  });
}

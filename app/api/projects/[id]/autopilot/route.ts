import { z } from 'zod';
import { getAutopilot, putAutopilot } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's autopilot: settings, what it is doing, its problems and decisions (whoever sees the project). */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/autopilot', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await getAutopilot(caller, id));
  });
}

const Put = z.object({
  enabled: z.boolean('enabled must be true or false').optional(),
  maxParallel: z.number().int('maxParallel must be a whole number').min(1, 'maxParallel must be at least 1').max(16, 'maxParallel must be at most 16').optional(),
  order: z.enum(['epic', 'free'], 'order must be epic or free').optional(),
  reviewSkill: z.string().trim().min(1).max(200).nullable().optional(),
  reviewModel: z.string().trim().min(1).max(64).nullable().optional(),
  maxReviewRounds: z.number().int('maxReviewRounds must be a whole number').min(1).max(10).optional(),
  testCommand: z.string('testCommand must be one shell line or null').max(4000).nullable().optional(),
  merge: z.object({ onRed: z.enum(['decide', 'rebuild'], 'merge.onRed must be decide or rebuild').optional() }).optional(),
});

/** Changes the autopilot (owners and admins); enabling it makes the caller the person it acts as. */
export async function PUT(request: Request, { params }: Params) {
  return handle('PUT /api/projects/:id/autopilot', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await putAutopilot(caller, id, () => readJson(request, Put)));
  });
}

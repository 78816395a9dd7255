import { z } from 'zod';
import { getBudget, putBudget } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

type Params = { params: Promise<{ id: string }> };

/** The project's monthly budget with this month's spend (whoever sees the project). */
export async function GET(request: Request, { params }: Params) {
  return handle('GET /api/projects/:id/budget', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await getBudget(caller, id));
  });
}

// The limits' own checks (type, sign, field named) are the service's, after the access check.
const Put = z.record(z.string(), z.unknown(), 'A budget is an object: { monthlyTokens?, monthlyUsd?, perPerson? }');

/** Sets the monthly limits and those per person (owners and admins); fields left out keep their values, null removes one. */
export async function PUT(request: Request, { params }: Params) {
  return handle('PUT /api/projects/:id/budget', request, async () => {
    const caller = await callerOf(request);
    const { id } = await params;
    return ok(await putBudget(caller, id, () => readJson(request, Put)));
  });
}

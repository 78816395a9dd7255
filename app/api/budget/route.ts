import { z } from 'zod';
import { getServerBudget, putServerBudget } from '@/lib/services';
import { handle, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** The server's monthly limits with this month's spend over every project (admins). */
export async function GET(request: Request) {
  return handle('GET /api/budget', request, async () => {
    const caller = await callerOf(request);
    return ok(await getServerBudget(caller));
  });
}

// The limits' own checks (type, sign, field named) are the service's, after the access check.
const Put = z.record(z.string(), z.unknown(), 'A budget is an object: { monthlyTokens?, monthlyUsd?, perPerson? }');

/** Sets the server's monthly limits (admins); fields left out keep their values, null removes one. */
export async function PUT(request: Request) {
  return handle('PUT /api/budget', request, async () => {
    const caller = await callerOf(request);
    return ok(await putServerBudget(caller, () => readJson(request, Put)));
  });
}

import { z } from 'zod';
import { setPersonPassword } from '@/lib/services';
import { handle, ok, readJson } from '../../../_lib/http';
import { callerOf } from '../../../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

const Put = z.object({ password: z.string().min(8, 'password must have at least 8 characters').max(256) });

/** An admin sets a person's new password; the person's open sessions end. Their own: /api/users/me/password. */
export async function PUT(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handle('PUT /api/users/:id/password', request, async () => {
    const caller = await callerOf(request);
    return ok(await setPersonPassword(caller, (await params).id, () => readJson(request, Put)));
  });
}

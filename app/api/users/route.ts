import { z } from 'zod';
import { createPerson, listPeople } from '@/lib/services';
import { handle, ok, readJson } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Everyone with an account (admins only). */
export async function GET(request: Request) {
  return handle('GET /api/users', request, async () => ok(await listPeople(await callerOf(request))));
}

const NewPerson = z.object({
  email: z.email('email must be an email address').max(254),
  name: z.string().trim().min(1, 'name is required').max(100),
  password: z.string().min(8, 'password must have at least 8 characters').max(256),
  role: z.enum(['admin', 'member']).default('member'),
});

/** An admin creates a person (self sign-up is closed unless ALLOW_SIGNUP=true). */
export async function POST(request: Request) {
  return handle('POST /api/users', request, async () => {
    const caller = await callerOf(request);
    return ok(await createPerson(caller, () => readJson(request, NewPerson)), { status: 201 });
  });
}

import { z } from 'zod';
import { AppError } from '@/lib/errors';
import { handle, ok, readJson } from '../_lib/http';
import { accountsOr404, adminOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Everyone with an account (admins only). */
export async function GET(request: Request) {
  return handle('GET /api/users', request, async () => {
    await adminOf(request);
    return ok(await accountsOr404().listPeople());
  });
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
    const caller = await adminOf(request);
    const body = await readJson(request, NewPerson);
    // A new admin with a password of the token holder's choosing is an admin account for them.
    if (body.role === 'admin' && caller.kind === 'token') throw new AppError('E_FORBIDDEN', 'Sign in as an admin to make another admin; an API token cannot.');
    return ok(await accountsOr404().createPerson(body), { status: 201 });
  });
}

import { AppError } from '@/lib/errors';
import { fail, toResponse } from '../_lib/http';
import { callerOf } from '../_lib/caller';

export const dynamic = 'force-dynamic';

// Unknown API paths answer in the API's error shape, not with the HTML 404 page; with accounts,
// only to someone signed in (a stranger gets the same 401 as on every route).
async function notFound(request: Request) {
  try {
    await callerOf(request);
  } catch (e) {
    return toResponse(e, 'unknown API route');
  }
  return fail(new AppError('E_NOT_FOUND', `No API route ${request.method} ${new URL(request.url).pathname}.`));
}

export const GET = notFound;
export const POST = notFound;
export const PUT = notFound;
export const PATCH = notFound;
export const DELETE = notFound;

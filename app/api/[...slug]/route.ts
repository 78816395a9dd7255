import { AppError } from '@/lib/errors';
import { fail } from '../_lib/http';

export const dynamic = 'force-dynamic';

// Unknown API paths answer in the API's error shape, not with the HTML 404 page.
function notFound(request: Request) {
  return fail(new AppError('E_NOT_FOUND', `No API route ${request.method} ${new URL(request.url).pathname}.`));
}

export const GET = notFound;
export const POST = notFound;
export const PUT = notFound;
export const PATCH = notFound;
export const DELETE = notFound;

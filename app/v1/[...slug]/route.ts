import { AppError } from '@/lib/errors';
import { callerOf } from '../../api/_lib/caller';
import { handleOpenAI } from '../_lib/http';

export const dynamic = 'force-dynamic';

// What this server does not answer under /v1 (embeddings, the Responses API, ...) is a 404 in
// OpenAI's shape, not the HTML page; with accounts, only to someone signed in.
async function notFound(request: Request) {
  return handleOpenAI('unknown /v1 route', request, async () => {
    await callerOf(request);
    throw new AppError('E_NOT_FOUND', `No route ${request.method} ${new URL(request.url).pathname}: this server answers GET /v1/models and POST /v1/chat/completions.`);
  });
}

export const GET = notFound;
export const POST = notFound;
export const PUT = notFound;
export const PATCH = notFound;
export const DELETE = notFound;

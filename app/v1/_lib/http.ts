import { AppError, isAppError } from '@/lib/errors';
import { openAIErrorView } from '@/lib/services';
import { log } from '@/lib/core/log';

/**
 * The HTTP side of the OpenAI-compatible endpoint (/v1): as app/api/_lib, but every error in
 * OpenAI's shape, `{ error: { message, type, param, code } }`, with our code in `code`, so the
 * clients that speak it (the official SDKs, Open WebUI, LibreChat) show our words.
 */

export function openAIError(e: unknown, route: string): Response {
  const error = isAppError(e) ? e : new AppError('E_INTERNAL', 'Internal server error.');
  if (!isAppError(e)) log.error('request.crash', { route, error: (e as Error)?.name ?? 'unknown' });
  return Response.json(openAIErrorView(error), { status: error.status });
}

/** Logs one line per request (route, status, duration) and answers anything thrown in OpenAI's error shape. */
export async function handleOpenAI(route: string, request: Request, fn: () => Promise<Response>): Promise<Response> {
  const started = performance.now();
  let status = 500;
  try {
    const res = await fn();
    status = res.status;
    return res;
  } catch (e) {
    const res = openAIError(e, route);
    status = res.status;
    return res;
  } finally {
    log.info('http.request', { route, method: request.method, status, durationMs: Math.round((performance.now() - started) * 100) / 100 });
  }
}

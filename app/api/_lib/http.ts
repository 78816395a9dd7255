import { NextResponse } from 'next/server';
import type { z } from 'zod';
import { AppError, isAppError } from '@/lib/errors';
import { log } from '@/lib/core/log';
import { sha256 } from '@/lib/core/results';

/**
 * Below this many bytes a JSON body goes out as it is. Next's gzip skips small bodies only when
 * it sees their Content-Length, which it never forwards from a route handler; gzip then costs
 * more CPU than the bytes it saves, so a small body says `no-transform`, which the compressor
 * honours (and so does any proxy: the body is the same either way).
 */
const COMPRESS_MIN_BYTES = 1024;

function json(body: unknown, init?: ResponseInit): NextResponse {
  const text = JSON.stringify(body);
  const headers = new Headers(init?.headers);
  headers.set('content-type', 'application/json');
  if (text.length < COMPRESS_MIN_BYTES && Buffer.byteLength(text) < COMPRESS_MIN_BYTES && !headers.has('cache-control')) headers.set('cache-control', 'no-transform');
  return new NextResponse(text, { ...init, headers });
}

export const ok = <T,>(data: T, init?: ResponseInit): NextResponse => json({ success: true, data }, init);

export function fail(error: AppError): NextResponse {
  // A validation error names its field, so a form can show the message beside it.
  const field = typeof error.details?.field === 'string' ? { field: error.details.field } : {};
  // What an error chooses to show beside its message (a conflict's current sha256).
  const shown = error.details?.response && typeof error.details.response === 'object' ? (error.details.response as Record<string, unknown>) : {};
  return json({ ...shown, success: false, error: error.message, code: error.code, ...field }, { status: error.status });
}

/** Maps anything thrown in a handler to the API's error shape; unknown errors never leak their text. */
export function toResponse(e: unknown, route: string): NextResponse {
  if (isAppError(e)) return fail(e);
  log.error('request.crash', { route, error: (e as Error)?.name ?? 'unknown' });
  return fail(new AppError('E_INTERNAL', 'Internal server error.'));
}

export const MAX_BODY_BYTES = 256 * 1024;

const tooLarge = (limit: number) => new AppError('E_TOO_LARGE', `The request body is larger than ${limit} bytes.`);

/** Reads the body as text, counting bytes as they arrive: a chunked upload cannot fill the memory. */
export const readBodyText = async (request: Request, limit = MAX_BODY_BYTES): Promise<string> => (await readBodyBytes(request, limit)).toString('utf8');

/** The body's bytes as they came (a signature is over them, not over a decoding), bounded as readBodyText. */
export async function readBodyBytes(request: Request, limit = MAX_BODY_BYTES): Promise<Buffer> {
  if (Number(request.headers.get('content-length') ?? '0') > limit) throw tooLarge(limit);
  if (!request.body) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** Reads and validates a JSON body: 413 when too large, 400 naming the field otherwise. */
export async function readJson<S extends z.ZodType>(request: Request, schema: S, limit = MAX_BODY_BYTES): Promise<z.infer<S>> {
  const text = await readBodyText(request, limit);
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    throw new AppError('E_VALIDATION', 'The request body is not valid JSON.', { field: 'body' });
  }
  return parseWith(schema, body);
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.length ? issue.path.join('.') : 'body';
  throw new AppError('E_VALIDATION', `Invalid ${field}: ${issue?.message ?? 'invalid value'}.`, { field });
}

/** Logs one line per request: route, status, duration. */
export async function handle(route: string, request: Request, fn: () => Promise<Response>): Promise<Response> {
  const started = performance.now();
  let status = 500;
  try {
    const res = await fn();
    status = res.status;
    return res;
  } catch (e) {
    const res = toResponse(e, route);
    status = res.status;
    return res;
  } finally {
    log.info('http.request', { route, method: request.method, status, durationMs: Math.round((performance.now() - started) * 100) / 100 });
  }
}

/** A file as a response body: its type, never sniffed, never cached; `download` makes it an attachment. */
export function fileResponse(file: { name: string; content: Buffer; contentType: string }, download: boolean): Response {
  const headers: Record<string, string> = {
    'content-type': file.contentType,
    'content-length': String(file.content.byteLength),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    // What a save's if-match names: the browser needs no digest of its own (crypto.subtle exists only on https and localhost).
    'x-content-sha256': sha256(file.content),
  };
  if (download) headers['content-disposition'] = `attachment; filename*=UTF-8''${encodeURIComponent(file.name)}`;
  return new Response(new Uint8Array(file.content), { status: 200, headers });
}

/**
 * A stream of JSON lines: `work` sends what it will; an error it throws ends the stream with
 * `{"type":"error","status","code","error"}` (unknown errors never leak their text).
 */
export function ndjsonResponse(route: string, work: (send: (line: Record<string, unknown>) => void) => Promise<void>): Response {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      let open = true;
      const send = (line: Record<string, unknown>) => {
        if (!open) return;
        try {
          controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
        } catch {
          open = false;
        }
      };
      try {
        await work(send);
      } catch (e) {
        if (!isAppError(e)) log.error('request.crash', { route, error: (e as Error)?.name ?? 'unknown' });
        send(isAppError(e) ? { type: 'error', status: e.status, code: e.code, error: e.message } : { type: 'error', status: 500, code: 'E_INTERNAL', error: 'Internal server error.' });
      }
      if (open) controller.close();
      open = false;
    },
  });
  return new Response(stream, { status: 200, headers: { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' } });
}

import http from 'node:http';
import https from 'node:https';
import { pipeline, Readable } from 'node:stream';
import zlib from 'node:zlib';

/**
 * The fetch the OpenAI SDK gets: node:http(s) with keep-alive connections. A streamed answer
 * arrives as dozens to hundreds of small network reads, and the global fetch (undici, web streams)
 * costs about twice the CPU per read that a Node stream does. The Response it returns keeps the
 * Node stream underneath, so `nodeBody` lets the streaming reader skip web streams entirely; the
 * web body is only built if someone reads `response.body`.
 */

/** A response body as a Node stream, with whatever broke it before anyone started reading. */
export interface NodeBody {
  stream: Readable;
  failure(): Error | undefined;
}

const bodies = new WeakMap<Response, NodeBody>();

/** The Node body behind a Response made by `createHttpFetch`, or undefined for any other Response. */
export function nodeBody(response: Response): NodeBody | undefined {
  return bodies.get(response);
}

/**
 * Watches a body from the moment it arrives: a stream nobody listens to yet would drop its error
 * (or throw it as uncaught), and a reader that comes later must still learn the body is broken.
 */
function tracked(stream: Readable): NodeBody {
  let failure: Error | undefined;
  stream.on('error', (e) => {
    failure ??= e;
  });
  stream.on('close', () => {
    if (!stream.readableEnded) failure ??= Object.assign(new Error('terminated: the connection closed before the body ended'), { code: 'ECONNRESET' });
  });
  return { stream, failure: () => failure };
}

const MAX_REDIRECTS = 5;
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

function requestBody(body: RequestInit['body']): Buffer | string | undefined | null {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (body instanceof URLSearchParams) return body.toString();
  // Streams and form data (file uploads) are not what a chat call sends: the global fetch handles them.
  return null;
}

function abortError(signal: AbortSignal): Error {
  const reason = signal.reason as unknown;
  if (reason instanceof Error && (reason.name === 'AbortError' || reason.name === 'TimeoutError')) return reason;
  const e = new Error('The operation was aborted.');
  e.name = 'AbortError';
  return e;
}

/** A web stream over a Node body, started only when first read. */
function lazyWebStream(body: NodeBody): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!reader) {
          const early = body.failure();
          if (early) return controller.error(early);
          reader = (Readable.toWeb(body.stream) as ReadableStream<Uint8Array>).getReader();
        }
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel(reason) {
        body.stream.destroy(reason instanceof Error ? reason : undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

function decoded(res: http.IncomingMessage): Readable {
  const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : null;
  if (!decoder) return res;
  // pipeline destroys both ends on a failure of either; the error reaches the body's reader.
  return pipeline(res, decoder, () => undefined);
}

function responseHeaders(res: http.IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  return headers;
}

export interface HttpFetchOptions {
  /** Connections kept open per host for later requests. */
  maxFreeSockets?: number;
}

export function createHttpFetch(options: HttpFetchOptions = {}): typeof fetch {
  // Idle connections are dropped after 4 s, as the global fetch does: servers close theirs after
  // about 5 s (uvicorn, Node), often without saying so, and a reused dying socket fails the request.
  const agentOptions = { keepAlive: true, timeout: 4_000, maxFreeSockets: options.maxFreeSockets ?? 64, scheduling: 'lifo' as const };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };

  const send = (url: URL, method: string, headers: Record<string, string>, body: Buffer | string | undefined, signal: AbortSignal | undefined, hops: number): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      if (signal?.aborted) return reject(abortError(signal));
      const transport = url.protocol === 'https:' ? https : http;
      const outgoing = { ...headers };
      if (body !== undefined) outgoing['content-length'] = String(Buffer.byteLength(body));
      const req = transport.request(url, { method, headers: outgoing, agent: agents[url.protocol as 'http:' | 'https:'] });
      let res: http.IncomingMessage | undefined;
      const onAbort = () => {
        const e = abortError(signal!);
        req.destroy(e);
        res?.destroy(e);
        reject(e);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = () => signal?.removeEventListener('abort', onAbort);
      req.on('error', (e) => {
        settle();
        // As the global fetch does: a network failure is a TypeError whose cause has the code.
        reject(signal?.aborted ? abortError(signal) : new TypeError('fetch failed', { cause: e }));
      });
      req.on('response', (incoming) => {
        res = incoming;
        const status = incoming.statusCode ?? 502;
        const location = incoming.headers.location;
        // Only the redirects that keep method and body: a POST must never turn into a GET.
        if ((status === 307 || status === 308) && location && hops < MAX_REDIRECTS) {
          incoming.resume();
          settle();
          let next: URL;
          try {
            next = new URL(location, url);
          } catch (e) {
            return reject(e);
          }
          const forward = { ...headers };
          // Credentials stay with the origin they were meant for.
          if (next.origin !== url.origin) delete forward.authorization;
          send(next, method, forward, body, signal, hops + 1).then(resolve, reject);
          return;
        }
        incoming.once('close', settle);
        const hasBody = !NULL_BODY_STATUS.has(status) && method !== 'HEAD';
        // Drained, so the connection goes back to the pool.
        if (!hasBody) incoming.resume();
        const payload = hasBody ? tracked(decoded(incoming)) : null;
        let response: Response;
        try {
          response = new Response(payload ? lazyWebStream(payload) : null, { status, statusText: incoming.statusMessage ?? '', headers: responseHeaders(incoming) });
        } catch (e) {
          incoming.destroy();
          return reject(e);
        }
        Object.defineProperty(response, 'url', { value: url.toString() });
        if (payload) bodies.set(response, payload);
        resolve(response);
      });
      req.end(body);
    });

  const httpFetch = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const isRequest = typeof Request !== 'undefined' && input instanceof Request;
    const body = requestBody(init.body);
    if (isRequest || body === null) return fetch(input, init);
    const url = new URL(String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return fetch(input, init);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    return send(url, (init.method ?? 'GET').toUpperCase(), headers, body, init.signal ?? undefined, 0);
  };
  return httpFetch as typeof fetch;
}

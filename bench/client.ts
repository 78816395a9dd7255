/** A lean HTTP client for the driver: node:http with keep-alive, timing each streamed turn. */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

export interface TurnTiming {
  status: number;
  /** From sending the request to the end of the response body. */
  wallMs: number;
  /** To the first byte of the response body. */
  firstByteMs: number;
  /** To the first chunk holding an answer text delta (-1: none). */
  firstTextMs: number;
  conversationId?: string;
  /** An `error` chunk or a non-2xx status. */
  error?: string;
  body?: string;
}

/** POST `path` with a JSON body and reads the whole (streamed) response. */
export function post(baseUrl: string, path: string, body: unknown, opts: { keepBody?: boolean; textMarker?: string } = {}): Promise<TurnTiming> {
  const payload = Buffer.from(JSON.stringify(body));
  const url = new URL(path, baseUrl);
  const marker = opts.textMarker ?? '"type":"text-delta"';
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': payload.length, accept: 'text/event-stream' },
      },
      (res) => {
        const out: TurnTiming = { status: res.statusCode ?? 0, wallMs: 0, firstByteMs: -1, firstTextMs: -1 };
        let head = '';
        let tail = '';
        const all: string[] = [];
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const t = performance.now() - t0;
          if (out.firstByteMs < 0) out.firstByteMs = t;
          // Markers may straddle chunk boundaries: look at the end of the previous chunk too.
          const window = tail + chunk;
          if (out.firstTextMs < 0 && window.includes(marker)) out.firstTextMs = t;
          if (head.length < 4096) head += chunk;
          if (window.includes('"type":"error"') && !out.error) out.error = /"errorText":"([^"]*)"/.exec(window)?.[1] ?? 'error chunk';
          tail = chunk.slice(-200);
          if (opts.keepBody) all.push(chunk);
        });
        res.on('end', () => {
          out.wallMs = performance.now() - t0;
          out.conversationId = /"conversationId":"([^"]+)"/.exec(head)?.[1];
          if (out.status >= 300 && !out.error) out.error = `HTTP ${out.status}: ${head.slice(0, 300)}`;
          if (opts.keepBody) out.body = all.join('');
          resolve(out);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  return (await res.json()) as T;
}

export async function postJson<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await res.json()) as T;
}

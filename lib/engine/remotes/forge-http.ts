import http from 'node:http';
import https from 'node:https';
import { AppError, isAppError } from '../../core/errors';
import { checkRemoteHost, parseRemoteUrl, type RemoteUrl } from '../../sandbox/git/remote-url';
import { forgeName, type ForgeTarget } from './forge';
import type { ForgeKind } from './types';

/**
 * One call to a forge's API, as every forge client makes it: the API's host checked by the remote
 * URL rule right before the call (GIT_REMOTE_HOSTS for loopback and private ones) and the socket
 * pinned to the address checked, so a name that resolves elsewhere a moment later cannot take the
 * token there; no redirect followed (a 3xx is E_REMOTE_UNREACHABLE naming the host); the token
 * only in the Authorization header; its errors in words that name the forge and what failed, never
 * the token, never a 500. Plain node:http(s): no SDK, and the pinning needs the socket's `lookup`.
 */
export interface ForgeRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  /** Below the API's root: `/repos/team/app/pulls`. */
  path: string;
  body?: unknown;
  /** A conditional GET: the ETag of the copy held. */
  etag?: string;
  /** What the call does, for messages ("opening a pull request"). */
  doing: string;
}

export interface ForgeResponse {
  status: number;
  etag?: string;
  /** Parsed JSON (null for an empty body or a 304). */
  body: unknown;
  headers: http.IncomingHttpHeaders;
}

/** How long a forge may stay silent, and how long one call may take in all: a forge that dribbles a byte a second is not silent. */
const IDLE_MS = 30_000;
const DEADLINE_MS = 60_000;
const MAX_BODY = 8 * 1024 * 1024;

/** Bounds of one call (smaller ones in tests). */
export interface ForgeHttpLimits {
  idleMs?: number;
  deadlineMs?: number;
  maxBody?: number;
}

/** The public API root of a forge; a self-hosted one needs the remote's `apiUrl`. */
export function defaultApiUrl(kind: ForgeKind, host: string): string {
  if (kind === 'github') return host === 'github.com' || host === 'www.github.com' ? 'https://api.github.com' : `https://${host}/api/v3`;
  if (kind === 'gitlab') return `https://${host}/api/v4`;
  return `https://${host}/api/v1`;
}

function authorization(kind: ForgeKind, token: string): string {
  // GitLab takes personal, project and group tokens as a bearer too; Gitea's own scheme is `token`.
  return kind === 'gitea' ? `token ${token}` : `Bearer ${token}`;
}

export interface ForgeHttp {
  readonly target: ForgeTarget;
  call(req: ForgeRequest): Promise<ForgeResponse>;
  /** An error for an answer the client did not expect: auth, not found, or unreachable-class. */
  failure(res: ForgeResponse, doing: string): AppError;
}

/** Words a forge put in an error body, short and without anything that looks like a token. */
function forgeMessage(body: unknown, token: string | null): string {
  const b = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  // Whatever shape a hostile forge gives (nested a thousand deep, objects whose toString throws): a short text or nothing.
  // The token taken out before anything is cut short: half a token cut at the end is still half of it.
  const hide = (t: string) => (token ? t.split(token).join('…') : t);
  const said = (v: unknown, depth = 0): string => {
    if (typeof v === 'string') return hide(v).slice(0, 1000);
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    if (Array.isArray(v)) return depth > 3 ? '' : v.slice(0, 10).map((x) => said(x, depth + 1)).filter(Boolean).join('; ');
    if (v && typeof v === 'object') {
      try {
        return hide(JSON.stringify(v)).slice(0, 1000);
      } catch {
        return '';
      }
    }
    return '';
  };
  let text = typeof b.message === 'string' ? hide(b.message) : typeof b.error === 'string' ? hide(b.error) : said(b.message);
  const errors = Array.isArray(b.errors) ? b.errors.slice(0, 10).map((e) => said(e && typeof e === 'object' && 'message' in e ? (e as { message?: unknown }).message : e)).filter(Boolean) : [];
  if (errors.length) text = `${text} (${errors.join('; ')})`;
  return text.replace(/\s+/g, ' ').slice(0, 300);
}

export function forgeHttp(target: ForgeTarget, allowHosts: readonly string[], limits: ForgeHttpLimits = {}): ForgeHttp {
  const idleMs = limits.idleMs ?? IDLE_MS;
  const deadlineMs = limits.deadlineMs ?? DEADLINE_MS;
  const maxBody = limits.maxBody ?? MAX_BODY;
  const name = forgeName(target.kind) ?? 'The forge';
  const root = (target.apiUrl ?? defaultApiUrl(target.kind, target.host)).replace(/\/+$/, '');
  let api: RemoteUrl;
  try {
    api = parseRemoteUrl(root, allowHosts, { pathOptional: true });
  } catch (e) {
    throw new AppError('E_REMOTE_URL', `The ${name} API URL is refused: ${(e as Error).message}`, { field: 'apiUrl' });
  }
  const where = `${name} at ${api.host}`;
  const failure = (res: ForgeResponse, doing: string): AppError => {
    const said = forgeMessage(res.body, target.token);
    const tail = said ? ` ${name} said: ${said}` : '';
    if (res.status === 401) return new AppError('E_REMOTE_AUTH', `${where} refused the token while ${doing}: check the project's token (set, not expired).${tail}`, { host: api.host, forge: target.kind });
    if (res.status === 403) return new AppError('E_REMOTE_AUTH', `${where} did not allow ${doing} with the project's token: give it the scopes docs/remotes.md names.${tail}`, { host: api.host, forge: target.kind });
    if (res.status === 404) return new AppError('E_REMOTE_NOT_FOUND', `${where} has no ${target.repository} (or the token may not see it) while ${doing}.${tail}`, { host: api.host, forge: target.kind });
    if (res.status >= 300 && res.status < 400) return new AppError('E_REMOTE_UNREACHABLE', `${where} redirected while ${doing}; redirects are not followed: set the API URL (apiUrl) to where it points.`, { host: api.host, forge: target.kind });
    if (res.status === 409 || res.status === 422) return new AppError('E_REMOTE_REJECTED', `${where} refused ${doing}.${tail}`, { host: api.host, forge: target.kind });
    return new AppError('E_REMOTE_UNREACHABLE', `${where} answered ${res.status} while ${doing}.${tail}`, { host: api.host, forge: target.kind });
  };

  async function call(req: ForgeRequest): Promise<ForgeResponse> {
    const checked = await checkRemoteHost(api, allowHosts);
    const base = new URL(root);
    const url = new URL(base.pathname.replace(/\/+$/, '') + req.path, base);
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: Record<string, string> = {
      accept: target.kind === 'github' ? 'application/vnd.github+json' : 'application/json',
      'user-agent': 'bmad-orchestrator',
    };
    if (target.kind === 'github') headers['x-github-api-version'] = '2022-11-28';
    if (target.token) headers.authorization = authorization(target.kind, target.token);
    if (req.etag) headers['if-none-match'] = req.etag;
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const lib = url.protocol === 'https:' ? https : http;
    let deadline: NodeJS.Timeout | undefined;
    const res = await new Promise<ForgeResponse>((resolve, reject) => {
      let incoming: http.IncomingMessage | undefined;
      const r = lib.request(
        {
          method: req.method,
          protocol: url.protocol,
          hostname: api.host,
          port: api.port,
          path: url.pathname + url.search,
          headers,
          servername: url.protocol === 'https:' && !/^[\d.:]+$/.test(api.host) ? api.host : undefined,
          // Pinned: the socket goes to the address the rule checked, whatever the name says now.
          lookup: (_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => (opts?.all ? cb(null, [{ address: checked.address, family: checked.family }]) : cb(null, checked.address, checked.family)),
          timeout: idleMs,
        } as https.RequestOptions,
        (answer) => {
          incoming = answer;
          const chunks: Buffer[] = [];
          let size = 0;
          // Said before a byte is read: an answer announced too large is not waited for.
          if (Number(answer.headers['content-length'] ?? 0) > maxBody) {
            answer.destroy();
            reject(new AppError('E_REMOTE_UNREACHABLE', `${where} answered more than ${maxBody} bytes while ${req.doing}.`, { host: api.host, forge: target.kind }));
            return;
          }
          answer.on('data', (c: Buffer) => {
            size += c.length;
            if (size > maxBody) {
              answer.destroy();
              reject(new AppError('E_REMOTE_UNREACHABLE', `${where} answered more than ${maxBody} bytes while ${req.doing}.`, { host: api.host, forge: target.kind }));
              return;
            }
            chunks.push(c);
          });
          answer.on('error', reject);
          answer.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown = null;
            if (text.trim()) {
              try {
                body = JSON.parse(text);
              } catch {
                // Not JSON (an HTML error page, a proxy's words): the token out of it before it is cut short.
                body = { message: (target.token ? text.split(target.token).join('…') : text).slice(0, 200) };
              }
            }
            const etag = answer.headers.etag;
            resolve({ status: answer.statusCode ?? 0, body, headers: answer.headers, ...(typeof etag === 'string' ? { etag } : {}) });
          });
        },
      );
      const timedOut = () => Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' });
      r.on('timeout', () => r.destroy(timedOut()));
      deadline = setTimeout(() => {
        const e = timedOut();
        reject(e);
        incoming?.destroy(e);
        r.destroy(e);
      }, deadlineMs);
      deadline.unref();
      r.on('error', (e) => reject(e));
      if (payload) r.write(payload);
      r.end();
    }).catch((e: unknown) => {
      if (isAppError(e)) throw e;
      // The socket's own words (refused, reset, timed out, TLS); never the request's headers.
      const code = (e as NodeJS.ErrnoException)?.code;
      throw new AppError('E_REMOTE_UNREACHABLE', `${where} could not be reached while ${req.doing}${code ? ` (${code})` : ''}.`, { host: api.host, forge: target.kind });
    }).finally(() => clearTimeout(deadline));
    return res;
  }

  return { target, call, failure };
}

/** A call whose answer must be one of `ok` (else its error); 304 counts when `ok` holds it. */
export async function expect2xx(h: ForgeHttp, req: ForgeRequest, ok: (status: number) => boolean = (s) => s >= 200 && s < 300): Promise<ForgeResponse> {
  const res = await h.call(req);
  if (!ok(res.status)) throw h.failure(res, req.doing);
  return res;
}

export const enc = encodeURIComponent;

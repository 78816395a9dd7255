import { LOCAL_CALLER, type Caller } from '@/lib/core/access';
import { allowedHostRules, isAllowedHost, type HostRule } from '@/lib/core/config/network';
import { AppError } from '@/lib/errors';
import { getRuntime } from '@/lib/engine/runtime';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A browser request that changes state and comes from another site: refused whatever its
 * cookies say. Browsers send Origin on every such request (and Sec-Fetch-Site); a request
 * without either (curl, a script) is not a browser being tricked. The Origin must name this
 * server as configured (loopback or ALLOWED_HOSTS), never just echo the request's own Host,
 * which a page whose name resolves here (DNS rebinding) sends along with a matching Origin.
 */
export function isCrossOriginWrite(request: Request, allowed: HostRule[] = allowedHostRules()): boolean {
  if (SAFE_METHODS.has(request.method.toUpperCase())) return false;
  const origin = request.headers.get('origin');
  // The browser's own word, which no page can forge; it holds behind a proxy that rewrites Host.
  const site = request.headers.get('sec-fetch-site');
  if (site && site !== 'same-origin' && site !== 'none') return true;
  if (!origin) return false;
  let originHost: string;
  try {
    originHost = new URL(origin).host.toLowerCase();
  } catch {
    return true; // "null" (a sandboxed frame, a file: page) and garbage alike
  }
  if (!isAllowedHost(originHost, allowed)) return true;
  if (site) return false; // the browser vouches it is same-origin, and the origin is one of ours
  // Same name and port as the request came to (directly or through a proxy that says so).
  const hosts = [request.headers.get('host'), request.headers.get('x-forwarded-host'), new URL(request.url).host].filter((h): h is string => !!h).map((h) => h.toLowerCase());
  return !hosts.includes(originHost);
}

const REFUSALS: Record<string, string> = {
  none: 'Sign in first, or send an API token (Authorization: Bearer <token>).',
  'token-revoked': 'This token was revoked; make a new one on the account page.',
  'token-expired': 'This token expired; make a new one on the account page.',
  deactivated: 'This account is deactivated; ask an admin to reactivate it.',
  removed: 'This account was removed.',
};

const hasBearer = (request: Request) => /^Bearer\s/i.test(request.headers.get('authorization') ?? '');

/**
 * The caller of a request. Every route asks this first and passes the caller to the project and
 * conversation look-ups, which answer 404 for whatever the caller may not see. With accounts on,
 * a request with neither a session cookie nor an API token is a 401; a cookie request that
 * changes state from another origin is a 403 (a bearer token is never sent by a browser on its own).
 */
export async function callerOf(request: Request): Promise<Caller> {
  if (!hasBearer(request) && isCrossOriginWrite(request)) {
    throw new AppError('E_FORBIDDEN', 'Requests that change something must come from this site (the Origin does not match).');
  }
  const { accounts } = getRuntime();
  if (!accounts) return LOCAL_CALLER;
  const found = await accounts.identify(request);
  if (found.caller) return found.caller;
  throw new AppError('E_UNAUTHENTICATED', REFUSALS[found.refusal ?? 'none']);
}

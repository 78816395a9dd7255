import { NextResponse, type NextRequest } from 'next/server';
import { allowedHostRules, isAllowedHost } from '@/lib/core/config/network';

/**
 * Runs (on Node, in the server's process) before every request, pages, API and static files alike.
 *
 * A Host the server does not know is refused before anything runs: a web page whose name an
 * attacker points at 127.0.0.1 (DNS rebinding) would otherwise be same-origin with this server and
 * read it, or claim a fresh one's first admin. The names are loopback plus ALLOWED_HOSTS; the
 * start checks (instrumentation, scripts/start.mjs) refuse a malformed list, so one here admits
 * only loopback.
 */

/** An error in the shape of the API the path belongs to: OpenAI's under /v1, ours elsewhere. */
function refuse(path: string, status: number, code: string, message: string) {
  if (path === '/v1' || path.startsWith('/v1/')) {
    return NextResponse.json({ error: { message, type: status === 403 ? 'permission_error' : 'invalid_request_error', param: null, code } }, { status });
  }
  return NextResponse.json({ success: false, error: message, code }, { status });
}

export function proxy(request: NextRequest) {
  const path = request.nextUrl.pathname;
  const host = request.headers.get('host');
  if (!isAllowedHost(host, allowedHostRules())) {
    return refuse(path, 403, 'E_FORBIDDEN', 'This server does not answer to that host name. Its administrator lists the names it answers to in ALLOWED_HOSTS.');
  }
  // Route parameters are decoded by Next before a handler runs; a malformed escape (`%ZZ`) would
  // end as a plain-text 500. Such paths are bad input: a 400 in the API's error shape.
  if (path.startsWith('/api/conversations/') || path.startsWith('/v1/')) {
    for (const segment of path.split('/')) {
      try {
        decodeURIComponent(segment);
      } catch {
        return refuse(path, 400, 'E_VALIDATION', 'Invalid URL encoding in the path.');
      }
    }
  }
  return NextResponse.next();
}

// No matcher: every path, `_next/static` included (a foreign name gets nothing, not even the bundle;
// one rule is easier to trust than a list of exceptions).

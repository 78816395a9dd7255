import { NextResponse, type NextRequest } from 'next/server';

/**
 * Route parameters are decoded by Next before a handler runs; a malformed escape (`%ZZ`) would
 * end as a plain-text 500. Such paths are bad input: a 400 in the API's error shape.
 */
export function proxy(request: NextRequest) {
  for (const segment of request.nextUrl.pathname.split('/')) {
    try {
      decodeURIComponent(segment);
    } catch {
      return NextResponse.json({ success: false, error: 'Invalid URL encoding in the path.', code: 'E_VALIDATION' }, { status: 400 });
    }
  }
  return NextResponse.next();
}

// Only the routes with path parameters need the check.
export const config = { matcher: '/api/conversations/:path+' };

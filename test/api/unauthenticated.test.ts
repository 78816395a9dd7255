import fs from 'node:fs';
import path from 'node:path';
import { REPO, startHarness, type Harness } from './harness';

/**
 * Every route of app/api and of the OpenAI-compatible app/v1, found on disk (so a new one cannot
 * be forgotten), with every method it exports, asked without credentials: 401 E_UNAUTHENTICATED
 * (under /v1 in OpenAI's error shape), except the health check, Better Auth's own routes
 * (sign-in must be reachable signed out) and forges' webhooks, whose proof is the project's webhook
 * secret, not a person (test/api/forges.test.ts: 401 without it, 404 for an unknown project).
 */
const API = path.join(REPO, 'app/api');
const V1 = path.join(REPO, 'app/v1');
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const OPEN = [/^\/api\/health$/, /^\/api\/auth(\/|$)/, /^\/api\/forge\/[^/]+\/hook$/];

function routeFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return routeFiles(p);
    return e.name === 'route.ts' ? [p] : [];
  });
}

interface Route {
  url: string;
  params: Record<string, string | string[]>;
  module: Record<string, unknown>;
}

function routes(): Route[] {
  return [...routeFiles(API).map((file) => ({ file, root: API, prefix: '/api' })), ...routeFiles(V1).map((file) => ({ file, root: V1, prefix: '/v1' }))].map(({ file, root, prefix }) => {
    const segments = path.relative(root, path.dirname(file)).split(path.sep).filter(Boolean);
    const params: Record<string, string | string[]> = {};
    const url = segments.map((s) => {
      const catchAll = /^\[\.\.\.(\w+)\]$/.exec(s);
      if (catchAll) return ((params[catchAll[1]!] = ['x', 'y.md']) as string[]).join('/');
      const one = /^\[(\w+)\]$/.exec(s);
      if (one) return (params[one[1]!] = 'x1');
      return s;
    });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return { url: `${prefix}/${url.join('/')}`.replace(/\/$/, ''), params, module: require(file) as Record<string, unknown> };
  });
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({}, { auth: {} });
});
afterAll(async () => {
  await h.close();
});

it('answers 401 on every route and method without a session or a token', async () => {
  const found = routes();
  // The walk sees the whole tree (a broken glob would pass vacuously).
  expect(found.map((r) => r.url)).toEqual(expect.arrayContaining(['/api/chat', '/api/conversations/x1', '/api/conversations/x1/copy', '/api/projects/x1/members', '/api/tokens/x1', '/api/users', '/api/health', '/api/projects/x1/build', '/api/projects/x1/workspaces', '/api/projects/x1/workspaces/x1/diff', '/api/projects/x1/workspaces/x1/merge', '/v1/models', '/v1/models/x/y.md', '/v1/chat/completions', '/v1/x/y.md']));
  const asked: string[] = [];
  const wrong: string[] = [];
  for (const route of found) {
    for (const method of METHODS) {
      const handler = route.module[method];
      if (typeof handler !== 'function') continue;
      if (OPEN.some((re) => re.test(route.url))) continue;
      const tries: Record<string, string>[] = [{}, { authorization: 'Bearer bmad_not-a-token' }, { cookie: 'better-auth.session_token=forged.value' }];
      for (const credentials of tries) {
        const hasBody = !['GET', 'HEAD', 'OPTIONS', 'DELETE'].includes(method);
        const request = new Request(`http://localhost${route.url}?projectId=x1`, {
          method,
          headers: { 'content-type': 'application/json', ...credentials },
          ...(hasBody ? { body: JSON.stringify({ agentId: 'x', message: 'hi', name: 'x', email: 'x@example.com', role: 'viewer', path: 'a', version: 'b', model: 'x/y', messages: [{ role: 'user', content: 'hi' }] }) } : {}),
        });
        const res: Response = await (handler as (r: Request, c: unknown) => Promise<Response>)(request, { params: Promise.resolve(route.params) });
        asked.push(`${method} ${route.url}`);
        const body = res.status === 401 ? await res.json() : null;
        const code = route.url.startsWith('/v1/') ? body?.error?.code : body?.code;
        if (res.status !== 401 || code !== 'E_UNAUTHENTICATED') wrong.push(`${method} ${route.url} ${Object.keys(credentials).join() || 'none'} → ${res.status}`);
      }
    }
  }
  expect(wrong).toEqual([]);
  expect(new Set(asked).size).toBeGreaterThanOrEqual(20);
});

it('keeps the health check and the sign-in routes open', async () => {
  const { GET: health } = await import('@/app/api/health/route');
  expect((await health(new Request('http://localhost/api/health'))).status).toBe(200);
  const { GET: setup } = await import('@/app/api/auth/setup/route');
  expect((await setup(new Request('http://localhost/api/auth/setup'))).status).toBe(200);
});

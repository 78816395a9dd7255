import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAppError } from '../../core/errors';
import { forgeHttp } from './forge-http';
import { GiteaClient, GitHubClient, GitLabClient } from './forge-clients';
import type { ForgeTarget } from './forge';

/**
 * forge-http against hostile forges: real HTTP servers on 127.0.0.1 that answer what an attacker
 * would (redirects elsewhere, bodies without end, a byte at a time, nested JSON, the token echoed
 * back), and API URLs the remote URL rule must refuse before a byte is sent.
 */
const TOKEN = 'tok_0123456789abcdef0123456789abcdef';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;
interface Server {
  port: number;
  hostPort: string;
  seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  stop(): Promise<void>;
}

const servers: Server[] = [];
async function serve(handler: Handler): Promise<Server> {
  const seen: Server['seen'] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const s: Server = {
    port,
    hostPort: `127.0.0.1:${port}`,
    seen,
    stop: () =>
      new Promise<void>((r) => {
        for (const sock of sockets) sock.destroy();
        server.close(() => r());
      }),
  };
  servers.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

const target = (s: Server, over: Partial<ForgeTarget> = {}): ForgeTarget => ({ kind: 'github', apiUrl: `http://${s.hostPort}/api/v3`, repository: 'team/app', host: '127.0.0.1', token: TOKEN, ...over });

async function failureOf(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    if (!isAppError(e)) throw e;
    return e;
  }
  throw new Error('expected a refusal');
}

/** No run of 8 characters of the token anywhere in `text`: not whole, not half. */
function holdsTokenPart(text: string): boolean {
  for (let i = 0; i + 8 <= TOKEN.length; i++) if (text.includes(TOKEN.slice(i, i + 8))) return true;
  return false;
}

describe('forge-http against a hostile forge', () => {
  it('does not follow a redirect to another host; the token is not sent there', async () => {
    const elsewhere = await serve((_q, res) => res.end('{}'));
    const forge = await serve((_q, res) => {
      res.writeHead(307, { location: `http://${elsewhere.hostPort}/api/v3/repos/team/app/pulls/1` });
      res.end();
    });
    const h = forgeHttp(target(forge), [forge.hostPort, elsewhere.hostPort]);
    const e = await failureOf(new GitHubClient(h).getPullRequest(1));
    expect(e.code).toBe('E_REMOTE_UNREACHABLE');
    expect(e.message).toMatch(/redirect/);
    expect(elsewhere.seen).toHaveLength(0);
  });

  it('gives up on an answer dribbled a byte at a time (the deadline counts, not only silence)', async () => {
    const forge = await serve((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(' ')), 20);
      res.on('close', () => clearInterval(t));
    });
    const h = forgeHttp(target(forge), [forge.hostPort], { idleMs: 10_000, deadlineMs: 400 });
    const e = await failureOf(h.call({ method: 'GET', path: '/repos/team/app/pulls/1', doing: 'reading pull request #1' }));
    expect(e.code).toBe('E_REMOTE_UNREACHABLE');
    expect(e.message).toMatch(/ETIMEDOUT/);
  });

  it('gives up on a forge that accepts and says nothing', async () => {
    const forge = await serve(() => undefined);
    const h = forgeHttp(target(forge), [forge.hostPort], { idleMs: 200, deadlineMs: 60_000 });
    const e = await failureOf(h.call({ method: 'GET', path: '/repos/team/app/pulls/1', doing: 'reading pull request #1' }));
    expect(e.code).toBe('E_REMOTE_UNREACHABLE');
  });

  it('refuses an answer announced too large before reading it, and an endless one at the bound', async () => {
    const announced = await serve((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 ** 40) });
      res.write('[');
    });
    const e1 = await failureOf(forgeHttp(target(announced), [announced.hostPort]).call({ method: 'GET', path: '/x', doing: 'reading' }));
    expect(e1).toMatchObject({ code: 'E_REMOTE_UNREACHABLE' });
    expect(e1.message).toMatch(/more than/);

    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const endless = await serve((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const more = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    });
    const e2 = await failureOf(forgeHttp(target(endless), [endless.hostPort]).call({ method: 'GET', path: '/x', doing: 'reading' }));
    expect(e2.message).toMatch(/more than 8388608 bytes/);
  });

  it('an error body nested deep or shaped oddly is an error in words, not a crash', async () => {
    const deep = 200_000;
    const bodies = [
      '['.repeat(deep) + ']'.repeat(deep),
      `{"message":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`,
      `{"message":${'['.repeat(100_000)}"x"${']'.repeat(100_000)},"errors":${'['.repeat(5000)}1${']'.repeat(5000)}}`,
      '{"message":{"toString":1},"errors":[null,{"message":{"x":[1,2]}},7]}',
    ];
    let i = 0;
    const forge = await serve((_q, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(bodies[i++]);
    });
    const h = forgeHttp(target(forge), [forge.hostPort]);
    for (const _ of bodies) {
      const res = await h.call({ method: 'GET', path: '/x', doing: 'reading' });
      const e = h.failure(res, 'reading');
      expect(e.code).toBe('E_REMOTE_AUTH');
      expect(e.message.length).toBeLessThan(700);
    }
  });

  it('a token echoed back in an error (JSON or not, whole or at the cut) is not in the message', async () => {
    const bodies = [
      JSON.stringify({ message: `bad credentials: ${TOKEN}`, errors: [{ message: TOKEN }] }),
      // Not JSON, the token across the point where the text is cut short.
      `${'x'.repeat(190)}${TOKEN}`,
      JSON.stringify({ message: { token: TOKEN } }),
      JSON.stringify({ message: `${'y'.repeat(995)}${TOKEN}` }),
      JSON.stringify({ message: 'no', errors: [`${'z'.repeat(995)}${TOKEN}`] }),
    ];
    let i = 0;
    const forge = await serve((_q, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(bodies[i++]);
    });
    const h = forgeHttp(target(forge), [forge.hostPort]);
    for (const _ of bodies) {
      const e = await failureOf(new GitHubClient(h).getPullRequest(1));
      expect(e.code).toBe('E_REMOTE_AUTH');
      expect(holdsTokenPart(e.message)).toBe(false);
      expect(holdsTokenPart(JSON.stringify(e.details ?? {}))).toBe(false);
    }
    // The token travels in the Authorization header and nowhere else of the request.
    expect(forge.seen.every((r) => r.headers.authorization === `Bearer ${TOKEN}` && !holdsTokenPart(r.url) && !holdsTokenPart(r.body))).toBe(true);
  });

  it('links a forge gives are kept only when they are http(s) pages', async () => {
    const forge = await serve((q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (q.url!.includes('/check-runs')) res.end(JSON.stringify({ check_runs: [{ name: 'x'.repeat(5000), status: 'completed', conclusion: 'success', html_url: 'javascript:alert(1)' }, { name: 'ok', status: 'completed', conclusion: 'success', html_url: 'https://ci.example.com/1' }] }));
      else if (q.url!.includes('/status')) res.end(JSON.stringify({ statuses: [{ context: 'd', state: 'success', target_url: 'data:text/html,<script>alert(1)</script>' }, { context: 'u', state: 'success', target_url: 'https://user:pw@ci.example.com/' }] }));
      else res.end(JSON.stringify({ number: 1, state: 'open', html_url: 'javascript:alert(document.cookie)', head: { sha: 'a'.repeat(40) } }));
    });
    const client = new GitHubClient(forgeHttp(target(forge), [forge.hostPort]));
    const got = await client.getPullRequest(1);
    expect(got.changed && got.value.url).toBe('');
    const checks = await client.checks('a'.repeat(40));
    expect(checks.checks.map((c) => c.url ?? null)).toEqual([null, 'https://ci.example.com/1', null, null]);
    expect(checks.checks[0]!.name).toHaveLength(200);
  });
});

describe('forge clients against answers of any shape', () => {
  it('reads nulls, numbers and objects whose toString is not a function without throwing; at most 100 checks kept', async () => {
    const odd = { toString: 1, valueOf: 1 };
    const many = Array.from({ length: 500 }, (_, i) => ({ context: `c${i}`, name: `r${i}`, state: 'success', status: 'success', conclusion: 'success' }));
    const forge = await serve((q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const u = q.url!;
      if (/pulls\?|merge_requests\?/.test(u)) res.end(JSON.stringify([null, 1, 'x', { head: 'x' }, { head: { ref: odd }, source_branch: odd }]));
      else if (u.includes('/check-runs')) res.end(JSON.stringify({ check_runs: [null, 7, { name: odd, status: 'completed', conclusion: odd, html_url: odd }, ...many] }));
      else if (u.includes('/pipelines')) res.end(JSON.stringify([null, { id: odd, status: odd, web_url: odd }, { id: '12', status: 'success' }]));
      else if (u.includes('/status')) res.end(JSON.stringify({ statuses: [null, { context: odd, state: odd, status: odd, target_url: odd }, ...many] }));
      else res.end(JSON.stringify({ number: odd, iid: odd, state: odd, title: odd, draft: odd, html_url: odd, web_url: odd, head: { sha: odd }, sha: odd, merged: true, merge_commit_sha: odd }));
    });
    const sha = 'a'.repeat(40);
    for (const kind of ['github', 'gitlab', 'gitea'] as const) {
      const h = forgeHttp(target(forge, { kind, apiUrl: `http://${forge.hostPort}/api` }), [forge.hostPort]);
      const client = kind === 'github' ? new GitHubClient(h) : kind === 'gitlab' ? new GitLabClient(h) : new GiteaClient(h);
      expect(await client.findPullRequest('bmad/x', 'main')).toBeNull();
      const got = await client.getPullRequest(1);
      expect(got.changed && Number.isNaN(got.value.number)).toBe(true);
      expect(got.changed && got.value.url).toBe('');
      const checks = await client.checks(sha);
      expect(checks.checks.length).toBeLessThanOrEqual(100);
      expect(checks.checks.every((c) => typeof c.name === 'string' && c.name.length > 0 && c.url === undefined)).toBe(true);
      // A state the forge did not say in words is not a success; GitLab's newest pipeline (id 12) is the verdict.
      expect(checks.state).toBe(kind === 'gitlab' ? 'success' : 'failure');
    }
  });
});

describe('forge-http: API URLs the rule refuses, before a byte is sent', () => {
  it('an unlisted loopback forge, a private one and a link-local one', async () => {
    const forge = await serve((_q, res) => res.end('{}'));
    const refused = [
      // Listed nowhere: plain http is refused, and so is https to the loopback address.
      { apiUrl: `http://${forge.hostPort}/api/v3`, allow: [] as string[] },
      { apiUrl: `https://${forge.hostPort}/api/v3`, allow: [] },
      { apiUrl: `https://127.0.0.2:${forge.port}/api/v3`, allow: [forge.hostPort] },
      { apiUrl: `https://[::ffff:127.0.0.1]:${forge.port}/api/v3`, allow: [] },
      { apiUrl: 'https://2130706433/api/v3', allow: [] },
      { apiUrl: 'https://10.1.2.3/api/v3', allow: [] },
      { apiUrl: 'https://169.254.169.254/latest/meta-data', allow: [] },
      { apiUrl: 'https://[fe80::1]/api/v3', allow: [] },
      { apiUrl: 'file:///etc/passwd', allow: [] },
    ];
    for (const r of refused) {
      let e;
      try {
        e = await failureOf(forgeHttp(target(forge, { apiUrl: r.apiUrl }), r.allow).call({ method: 'GET', path: '/x', doing: 'reading' }));
      } catch (thrown) {
        e = thrown;
      }
      expect(e).toMatchObject({ code: 'E_REMOTE_URL' });
    }
    expect(forge.seen).toHaveLength(0);
  });
});

import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { appEnv, freePort, makeFolders, REPO, startApp, type AppServer, type Folders } from './support';

/**
 * DNS rebinding against the production build: a page whose name resolves to 127.0.0.1 sends its
 * own name as Host (and Origin). Every route refuses a Host the server does not know; the official
 * MCP conformance suite checks /api/mcp; a fresh server's first admin cannot be claimed from such
 * a page; a server listening beyond loopback needs ALLOWED_HOSTS.
 */
const run = promisify(execFile);
const CONFORMANCE = path.join(REPO, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const FOREIGN = 'evil.example.com';

let folders: Folders;
let setupFolders: Folders | undefined;
const servers: AppServer[] = [];

beforeAll(async () => {
  folders = await makeFolders('hosts');
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await folders?.cleanup();
  await setupFolders?.cleanup();
});

interface Raw {
  status: number;
  body: string;
}

/** A request with exactly this Host header (fetch would drop it), to the server's loopback port. */
function raw(port: number, method: string, urlPath: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const MCP_INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hosts-e2e', version: '1.0.0' } } });

/** One request of each kind the server answers: pages, the API, MCP, Better Auth's routes, static files. */
function walk(staticAsset: string): Array<{ method: string; path: string; headers?: Record<string, string>; body?: string }> {
  return [
    { method: 'GET', path: '/' },
    { method: 'GET', path: '/settings' },
    { method: 'GET', path: '/sign-in' },
    { method: 'GET', path: '/no-such-page' },
    { method: 'GET', path: staticAsset },
    { method: 'GET', path: '/api/health' },
    { method: 'GET', path: '/api/projects' },
    { method: 'GET', path: '/api/agents' },
    { method: 'GET', path: '/api/conversations' },
    { method: 'GET', path: '/api/conversations/%ZZ' },
    { method: 'POST', path: '/api/chat', headers: { 'content-type': 'application/json' }, body: '{}' },
    { method: 'POST', path: '/api/mcp', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: MCP_INIT },
    { method: 'GET', path: '/api/auth/setup' },
    { method: 'GET', path: '/api/auth/get-session' },
    { method: 'POST', path: '/api/auth/sign-in/email', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com', password: 'whatever-1' }) },
  ];
}

/** A file of the client bundle, as the home page links it. */
async function someStaticAsset(app: AppServer): Promise<string> {
  const html = await (await fetch(`${app.url}/`)).text();
  const asset = /\/_next\/static\/[^"']+\.js/.exec(html)?.[0];
  expect(asset).toBeDefined();
  return asset!;
}

describe('AUTH=off on loopback', () => {
  let app: AppServer;
  beforeAll(async () => {
    app = await startApp(folders);
    servers.push(app);
  }, 120_000);

  it('every route refuses a foreign Host with 403 before doing anything; loopback names on any form are served', async () => {
    const requests = walk(await someStaticAsset(app));
    for (const r of requests) {
      for (const host of [FOREIGN, `${FOREIGN}:${app.port}`, `localhost.${FOREIGN}`, `127.0.0.1.nip.io:${app.port}`, '0.0.0.0', `127.0.0.1:${app.port}.evil.example.com`]) {
        const res = await raw(app.port, r.method, r.path, { ...r.headers, host, origin: `http://${host}` }, r.body);
        expect({ ...r, host, status: res.status }).toEqual({ ...r, host, status: 403 });
        expect(res.body).not.toContain('bmad');
      }
      for (const host of [`127.0.0.1:${app.port}`, `localhost:${app.port}`, 'localhost', `[::1]:${app.port}`]) {
        const res = await raw(app.port, r.method, r.path, { ...r.headers, host }, r.body);
        expect({ ...r, host, forbidden: res.status === 403 }).toEqual({ ...r, host, forbidden: false });
      }
    }
    // Without a Host at all (HTTP/1.1 requires one): refused too.
    const hostless = await new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: app.port, path: '/api/projects', setHost: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    expect([400, 403]).toContain(hostless);
    // The refusal is in the API's error shape, and names what to set.
    const refused = await raw(app.port, 'GET', '/api/projects', { host: FOREIGN });
    expect(JSON.parse(refused.body)).toMatchObject({ success: false, code: 'E_FORBIDDEN', error: expect.stringContaining('ALLOWED_HOSTS') });
    // The malformed-path check still answers for the conversations' routes.
    expect((await raw(app.port, 'GET', '/api/conversations/%ZZ', { host: `127.0.0.1:${app.port}` })).status).toBe(400);
  }, 120_000);

  it('a write whose Origin is a foreign name is refused even when the Host is ours', async () => {
    const res = await raw(app.port, 'POST', '/api/chat', { host: `127.0.0.1:${app.port}`, origin: `http://${FOREIGN}`, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' }, JSON.stringify({ agentId: 'product-lead', message: 'hi' }));
    expect(res.status).toBe(403);
  });

  it("passes the MCP conformance suite's dns-rebinding-protection scenario on /api/mcp, and reports the others", async () => {
    const out = path.join(folders.root, 'conformance');
    const url = `http://127.0.0.1:${app.port}/api/mcp`;
    const scenarios = (await run(process.execPath, [CONFORMANCE, 'list', '--server'], { cwd: REPO })).stdout
      .split('\n')
      .map((l) => /^\s*-\s*(\S+)/.exec(l)?.[1])
      .filter((s): s is string => !!s);
    expect(scenarios).toContain('dns-rebinding-protection');
    const results: Record<string, { passed: number; failed: number; failures: string[] }> = {};
    for (const scenario of scenarios) {
      const dir = path.join(out, scenario);
      await run(process.execPath, [CONFORMANCE, 'server', '--url', url, '--scenario', scenario, '-o', dir], { cwd: REPO, timeout: 60_000 }).catch((e) => e);
      const files = (await fs.readdir(dir, { recursive: true })).filter((f) => String(f).endsWith('checks.json'));
      const checks = files.length ? (JSON.parse(await fs.readFile(path.join(dir, String(files[0])), 'utf8')) as Array<{ id: string; status: string; errorMessage?: string }>) : [];
      results[scenario] = {
        passed: checks.filter((c) => c.status === 'SUCCESS').length,
        failed: checks.filter((c) => c.status === 'FAILURE').length,
        failures: checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`.slice(0, 200)),
      };
    }
    process.stdout.write(`MCP conformance (server scenarios) against ${url}:\n${Object.entries(results).map(([s, r]) => `  ${r.failed ? 'FAIL' : 'pass'} ${s} (${r.passed} passed, ${r.failed} failed)${r.failures.length ? `\n      ${r.failures.join('\n      ')}` : ''}`).join('\n')}\n`);
    expect(results['dns-rebinding-protection']).toEqual({ passed: 2, failed: 0, failures: [] });
    // What this server offers of the protocol (it has tools, no prompts or resources of the suite's).
    for (const scenario of ['server-initialize', 'ping', 'tools-list']) expect({ scenario, ...results[scenario] }).toMatchObject({ scenario, failed: 0, passed: expect.any(Number) });
  }, 600_000);
});

describe('accounts on, a fresh server waiting for its first admin, reached as orchestrator.test', () => {
  let app: AppServer;
  beforeAll(async () => {
    setupFolders = await makeFolders('hosts-setup');
    app = await startApp(setupFolders, { AUTH: 'on', ALLOWED_HOSTS: 'orchestrator.test, .team.test' });
    servers.push(app);
  }, 120_000);

  const setup = (host: string, origin: string, email: string) =>
    raw(app.port, 'POST', '/api/auth/setup', { host, origin, 'content-type': 'application/json' }, JSON.stringify({ email, name: 'Root', password: 'root-password-1' }));

  it('a page whose name resolves here cannot claim the first admin; the real name can', async () => {
    // The attack: Host and Origin both the attacker's name.
    expect((await setup(FOREIGN, `http://${FOREIGN}`, 'attacker@evil.example.com')).status).toBe(403);
    // Our Host, their Origin (a cross-site form), and the reverse: refused too.
    expect((await setup(`127.0.0.1:${app.port}`, `http://${FOREIGN}`, 'attacker@evil.example.com')).status).toBe(403);
    expect((await setup(FOREIGN, `http://127.0.0.1:${app.port}`, 'attacker@evil.example.com')).status).toBe(403);
    const state = await raw(app.port, 'GET', '/api/auth/setup', { host: `127.0.0.1:${app.port}` });
    expect(JSON.parse(state.body).data).toMatchObject({ auth: true, needsSetup: true });
    // Better Auth's own routes refuse the name too.
    expect((await raw(app.port, 'POST', '/api/auth/sign-up/email', { host: FOREIGN, origin: `http://${FOREIGN}`, 'content-type': 'application/json' }, JSON.stringify({ email: 'x@evil.example.com', name: 'x', password: 'x-password-1' }))).status).toBe(403);

    // The names in ALLOWED_HOSTS (any port, subdomains of a dotted entry) are served.
    for (const host of ['orchestrator.test', 'orchestrator.test:8443', 'a.team.test', 'team.test']) expect((await raw(app.port, 'GET', '/api/health', { host })).status).toBe(200);
    expect((await raw(app.port, 'GET', '/api/health', { host: 'x.orchestrator.test' })).status).toBe(403);
    const made = await setup('orchestrator.test', 'http://orchestrator.test', 'root@example.com');
    expect(made.status).toBe(201);
    expect(JSON.parse(made.body).data).toMatchObject({ email: 'root@example.com', role: 'admin' });
  });
});

describe('starting', () => {
  async function nextStart(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
    const port = await freePort();
    return new Promise((resolve) => {
      let output = '';
      const proc = spawn(process.execPath, [path.join(REPO, 'node_modules/next/dist/bin/next'), 'start', '-p', String(port), ...args], { cwd: REPO, env: appEnv(folders, env), stdio: ['ignore', 'pipe', 'pipe'] });
      proc.stdout!.on('data', (d) => (output += d));
      proc.stderr!.on('data', (d) => (output += d));
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, output });
      });
    });
  }

  it('next start beyond loopback without ALLOWED_HOSTS refuses to start, naming it; a malformed entry too', async () => {
    const bare = await nextStart(['-H', '0.0.0.0'], { AUTH: 'on' });
    expect(bare.code).not.toBe(0);
    expect(bare.code).not.toBeNull();
    expect(bare.output).toContain('refusing to start: HOST is 0.0.0.0, beyond loopback, but ALLOWED_HOSTS is not set');
    const malformed = await nextStart(['-H', '127.0.0.1'], { ALLOWED_HOSTS: 'https://orchestrator.example.com' });
    expect(malformed.code).not.toBe(0);
    expect(malformed.output).toContain('ALLOWED_HOSTS entry "https://orchestrator.example.com" is not a host name');
  }, 90_000);
});

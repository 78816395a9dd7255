import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { POST as createRun, GET as listRuns } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, REPO, type Harness } from './harness';

/**
 * `npm run bmad -- run ...` as CI runs it: a child process speaking HTTP to the real route
 * handlers (served by a plain node:http server here), one exit code per way a run ends.
 */
let h: Harness;
let projectsRoot: string;
let server: http.Server;
let url: string;
let inputFile: string;
const authorizations: Array<string | undefined> = [];

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-runs-cli-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  inputFile = path.join(projectsRoot, 'brief.md');
  await fs.writeFile(inputFile, '# Brief\n\nA school-forms inbox for busy parents.\n');
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
  server = http.createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const request = new Request(`http://localhost${req.url}`, {
        method: req.method,
        headers: req.headers as Record<string, string>,
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      const pathname = new URL(request.url).pathname;
      if (pathname.startsWith('/api/runs')) authorizations.push(req.headers.authorization);
      const id = /^\/api\/runs\/([^/]+)$/.exec(pathname)?.[1];
      const response =
        pathname === '/api/runs' && req.method === 'POST'
          ? await createRun(request)
          : pathname === '/api/runs' && req.method === 'GET'
            ? await listRuns(request)
            : id && req.method === 'GET'
              ? await getRun(request, params({ id }))
              : new Response('not found', { status: 404 });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 240_000);
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await h.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const { BMAD_TOKEN: _drop, ...base } = process.env;
    const child = spawn(path.join(REPO, 'node_modules/.bin/tsx'), [path.join(REPO, 'scripts/bmad.ts'), ...args], { cwd: REPO, env: { ...base, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const run = (...extra: string[]) => ['run', '--url', url, '--project', 'p612', '--skill', 'bmad-prd', '--intent', 'create', '--input', inputFile, ...extra];

it('exits 0 on complete, printing the run with its result, and sends BMAD_TOKEN as a bearer token', async () => {
  h.model.setScript('headless-complete');
  authorizations.length = 0;
  const out = await cli(run('--wait'), { BMAD_TOKEN: 'tok-123' });
  expect(out.stderr).toContain('complete');
  expect(out.code).toBe(0);
  const printed = JSON.parse(out.stdout);
  expect(printed).toMatchObject({ status: 'complete', result: { status: 'complete', intent: 'create' }, artifacts: [{ path: '_bmad-output/planning-artifacts/prd.md' }] });
  // The file's text went verbatim into the first message.
  const first = (await h.runtime.store.messages(printed.conversationId)).find((m) => m.role === 'user') as { content: string };
  expect(first.content).toBe('*PRD headless: true\nintent: create\n\n# Brief\n\nA school-forms inbox for busy parents.');
  expect(authorizations.length).toBeGreaterThan(1);
  expect(authorizations.every((a) => a === 'Bearer tok-123')).toBe(true);
}, 60_000);

it('exits 10 on partial, 20 on blocked, 1 on failed; sends no token without BMAD_TOKEN', async () => {
  authorizations.length = 0;
  h.model.setScript('headless-partial');
  const partial = await cli(run('--wait'));
  expect(partial.code).toBe(10);
  expect(JSON.parse(partial.stdout).result.open_questions).toEqual(['Which pricing tier ships first?']);
  h.model.setScript('headless-question');
  const blocked = await cli(run('--wait'));
  expect(blocked.code).toBe(20);
  expect(JSON.parse(blocked.stdout).result.reason).toBe('Who is the primary user of this product?');
  h.model.setScript('headless-no-json');
  const failed = await cli(run('--wait'));
  expect(failed.code).toBe(1);
  expect(JSON.parse(failed.stdout).status).toBe('failed');
  expect(failed.stderr).toContain('E_NO_RESULT');
  expect(authorizations.every((a) => a === undefined)).toBe(true);
}, 90_000);

it('exits 1 with the server refusal on a skill without a contract, 2 on bad usage, 0 once queued without --wait', async () => {
  const refused = await cli(['run', '--url', url, '--project', 'p612', '--skill', 'bmad-code-review', '--input', inputFile]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain('HTTP 422 E_NOT_HEADLESS');
  expect(refused.stderr).toContain('bmad-prd');
  expect((await cli(['run', '--url', url])).code).toBe(2);
  h.model.setScript('headless-complete');
  const queued = await cli(run());
  expect(queued.code).toBe(0);
  expect(JSON.parse(queued.stdout)).toEqual({ runId: expect.stringMatching(/^run_/), status: 'queued' });
}, 60_000);

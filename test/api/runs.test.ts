import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { POST as createRun, GET as listRuns } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { POST as cancelRun } from '@/app/api/runs/[id]/cancel/route';
import { GET as runEvents } from '@/app/api/runs/[id]/events/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import { projectVersions } from '@/lib/content/projects';
import { ANSWER_RULE } from '@/lib/engine/runs';
import { HEADLESS_QUESTION, PRD_CONTENT } from '../scripted-model/scenarios';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * Headless runs on a real BMAD 6.12 install, through the real route handlers, the chat service
 * and the real SDK against the scripted model.
 */
let h: Harness;
let projectsRoot: string;
let projectRoot: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-runs-'));
  projectRoot = await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  await fs.mkdir(path.join(projectRoot, 'docs'), { recursive: true });
  await fs.writeFile(path.join(projectRoot, 'docs', 'brief.md'), '# Brief\n\nA school-forms inbox for busy parents.\n');
  // One run at a time: a hanging run keeps the next one queued.
  process.env.RUNS_CONCURRENCY = '1';
  process.env.RUNS_WEBHOOK_BACKOFF_MS = '20';
  // The test's webhook receiver listens on 127.0.0.1.
  process.env.RUNS_WEBHOOK_ALLOW_PRIVATE = '1';
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  await h.close();
  process.env = savedEnv;
  await fs.rm(projectsRoot, { recursive: true, force: true });
});
afterEach(() => h.model.setScript(undefined));

async function submit(body: Record<string, unknown>) {
  const res = await createRun(jsonRequest('/api/runs', { projectId: 'p612', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox for busy parents.', ...body }));
  return { status: res.status, json: (await res.json()) as any };
}

async function run(id: string) {
  const res = await getRun(get(`/api/runs/${id}`), params({ id }));
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data;
}

async function waitFor(id: string, statuses: string[], timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await run(id);
    if (statuses.includes(r.status)) return r;
    if (Date.now() > until) throw new Error(`run ${id} is ${r.status}, not ${statuses.join('/')}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

async function conversation(id: string) {
  const res = await getConversation(get(`/api/conversations/${id}`), params({ id }));
  return ((await res.json()) as any).data;
}

describe('headless runs', () => {
  it('runs bmad-prd headless to a complete result, with the PRD it wrote and its version', async () => {
    h.model.setScript('headless-complete');
    const created = await submit({});
    expect(created.status).toBe(202);
    expect(created.json.data).toMatchObject({ runId: expect.stringMatching(/^run_/), status: 'queued', skill: 'bmad-prd', agentId: 'bmad-agent-pm' });
    const r = await waitFor(created.json.data.runId, ['complete', 'partial', 'blocked', 'failed']);
    expect(r.status).toBe('complete');
    expect(r.result).toMatchObject({ status: 'complete', intent: 'create', open_questions: [] });
    expect(r.error).toBeNull();
    expect(r.artifacts).toEqual([{ path: '_bmad-output/planning-artifacts/prd.md', version: expect.stringMatching(/^[0-9a-f]{40}$/) }]);
    expect(await fs.readFile(path.join(projectRoot, '_bmad-output/planning-artifacts/prd.md'), 'utf8')).toBe(PRD_CONTENT);
    // The version is the project's version store's record of that write, by the run's conversation.
    const versions = await projectVersions(h.config.dataDir, { id: 'p612', root: await fs.realpath(projectRoot) });
    const [latest] = await versions.list('_bmad-output/planning-artifacts/prd.md');
    expect(latest).toMatchObject({ version: r.artifacts[0].version, conversationId: r.conversationId, agentId: 'bmad-agent-pm' });
    expect(r.startedAt).toEqual(expect.any(String));
    expect(r.endedAt).toEqual(expect.any(String));
    expect(r.usage.promptTokens).toBeGreaterThan(0);

    // Started as the skill's contract says: its menu item, the headless flag and the inputs verbatim in the first message,
    // and the server loaded the skill before the model spoke.
    const c = await conversation(r.conversationId);
    expect(c.projectId).toBe('p612');
    const firstUser = c.messages.find((m: any) => m.role === 'user');
    expect(firstUser.content).toBe('*PRD headless: true\nintent: create\n\nBrief: a school-forms inbox for busy parents.');
    const load = (await h.runtime.store.messages(r.conversationId)).find((m) => m.role === 'tool') as any;
    expect(load.name).toBe('execute_workflow');
    expect(JSON.stringify(load.result)).toContain('headless.md');

    const listed = await listRuns(get('/api/runs?projectId=p612'));
    expect(((await listed.json()) as any).data.items.map((x: any) => x.id)).toContain(r.id);
  }, 60_000);

  it('takes an agent menu code and object inputs whose project files are read through the sandbox', async () => {
    h.model.setScript('headless-partial');
    // Neither a skill nor a code: 404 naming the skills that can run headless.
    const unknown = await submit({ skill: 'XYZ' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toContain('bmad-prd');
    const byCode = await submit({ skill: 'PRD', inputs: { brief: 'see the file', files: ['docs/brief.md'] } });
    expect(byCode.status).toBe(202);
    const r = await waitFor(byCode.json.data.runId, ['complete', 'partial', 'blocked', 'failed']);
    expect(r.status).toBe('partial');
    expect(r.result.open_questions).toEqual(['Which pricing tier ships first?']);
    const first = (await conversation(r.conversationId)).messages.find((m: any) => m.role === 'user').content as string;
    expect(first).toContain('"brief": "see the file"');
    expect(first).toContain('### docs/brief.md\n```\n# Brief\n\nA school-forms inbox for busy parents.\n```');

    const outside = await submit({ inputs: { files: ['../../../etc/passwd'] } });
    expect(outside.status).toBe(400);
    expect(outside.json.code).toBe('E_VALIDATION');
    const secret = await submit({ inputs: { files: ['_bmad/../.env'] } });
    expect(secret.status).toBe(400);
  }, 60_000);

  it('starts a skill no menu names under the first agent, a prompt item by its code, and refuses a code that means two skills', async () => {
    h.model.setScript('headless-complete');
    const spec = await submit({ skill: 'bmad-spec', intent: undefined, inputs: 'Kernel: a school-forms inbox.' });
    expect(spec.status).toBe(202);
    const r = await waitFor(spec.json.data.runId, ['complete', 'partial', 'blocked', 'failed']);
    expect(r.status).toBe('complete');
    expect(r.skill).toBe('bmad-spec');
    const first = (await conversation(r.conversationId)).messages.find((m: any) => m.role === 'user').content as string;
    expect(first).toBe('headless: true\nRun the skill bmad-spec headless (execute_workflow with workflow_path "skill:bmad-spec"), with these inputs.\n\nKernel: a school-forms inbox.');

    // MR is the analyst's prompt item that forwards to bmad-deep-recon.
    h.model.setScript('hang');
    const mr = await submit({ skill: 'MR', intent: undefined, inputs: 'Topic: school-forms apps.' });
    expect(mr.status).toBe(202);
    expect(mr.json.data).toMatchObject({ skill: 'bmad-deep-recon', agentId: 'bmad-agent-analyst' });
    expect((await cancelRun(jsonRequest(`/api/runs/${mr.json.data.runId}/cancel`, {}), params({ id: mr.json.data.runId }))).status).toBe(202);
    await waitFor(mr.json.data.runId, ['cancelled']);

    const cr = await submit({ skill: 'CR' });
    expect(cr.status).toBe(400);
    expect(cr.json.error).toContain('bmad-agent-dev');
  }, 60_000);

  it('answers a question with the contract rule a bounded number of times, then ends blocked with the question', async () => {
    h.model.setScript('headless-question');
    const created = await submit({});
    const r = await waitFor(created.json.data.runId, ['complete', 'partial', 'blocked', 'failed']);
    expect(r.status).toBe('blocked');
    expect(r.result).toEqual({ status: 'blocked', intent: 'create', reason: HEADLESS_QUESTION, question: HEADLESS_QUESTION });
    expect(r.answers).toBe(3);
    const users = (await conversation(r.conversationId)).messages.filter((m: any) => m.role === 'user').map((m: any) => m.content);
    expect(users.slice(1)).toEqual([ANSWER_RULE, ANSWER_RULE, ANSWER_RULE]);
  }, 60_000);

  it('fails a run whose final answer has no JSON result, saying what was missing (never complete)', async () => {
    h.model.setScript('headless-no-json');
    const created = await submit({});
    const r = await waitFor(created.json.data.runId, ['complete', 'partial', 'blocked', 'failed']);
    expect(r.status).toBe('failed');
    expect(r.result).toBeNull();
    expect(r.error.code).toBe('E_NO_RESULT');
    expect(r.error.message).toMatch(/status and intent required/);
  }, 60_000);

  it('fails a run whose JSON misses what the schema requires', async () => {
    h.model.setScript(() => ({ type: 'message', text: 'Done.\n```json\n{"status": "blocked", "intent": "create"}\n```' }));
    const created = await submit({});
    const r = await waitFor(created.json.data.runId, ['complete', 'partial', 'blocked', 'failed']);
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ code: 'E_INVALID_RESULT' });
    expect(r.error.message).toContain('reason is required when status is "blocked"');
  }, 60_000);

  it('refuses a skill without the headless contract (422 with the skills that have one) and unknown skills or projects (404)', async () => {
    const res = await submit({ skill: 'bmad-code-review' });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe('E_NOT_HEADLESS');
    expect(res.json.skills).toEqual(
      expect.arrayContaining(['bmad-prd', 'bmad-product-brief', 'bmad-ux', 'bmad-spec', 'bmad-architecture', 'bmad-brainstorming', 'bmad-deep-recon', 'bmad-prfaq', 'bmad-sprint-planning']),
    );
    expect(res.json.skills).not.toContain('bmad-code-review');
    expect(res.json.skills).not.toContain('bmad-retrospective');
    expect((await submit({ skill: 'bmad-nope' })).status).toBe(404);
    const noProject = await submit({ projectId: 'nope' });
    expect(noProject.status).toBe(404);
    expect(noProject.json.code).toBe('E_PROJECT_NOT_FOUND');
    expect((await getRun(get('/api/runs/run_000000000000000000000000'), params({ id: 'run_000000000000000000000000' }))).status).toBe(404);
  });

  it('cancels a running run (its turn stops) and a queued one, and streams the progress', async () => {
    h.model.setScript('hang');
    const running = (await submit({})).json.data.runId;
    const queued = (await submit({})).json.data.runId;
    await waitFor(running, ['running']);
    await h.model.waitFor(() => h.model.chatRequests().some((q) => !q.done));
    expect((await run(queued)).status).toBe('queued');

    const events = await runEvents(get(`/api/runs/${queued}/events`), params({ id: queued }));
    expect(events.headers.get('content-type')).toMatch(/text\/event-stream/);
    const c1 = await cancelRun(jsonRequest(`/api/runs/${queued}/cancel`, {}), params({ id: queued }));
    expect(c1.status).toBe(202);
    expect((await run(queued)).status).toBe('cancelled');
    const text = await events.text();
    expect(text).toContain('event: run');
    expect(text).toContain('"status":"cancelled"');

    h.model.setScript('headless-complete');
    const c2 = await cancelRun(jsonRequest(`/api/runs/${running}/cancel`, {}), params({ id: running }));
    expect(c2.status).toBe(202);
    const r = await waitFor(running, ['cancelled', 'failed', 'complete']);
    expect(r.status).toBe('cancelled');
    expect(r.error.code).toBe('E_CANCELLED');
    await h.model.waitFor(() => h.model.chatRequests().every((q) => q.done));
    expect((await conversation(r.conversationId)).status).toBe('stopped');
    // Ended runs cannot be cancelled again.
    expect((await cancelRun(jsonRequest(`/api/runs/${running}/cancel`, {}), params({ id: running }))).status).toBe(409);
  }, 60_000);

  it('POSTs the ended run to its webhook, signed with HMAC-SHA256 of the body, retrying until it is taken', async () => {
    const received: Array<{ body: string; signature: string; runId: string }> = [];
    let refusals = 1;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (refusals-- > 0) {
          res.writeHead(503).end();
          return;
        }
        received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['x-signature']), runId: String(req.headers['x-run-id']) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      h.model.setScript('headless-complete');
      // No secret given: the server makes one and returns it once.
      const created = await submit({ webhook: { url } });
      const secret: string = created.json.data.webhookSecret;
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      const id = created.json.data.runId;
      await waitFor(id, ['complete']);
      const until = Date.now() + 10_000;
      while (!(await run(id)).webhook?.outcome && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(received).toHaveLength(1);
      const got = received[0]!;
      const expected = `sha256=${crypto.createHmac('sha256', secret).update(got.body).digest('hex')}`;
      expect(crypto.timingSafeEqual(Buffer.from(got.signature), Buffer.from(expected))).toBe(true);
      expect(got.runId).toBe(id);
      expect(JSON.parse(got.body)).toMatchObject({ id, status: 'complete', result: { status: 'complete' }, artifacts: [{ path: '_bmad-output/planning-artifacts/prd.md' }] });
      expect(got.body).not.toContain(secret);
      expect((await run(id)).webhook).toEqual({ url, outcome: expect.objectContaining({ delivered: true, attempts: 2, status: 204 }) });
      // The view never shows the secret.
      expect(JSON.stringify(await run(id))).not.toContain(secret);
    } finally {
      await new Promise((r) => server.close(r));
    }
  }, 60_000);
});

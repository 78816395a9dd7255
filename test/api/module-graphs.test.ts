import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as createRun, GET as listRuns } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { POST as chat } from '@/app/api/chat/route';
import { POST as stop } from '@/app/api/conversations/[id]/stop/route';
import { GET as getFile } from '@/app/api/projects/[id]/files/[...path]/route';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, readSse, startHarness, type Harness } from './harness';

/**
 * The production server's layout in one jest process: the runtime (stores, run service, model
 * clients) from a second copy of lib/, the route handlers from this one. Every error the runtime
 * throws is of classes the routes' copy does not have; each must still answer with its code.
 */
let h: Harness;
let projectsRoot: string;

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-graphs-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { separateGraph: true });
}, 240_000);
afterAll(async () => {
  await h?.close();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});
afterEach(() => h.model.setScript(undefined));

async function submit(body: Record<string, unknown>) {
  const res = await createRun(jsonRequest('/api/runs', { projectId: 'p612', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox.', ...body }));
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

async function runCount(): Promise<number> {
  return ((await (await listRuns(get('/api/runs?projectId=p612'))).json()) as any).data.items.length;
}

it('the runtime is from another copy of lib/: its errors are not instances of this copy', async () => {
  const { AppError } = await import('@/lib/errors');
  const thrown = await h.runtime.runs.submit({ projectId: 'p612', ownerId: 'local', skill: 'bmad-nope', inputs: 'x' }).catch((e: unknown) => e);
  expect(thrown).toMatchObject({ code: 'E_NOT_FOUND' });
  expect(thrown).not.toBeInstanceOf(AppError);
});

it('POST /api/runs: 404 for an unknown skill, 422 E_NOT_HEADLESS with the skills, 400 for private webhooks, and no run made', async () => {
  const unknown = await submit({ skill: 'bmad-nope' });
  expect([unknown.status, unknown.json.code]).toEqual([404, 'E_NOT_FOUND']);
  const notHeadless = await submit({ skill: 'bmad-code-review' });
  expect([notHeadless.status, notHeadless.json.code]).toEqual([422, 'E_NOT_HEADLESS']);
  expect(notHeadless.json.skills).toEqual(expect.arrayContaining(['bmad-prd']));
  for (const url of ['http://127.0.0.1:9/hook', 'http://10.1.2.3/hook', 'http://169.254.169.254/latest/meta-data/']) {
    const refused = await submit({ webhook: { url } });
    expect([refused.status, refused.json.code, refused.json.field]).toEqual([400, 'E_VALIDATION', 'webhook.url']);
  }
  expect(await runCount()).toBe(0);
});

it('POST /api/chat: 409 E_CONVERSATION_BUSY from the store, and the rate-limit message of an upstream 429', async () => {
  h.model.setScript('hang');
  const running = await chat(jsonRequest('/api/chat', { agentId: 'scribe', message: 'hi', stream: true }));
  await h.model.waitFor(() => h.model.chatRequests().some((q) => !q.done));
  const list = (await (await import('@/app/api/conversations/route')).GET(get('/api/conversations'))).json();
  const id = ((await list) as any).data.items[0].id as string;
  const busy = await chat(jsonRequest('/api/chat', { agentId: 'scribe', conversationId: id, message: 'again' }));
  expect([busy.status, ((await busy.json()) as any).code]).toEqual([409, 'E_CONVERSATION_BUSY']);
  await stop(jsonRequest(`/api/conversations/${id}/stop`, {}), params({ id }));
  await readSse(running);

  h.model.setScript([1, 2].map(() => ({ type: 'error' as const, status: 429, headers: { 'retry-after-ms': '5' } })));
  const limited = await chat(jsonRequest('/api/chat', { agentId: 'scribe', message: 'hi' }));
  const body = (await limited.json()) as any;
  expect([limited.status, body.code]).toEqual([502, 'E_LLM_UPSTREAM']);
  expect(body.error).toMatch(/is rate limiting requests \(429\)/);
});

it('a version store opened by the run service answers an unknown version with 404, not 500', async () => {
  h.model.setScript('headless-complete');
  const created = await submit({});
  expect(created.status).toBe(202);
  const id = created.json.data.runId as string;
  const until = Date.now() + 30_000;
  let status = 'queued';
  while (['queued', 'running'].includes(status) && Date.now() < until) {
    status = ((await (await getRun(get(`/api/runs/${id}`), params({ id }))).json()) as any).data.status;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(status).toBe('complete');
  const prd = ['planning-artifacts', 'prd.md'];
  const res = await getFile(get(`/api/projects/p612/files/${prd.join('/')}?version=deadbeefdeadbeef`), params({ id: 'p612', path: prd }));
  expect([res.status, ((await res.json()) as any).code]).toEqual([404, 'E_FILE_NOT_FOUND']);
});

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { POST as answerRun } from '@/app/api/runs/[id]/answer/route';
import { GET as getConversation } from '@/app/api/conversations/[id]/route';
import type { Caller } from '@/lib/core/access';
import { ANSWER_RULE } from '@/lib/engine/runs';
import { listDecisions } from '@/lib/services';
import { HEADLESS_ANSWER as ANSWER, HEADLESS_QUESTION } from '../scripted-model/scenarios';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, type Harness } from './harness';

/**
 * A run that waits on a person: it asks a question the server's rule cannot settle, ends blocked
 * and is listed as a decision; an editor's answer queues it again as the next turn of its
 * conversation, and it ends as the skill's contract says.
 */
let h: Harness;
let projectsRoot: string;
const tokens: Record<string, string> = {};
const callers: Record<string, Caller> = {};
const savedEnv = { ...process.env };

const req = (method: string, url: string, who: string, body?: unknown) =>
  new Request(`http://localhost${url}`, {
    method,
    headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-run-answer-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  process.env.RUNS_MAX_ANSWERS = '1';
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  for (const [name, role] of [['ada', 'editor'], ['eve', 'editor'], ['vic', 'viewer'], ['bob', null]] as const) {
    const p = await accounts.createPerson({ email: `${name}@example.com`, name: name.toUpperCase(), password: `${name}-password-1`, role: 'member' });
    if (role) await accounts.setMember('shop', p.id, role);
    tokens[name] = (await accounts.createToken(p.id, { name: 'ci' })).token;
    callers[name] = { kind: 'token', id: p.id, name: name.toUpperCase(), email: `${name}@example.com`, role: 'member' } as Caller;
  }
}, 240_000);

afterAll(async () => {
  await h?.close();
  process.env = savedEnv;
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

async function run(id: string, who = 'ada') {
  return ((await (await getRun(req('GET', `/api/runs/${id}`, who), params({ id }))).json()) as any).data;
}

async function waitEnded(id: string) {
  for (let i = 0; i < 300; i++) {
    const r = await run(id);
    if (!['queued', 'running'].includes(r.status)) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`run ${id} did not end`);
}

async function answer(id: string, who: string, body: unknown = { text: ANSWER }) {
  const res = await answerRun(req('POST', `/api/runs/${id}/answer`, who, body), params({ id }));
  return { status: res.status, body: (await res.json()) as any };
}

it('lists a run blocked on its question as a decision, and an editor’s answer completes it in the same conversation', async () => {
  h.model.setScript('headless-until-answered');
  const created = await createRun(req('POST', '/api/runs', 'ada', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.' }));
  expect(created.status).toBe(202);
  const id = ((await created.json()) as any).data.runId as string;
  const blocked = await waitEnded(id);
  expect(blocked.status).toBe('blocked');
  expect(blocked.result).toMatchObject({ reason: HEADLESS_QUESTION, question: HEADLESS_QUESTION });

  const decisions = await listDecisions(callers.vic!, 'shop');
  expect(decisions).toEqual([{ runId: id, storyKey: null, kind: 'question', text: HEADLESS_QUESTION, since: blocked.endedAt }]);
  await expect(listDecisions(callers.bob!, 'shop')).rejects.toMatchObject({ code: 'E_PROJECT_NOT_FOUND' });

  // Refused answers change nothing.
  const viewer = await answer(id, 'vic');
  expect([viewer.status, viewer.body.code]).toEqual([403, 'E_FORBIDDEN']);
  const stranger = await answer(id, 'bob');
  expect([stranger.status, stranger.body.code]).toEqual([404, 'E_NOT_FOUND']);
  const unknown = await answer('run_000000000000000000000000', 'ada');
  expect([unknown.status, unknown.body.code]).toEqual([404, 'E_NOT_FOUND']);
  const empty = await answer(id, 'ada', { text: '  ' });
  expect([empty.status, empty.body.code, empty.body.field]).toEqual([400, 'E_VALIDATION', 'text']);
  expect((await run(id)).status).toBe('blocked');

  // Another editor answers someone else's run: queued again before the answer is acknowledged.
  const answered = await answer(id, 'eve');
  expect(answered.status).toBe(202);
  expect(answered.body.data).toMatchObject({ id, status: 'queued', result: null, error: null, endedAt: null });
  const again = await answer(id, 'ada');
  expect([again.status, again.body.code]).toEqual([409, 'E_CONFLICT']);

  const done = await waitEnded(id);
  expect(done.status).toBe('complete');
  expect(done.result).toMatchObject({ status: 'complete', intent: 'create' });
  expect(done.conversationId).toBe(blocked.conversationId);
  expect(done.artifacts.map((a: { path: string }) => a.path)).toEqual([expect.stringMatching(/planning-artifacts\/prd\.md$/)]);
  expect(done.usage.promptTokens).toBeGreaterThan(blocked.usage.promptTokens);

  // One conversation: the question, the server's rule, the question again, then the person's answer and the work.
  const conversation = ((await (await getConversation(req('GET', `/api/conversations/${done.conversationId}`, 'ada'), params({ id: done.conversationId }))).json()) as any).data;
  const users = conversation.messages.filter((m: { role: string }) => m.role === 'user');
  expect(users.map((m: { content: string }) => m.content).slice(1)).toEqual([ANSWER_RULE, ANSWER]);
  expect(users[2].author).toMatchObject({ name: 'EVE' });

  expect(await listDecisions(callers.vic!, 'shop')).toEqual([]);
  const finished = await answer(id, 'ada');
  expect([finished.status, finished.body.code]).toEqual([409, 'E_CONFLICT']);
}, 90_000);

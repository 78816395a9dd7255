import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as createRun, GET as listRuns } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { GET as getBudget, PUT as putBudget } from '@/app/api/projects/[id]/budget/route';
import { POST as answerRun } from '@/app/api/runs/[id]/answer/route';
import { listDecisions } from '@/lib/services';
import type { Caller } from '@/lib/core/access';
import { monthOf } from '@/lib/store/budgets';
import type { ScriptFn } from '../scripted-model/types';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, type Harness } from './harness';

/**
 * Budgets on a real 6.12 install with accounts, over the SQLite store (its usage ledger and the
 * projects' budgets table): a run stopped by its token budget between model calls, a project's
 * monthly budget set by its owners, stopping a running run and refusing new ones with 402.
 */
let h: Harness;
let projectsRoot: string;
const tokens: Record<string, string> = {};
const savedEnv = { ...process.env };

const req = (method: string, url: string, who: string, body?: unknown) =>
  new Request(`http://localhost${url}`, {
    method,
    headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });

/** Model calls made since the script was set: each reads the brief again, 400 + 100 tokens a call, never ending by itself. */
let calls = 0;
const spender: ScriptFn = () => {
  calls++;
  return { type: 'message', toolCalls: [{ name: 'read_file', arguments: { file_path: '{project-root}/docs/brief.md' } }], usage: { prompt_tokens: 400, completion_tokens: 100 } };
};

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-budgets-'));
  const root = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  await fs.mkdir(path.join(root, 'docs'), { recursive: true });
  await fs.writeFile(path.join(root, 'docs', 'brief.md'), '# Brief\n\nA plant shop.\n');
  process.env.RUNS_MAX_TOKENS = '1000';
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite', auth: {} });
  const accounts = h.runtime.accounts!;
  const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
  const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name, password: `${name}-password-1`, role: 'member' });
  const [own, ed, vic, bob] = await Promise.all(['own', 'ed', 'vic', 'bob'].map(person));
  await accounts.setMember('shop', own!.id, 'owner');
  await accounts.setMember('shop', ed!.id, 'editor');
  await accounts.setMember('shop', vic!.id, 'viewer');
  for (const [who, p] of Object.entries({ admin, own, ed, vic, bob })) tokens[who] = (await accounts.createToken(p!.id, { name: 'ci' })).token;
}, 240_000);

afterAll(async () => {
  await h?.close();
  process.env = savedEnv;
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

async function body(res: Response) {
  return (await res.json()) as any;
}

async function submit(who = 'ed') {
  const res = await createRun(req('POST', '/api/runs', who, { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.' }));
  return { status: res.status, body: await body(res) };
}

async function waitEnded(id: string) {
  for (let i = 0; i < 300; i++) {
    const run = (await body(await getRun(req('GET', `/api/runs/${id}`, 'ed'), params({ id })))).data;
    if (!['queued', 'running'].includes(run.status)) return run;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${id} did not end`);
}

const budget = async (who = 'vic') => {
  const res = await getBudget(req('GET', '/api/projects/shop/budget', who), params({ id: 'shop' }));
  return { status: res.status, body: await body(res) };
};
const put = async (who: string, value: unknown) => {
  const res = await putBudget(req('PUT', '/api/projects/shop/budget', who, value), params({ id: 'shop' }));
  return { status: res.status, body: await body(res) };
};

let spentSoFar = 0;

it('stops a run between model calls once its token budget (RUNS_MAX_TOKENS) is reached: blocked, E_BUDGET', async () => {
  calls = 0;
  h.model.setScript(spender);
  const created = await submit();
  expect(created.status).toBe(202);
  const run = await waitEnded(created.body.data.runId);
  expect(run.status).toBe('blocked');
  expect(run.budget).toEqual({ tokens: 1000 });
  expect(run.result).toMatchObject({ status: 'blocked', reason: 'E_BUDGET', budget: 'run' });
  expect(run.result.message).toContain("run's token budget is spent: 1,000 tokens used of 1,000 tokens");
  expect(run.error).toEqual({ code: 'E_BUDGET', message: run.result.message });
  // The second call reached the budget; its tool ran, and no third call was made.
  expect(calls).toBe(2);
  expect(run.usage).toMatchObject({ promptTokens: 800, completionTokens: 200 });
  spentSoFar += 1000;

  // Answered, it goes on with its budget counted again from the answer, and stops the same way.
  calls = 0;
  const answered = await answerRun(req('POST', `/api/runs/${run.id}/answer`, 'ed', { text: 'Go on reading.' }), params({ id: run.id }));
  expect(answered.status).toBe(202);
  const again = await waitEnded(run.id);
  expect([again.status, again.result.reason, calls]).toEqual(['blocked', 'E_BUDGET', 2]);
  expect(again.usage).toMatchObject({ promptTokens: 1600, completionTokens: 400 });
  expect(again.conversationId).toBe(run.conversationId);
  spentSoFar += 1000;
}, 60_000);

it("takes a run's own budget from POST /api/runs over the default, and refuses a bad one before making anything", async () => {
  const before = (await h.runtime.runs.store.list({ projectId: 'shop' })).length;
  const post = async (budget: unknown) => {
    const res = await createRun(req('POST', '/api/runs', 'ed', { projectId: 'shop', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.', budget }));
    return { status: res.status, body: await body(res) };
  };
  for (const [budget, field] of [
    [{ tokens: -5 }, 'budget.tokens'],
    [{ tokens: 2.5 }, 'budget.tokens'],
    [{ usd: 0 }, 'budget.usd'],
    [{ dollars: 3 }, 'budget.dollars'],
    [7, 'budget'],
  ] as const) {
    const refused = await post(budget);
    expect([refused.status, refused.body.code, refused.body.field]).toEqual([400, 'E_VALIDATION', field]);
  }
  expect((await h.runtime.runs.store.list({ projectId: 'shop' })).length).toBe(before);
  calls = 0;
  h.model.setScript(spender);
  const created = await post({ tokens: 1500 });
  expect(created.status).toBe(202);
  const ended = await waitEnded(created.body.data.runId);
  expect([ended.status, ended.result.reason, calls]).toEqual(['blocked', 'E_BUDGET', 3]);
  expect(ended.budget).toEqual({ tokens: 1500 });
  spentSoFar += 1500;
}, 60_000);

describe("a project's monthly budget", () => {
  it("is read by whoever sees the project, with this month's spend from the usage kept", async () => {
    const seen = await budget('vic');
    expect(seen.status).toBe(200);
    expect(seen.body.data).toEqual({
      monthlyTokens: null,
      monthlyUsd: null,
      spent: { tokens: spentSoFar, usd: null },
      month: monthOf().month,
      // Every run so far was Ed's: the month's spend is his, by name.
      byPerson: [{ id: expect.any(String), name: 'ed', spent: { tokens: spentSoFar, usd: null } }],
      perPerson: { monthlyTokens: null, monthlyUsd: null },
    });
    expect((await budget('bob')).status).toBe(404);
  });

  it('is set by owners and admins only, checked field by field, fields left out kept, null removing a limit', async () => {
    const refused = await put('ed', { monthlyTokens: 10 });
    expect([refused.status, refused.body.code]).toEqual([403, 'E_FORBIDDEN']);
    const stranger = await put('bob', { monthlyTokens: 10 });
    expect([stranger.status, stranger.body.code]).toEqual([404, 'E_PROJECT_NOT_FOUND']);
    const negative = await put('own', { monthlyTokens: -1 });
    expect([negative.status, negative.body.code, negative.body.field]).toEqual([400, 'E_VALIDATION', 'monthlyTokens']);
    const wrongType = await put('own', { monthlyTokens: 5, monthlyUsd: 'ten' });
    expect([wrongType.status, wrongType.body.field]).toEqual([400, 'monthlyUsd']);
    const fraction = await put('own', { monthlyTokens: 1.5 });
    expect([fraction.status, fraction.body.field]).toEqual([400, 'monthlyTokens']);
    const unknown = await put('own', { monthly: 5 });
    expect([unknown.status, unknown.body.field]).toEqual([400, 'monthly']);
    // Nothing of the refused ones was kept.
    expect((await budget()).body.data).toMatchObject({ monthlyTokens: null, monthlyUsd: null });

    expect((await put('own', { monthlyTokens: 100_000 })).body.data).toMatchObject({ monthlyTokens: 100_000, monthlyUsd: null });
    expect((await put('admin', { monthlyUsd: 12.5 })).body.data).toMatchObject({ monthlyTokens: 100_000, monthlyUsd: 12.5 });
    const removed = await put('own', { monthlyTokens: null });
    expect([removed.status, removed.body.data.monthlyTokens, removed.body.data.monthlyUsd]).toEqual([200, null, 12.5]);
    expect((await put('own', { monthlyUsd: null })).body.data).toMatchObject({ monthlyTokens: null, monthlyUsd: null });
  });

  it('stops a running run when the month is spent first, then refuses new runs with 402 and makes nothing', async () => {
    // Room for one more call and a half: the second call of the run spends it.
    expect((await put('own', { monthlyTokens: spentSoFar + 700 })).status).toBe(200);
    const ed = (await h.runtime.accounts!.listPeople()).find((p) => p.email === 'ed@example.com')!;
    calls = 0;
    h.model.setScript(spender);
    const { run } = await h.runtime.runs.submit({ projectId: 'shop', ownerId: ed.id, skill: 'bmad-prd', intent: 'create', inputs: 'Brief.', budget: { tokens: 50_000 } });
    const ended = await waitEnded(run.id);
    expect([ended.status, ended.result.reason, ended.result.budget, calls]).toEqual(['blocked', 'E_BUDGET', 'project', 2]);
    expect(ended.result.message).toMatch(/project's monthly token budget is spent/);
    spentSoFar += 1000;
    expect((await budget()).body.data.spent.tokens).toBe(spentSoFar);

    const runsBefore = (await body(await listRuns(req('GET', '/api/runs?projectId=shop', 'ed')))).data.items.length;
    const conversationsBefore = (await h.runtime.store.list({ projectId: 'shop' })).items.length;
    calls = 0;
    const refused = await submit();
    expect([refused.status, refused.body.code]).toEqual([402, 'E_BUDGET']);
    expect(refused.body.error).toMatch(/project's monthly token budget is spent/);
    expect((await body(await listRuns(req('GET', '/api/runs?projectId=shop', 'ed')))).data.items.length).toBe(runsBefore);
    expect((await h.runtime.store.list({ projectId: 'shop' })).items.length).toBe(conversationsBefore);
    expect(calls).toBe(0);

    // The stopped run waits on a person; answering it is refused while the month is spent.
    const vic = (await h.runtime.accounts!.listPeople()).find((p) => p.email === 'vic@example.com')!;
    const decisions = await listDecisions({ kind: 'token', id: vic.id, role: 'member' } as Caller, 'shop');
    expect(decisions[0]).toEqual({ runId: run.id, storyKey: null, kind: 'blocked', text: ended.result.message, since: ended.endedAt });
    expect(decisions.map((d) => d.kind)).toEqual(['blocked', 'blocked', 'blocked']);
    const answer = await answerRun(req('POST', `/api/runs/${run.id}/answer`, 'ed', { text: 'Go on.' }), params({ id: run.id }));
    expect([answer.status, (await body(answer)).code]).toEqual([402, 'E_BUDGET']);
    expect((await h.runtime.runs.store.get(run.id))!.status).toBe('blocked');

    // A limit removed: runs are taken again (this one ends at its own default budget).
    expect((await put('own', { monthlyTokens: null })).status).toBe(200);
    const again = await submit();
    expect(again.status).toBe(202);
    const last = await waitEnded(again.body.data.runId);
    expect([last.status, last.result.budget, calls]).toEqual(['blocked', 'run', 2]);
  }, 60_000);
});

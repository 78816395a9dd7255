import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { POST as answerRun } from '@/app/api/runs/[id]/answer/route';
import { GET as getBudget, PUT as putBudget } from '@/app/api/projects/[id]/budget/route';
import { HEADLESS_ANSWER, HEADLESS_QUESTION } from '../scripted-model/scenarios';
import { createTestDatabase, type TestDatabase } from '../postgres';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * Budgets and answers with DATABASE_URL: the usage ledger, the projects' budgets and a run's
 * answer are kept on Postgres, where every instance reads them.
 */
let database: TestDatabase;
let h: Harness;
let projectsRoot: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  database = await createTestDatabase('budgets_api');
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-budgets-pg-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  process.env.RUNS_MAX_ANSWERS = '1';
  h = await startHarness({ PROJECTS_ROOT: projectsRoot, DATABASE_URL: database.url }, { store: 'postgres' });
}, 240_000);
afterAll(async () => {
  await h?.close();
  process.env = savedEnv;
  await database?.drop();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

const submit = () => createRun(jsonRequest('/api/runs', { projectId: 'p612', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox.' }));

async function ended(id: string) {
  for (let i = 0; i < 300; i++) {
    const run = ((await (await getRun(get(`/api/runs/${id}`), params({ id }))).json()) as any).data;
    if (!['queued', 'running'].includes(run.status)) return run;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${id} did not end`);
}

const budget = async () => ((await (await getBudget(get('/api/projects/p612/budget'), params({ id: 'p612' }))).json()) as any).data;
const put = (value: unknown) => putBudget(new Request('http://localhost/api/projects/p612/budget', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) }), params({ id: 'p612' }));

async function rows(query: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query(query, values)).rows;
  } finally {
    await client.end();
  }
}

it("keeps the project's budget and its spend on Postgres, and refuses a run once the month is spent", async () => {
  h.model.setScript('headless-complete');
  const res = await submit();
  expect(res.status).toBe(202);
  const run = await ended(((await res.json()) as any).data.runId);
  expect(run.status).toBe('complete');
  const used = run.usage.promptTokens + run.usage.completionTokens;
  expect(used).toBeGreaterThan(0);
  // A limit of exactly what was spent: the month is spent.
  expect((await put({ monthlyTokens: used })).status).toBe(200);
  expect(await budget()).toMatchObject({ monthlyTokens: used, monthlyUsd: null, spent: { tokens: used, usd: null } });
  expect(await rows('SELECT monthly_tokens, monthly_usd FROM project_budgets WHERE project_id = $1', ['p612'])).toEqual([{ monthly_tokens: String(used), monthly_usd: null }]);
  const ledger = await rows('SELECT SUM(prompt_tokens + completion_tokens)::int AS tokens, COUNT(*)::int AS calls FROM usage_ledger WHERE conversation_id = $1', [run.conversationId]);
  expect(ledger).toEqual([{ tokens: used, calls: 2 }]);

  const refused = await submit();
  expect([refused.status, ((await refused.json()) as any).code]).toEqual([402, 'E_BUDGET']);
  expect(await rows('SELECT COUNT(*)::int AS n FROM runs')).toEqual([{ n: 1 }]);
  expect((await put({ monthlyTokens: null })).status).toBe(200);
}, 60_000);

it('answers a blocked run on Postgres: queued again with the answer, then complete', async () => {
  h.model.setScript('headless-until-answered');
  const res = await submit();
  const id = ((await res.json()) as any).data.runId as string;
  const blocked = await ended(id);
  expect([blocked.status, blocked.result.question]).toEqual(['blocked', HEADLESS_QUESTION]);
  const answered = await answerRun(jsonRequest(`/api/runs/${id}/answer`, { text: HEADLESS_ANSWER }), params({ id }));
  expect(answered.status).toBe(202);
  expect(((await answered.json()) as any).data.status).toBe('queued');
  const done = await ended(id);
  expect([done.status, done.conversationId]).toEqual(['complete', blocked.conversationId]);
  expect(JSON.parse((await rows('SELECT resume FROM runs WHERE id = $1', [id]))[0].resume)).toEqual({ text: HEADLESS_ANSWER, from: { tokens: blocked.usage.promptTokens + blocked.usage.completionTokens, usd: 0 } });
}, 60_000);

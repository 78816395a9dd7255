import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { GET as getBudget, PUT as putBudget } from '@/app/api/projects/[id]/budget/route';
import { GET as getServerBudget, PUT as putServerBudget } from '@/app/api/budget/route';
import { personBudgetState } from '@/lib/services';
import type { ScriptFn } from '../scripted-model';
import { createTestDatabase, type TestDatabase } from '../postgres';
import { bmadProject } from '../bmad-installs';
import { params, startHarness, type Harness } from './harness';

/**
 * Budgets per person, with accounts, on SQLite and on Postgres: a project's limit per person, the
 * server's (admins) per person over every project and its own month. A person whose month is
 * spent is refused new runs (402 E_BUDGET); someone else is not; personBudgetState says the same.
 */
const savedEnv = { ...process.env };

/** Each call reads the brief again: 400 + 100 tokens a call, never ending by itself (a run's budget stops it). */
const spender: ScriptFn = () => ({ type: 'message', toolCalls: [{ name: 'read_file', arguments: { file_path: '{project-root}/docs/brief.md' } }], usage: { prompt_tokens: 400, completion_tokens: 100 } });

describe.each(['sqlite', 'postgres'] as const)('budgets per person on %s', (store) => {
  let h: Harness;
  let projectsRoot: string;
  let database: TestDatabase | null = null;
  const tokens: Record<string, string> = {};
  const ids: Record<string, string> = {};

  const req = (method: string, url: string, who: string, body?: unknown) =>
    new Request(`http://localhost${url}`, {
      method,
      headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });
  const put = (who: string, value: unknown, project = 'shop') => putBudget(req('PUT', `/api/projects/${project}/budget`, who, value), params({ id: project })).then(json);
  const get = (who: string, project = 'shop') => getBudget(req('GET', `/api/projects/${project}/budget`, who), params({ id: project })).then(json);
  const putServer = (who: string, value: unknown) => putServerBudget(req('PUT', '/api/budget', who, value)).then(json);
  const submit = (who: string, project = 'shop', budget?: unknown) =>
    createRun(req('POST', '/api/runs', who, { projectId: project, skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a plant shop.', ...(budget ? { budget } : {}) })).then(json);
  async function ended(id: string, who: string) {
    for (let i = 0; i < 300; i++) {
      const run = (await json(await getRun(req('GET', `/api/runs/${id}`, who), params({ id })))).body.data;
      if (!['queued', 'running'].includes(run.status)) return run;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`run ${id} did not end`);
  }

  beforeAll(async () => {
    projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), `bmad-person-budgets-${store}-`));
    for (const name of ['shop', 'farm']) {
      const root = await bmadProject('6.12.0', { parent: projectsRoot, name });
      await fs.mkdir(path.join(root, 'docs'), { recursive: true });
      await fs.writeFile(path.join(root, 'docs', 'brief.md'), '# Brief\n\nA plant shop.\n');
    }
    const env: Record<string, string> = { PROJECTS_ROOT: projectsRoot };
    if (store === 'postgres') {
      database = await createTestDatabase('person_budgets');
      env.DATABASE_URL = database.url;
    }
    h = await startHarness(env, { store, auth: {} });
    const accounts = h.runtime.accounts!;
    const admin = await accounts.createFirstAdmin({ email: 'admin@example.com', name: 'Admin', password: 'admin-password-1' });
    const person = (name: string) => accounts.createPerson({ email: `${name}@example.com`, name, password: `${name}-password-1`, role: 'member' });
    const [own, ed, amy] = await Promise.all(['own', 'ed', 'amy'].map(person));
    for (const project of ['shop', 'farm']) {
      await accounts.setMember(project, own!.id, 'owner');
      await accounts.setMember(project, ed!.id, 'editor');
      await accounts.setMember(project, amy!.id, 'editor');
    }
    for (const [who, p] of Object.entries({ admin, own, ed, amy })) {
      tokens[who] = (await accounts.createToken(p!.id, { name: 'ci' })).token;
      ids[who] = p!.id;
    }
  }, 240_000);

  afterAll(async () => {
    await h?.close();
    process.env = savedEnv;
    await database?.drop();
    await fs.rm(projectsRoot, { recursive: true, force: true });
  });

  it("takes a project's limits per person from its owners, checked field by field", async () => {
    const refused = await put('ed', { perPerson: { monthlyTokens: 10 } });
    expect([refused.status, refused.body.code]).toEqual([403, 'E_FORBIDDEN']);
    for (const [value, field] of [
      [{ perPerson: { monthlyTokens: -1 } }, 'perPerson.monthlyTokens'],
      [{ perPerson: { monthlyTokens: 1.5 } }, 'perPerson.monthlyTokens'],
      [{ perPerson: { monthlyUsd: 'ten' } }, 'perPerson.monthlyUsd'],
      [{ perPerson: { daily: 5 } }, 'perPerson.daily'],
      [{ perPerson: 5 }, 'perPerson'],
    ] as const) {
      const r = await put('own', value);
      expect([r.status, r.body.code, r.body.field]).toEqual([400, 'E_VALIDATION', field]);
    }
    expect((await get('ed')).body.data.perPerson).toEqual({ monthlyTokens: null, monthlyUsd: null });
    const set = await put('own', { perPerson: { monthlyUsd: 3 } });
    expect(set.body.data).toMatchObject({ monthlyTokens: null, perPerson: { monthlyTokens: null, monthlyUsd: 3 } });
    expect((await put('own', { perPerson: { monthlyUsd: null } })).body.data.perPerson).toEqual({ monthlyTokens: null, monthlyUsd: null });
  });

  it("refuses a person whose month in the project is spent, and nobody else; personBudgetState agrees", async () => {
    h.model.setScript(spender);
    // Ed spends 1,000 tokens (his run's own budget stops it after two calls).
    const first = await submit('ed', 'shop', { tokens: 1000 });
    expect(first.status).toBe(202);
    const run = await ended(first.body.data.runId, 'ed');
    expect([run.status, run.result.budget]).toEqual(['blocked', 'run']);
    expect((await get('ed')).body.data.byPerson).toEqual([{ id: ids.ed, name: 'ed', spent: { tokens: 1000, usd: null } }]);

    expect((await put('own', { perPerson: { monthlyTokens: 1000 } })).status).toBe(200);
    const refused = await submit('ed');
    expect([refused.status, refused.body.code]).toEqual([402, 'E_BUDGET']);
    expect(refused.body.error).toMatch(/monthly token budget per person in this project is spent for this person: 1,000 tokens of 1,000 tokens/);
    expect(await personBudgetState('shop', ids.ed!)).toEqual({ ok: false, reason: expect.stringContaining('per person in this project') });
    expect(await personBudgetState('shop', ids.amy!)).toEqual({ ok: true });
    // Amy has her own month; Ed has his in another project.
    const amy = await submit('amy', 'shop', { tokens: 500 });
    expect(amy.status).toBe(202);
    await ended(amy.body.data.runId, 'amy');
    expect(await personBudgetState('farm', ids.ed!)).toEqual({ ok: true });
    expect((await put('own', { perPerson: { monthlyTokens: null } })).status).toBe(200);
    expect(await personBudgetState('shop', ids.ed!)).toEqual({ ok: true });
  }, 120_000);

  it("keeps the server's limits for admins: per person over every project, and the server's month", async () => {
    const notAdmin = await putServer('own', { perPerson: { monthlyTokens: 1 } });
    expect([notAdmin.status, notAdmin.body.code]).toEqual([403, 'E_FORBIDDEN']);
    expect((await getServerBudget(req('GET', '/api/budget', 'ed'))).status).toBe(403);
    const bad = await putServer('admin', { perPerson: { monthlyTokens: -5 } });
    expect([bad.status, bad.body.field]).toEqual([400, 'perPerson.monthlyTokens']);

    // Ed spent 1,000 in shop, Amy 500: a server limit of 1,000 per person stops Ed in every project.
    const set = await putServer('admin', { perPerson: { monthlyTokens: 1000 } });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ monthlyTokens: null, monthlyUsd: null, perPerson: { monthlyTokens: 1000, monthlyUsd: null }, spent: { tokens: 1500 } });
    expect(set.body.data.byPerson.map((p: { name: string; spent: { tokens: number } }) => [p.name, p.spent.tokens])).toEqual([
      ['ed', 1000],
      ['amy', 500],
    ]);
    const refused = await submit('ed', 'farm');
    expect([refused.status, refused.body.code]).toEqual([402, 'E_BUDGET']);
    expect(refused.body.error).toMatch(/per person on this server is spent/);
    expect(await personBudgetState('farm', ids.amy!)).toEqual({ ok: true });

    // The server's own month: everyone's spend together.
    expect((await putServer('admin', { perPerson: { monthlyTokens: null }, monthlyTokens: 1500 })).status).toBe(200);
    const all = await submit('amy', 'farm');
    expect([all.status, all.body.code]).toEqual([402, 'E_BUDGET']);
    expect(all.body.error).toMatch(/server's monthly token budget is spent: 1,500 tokens of 1,500 tokens/);
    expect((await putServer('admin', { monthlyTokens: null })).body.data).toMatchObject({ monthlyTokens: null, perPerson: { monthlyTokens: null } });
    expect(await personBudgetState('farm', ids.ed!)).toEqual({ ok: true });
    h.model.setScript(undefined);
  }, 120_000);
});

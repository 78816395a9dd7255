import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { DATABASE_FILE } from '@/lib/store/db';
import { createTestDatabase, type TestDatabase } from '../postgres';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * With DATABASE_URL, the runs' queue is on Postgres beside the conversations (the instances of
 * every host share it), not in DATA_DIR's SQLite file.
 */
let database: TestDatabase;
let h: Harness;
let projectsRoot: string;

beforeAll(async () => {
  database = await createTestDatabase('runs_api');
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-runs-pg-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  h = await startHarness({ PROJECTS_ROOT: projectsRoot, DATABASE_URL: database.url }, { store: 'postgres' });
}, 240_000);
afterAll(async () => {
  await h?.close();
  await database?.drop();
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

it('queues, runs and keeps a run on Postgres', async () => {
  expect(h.runtime.config.store).toBe('postgres');
  h.model.setScript('headless-complete');
  const res = await createRun(jsonRequest('/api/runs', { projectId: 'p612', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox.' }));
  expect(res.status).toBe(202);
  const id = ((await res.json()) as any).data.runId as string;
  const until = Date.now() + 30_000;
  let run: any;
  for (;;) {
    run = ((await (await getRun(get(`/api/runs/${id}`), params({ id }))).json()) as any).data;
    if (['complete', 'partial', 'blocked', 'failed', 'interrupted'].includes(run.status) || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(run).toMatchObject({ status: 'complete', usage: { promptTokens: expect.any(Number) } });
  expect(run.usage.promptTokens).toBeGreaterThan(0);

  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const rows = (await client.query('SELECT status, lease_token FROM runs WHERE id = $1', [id])).rows;
    expect(rows).toEqual([{ status: 'complete', lease_token: null }]);
  } finally {
    await client.end();
  }
  // Nothing of the queue in DATA_DIR.
  await expect(fs.access(path.join(h.config.dataDir, DATABASE_FILE))).rejects.toThrow();
}, 60_000);

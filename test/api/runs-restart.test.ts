import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { POST as createRun } from '@/app/api/runs/route';
import { GET as getRun } from '@/app/api/runs/[id]/route';
import { createRuntime, setRuntime } from '@/lib/engine/runtime';
import { abortRunningTurns } from '@/lib/engine/runtime/shutdown';
import { DATABASE_FILE, encodeHolder } from '@/lib/store/db';
import { bmadProject } from '../bmad-installs';
import { get, jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * The queue survives a restart: over the same DATA_DIR, a fresh runtime ends the run a dead
 * process held as interrupted at once, and takes the queued one.
 */
let h: Harness;
let projectsRoot: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  projectsRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-runs-restart-'));
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  process.env.RUNS_CONCURRENCY = '1';
  h = await startHarness({ PROJECTS_ROOT: projectsRoot }, { store: 'sqlite' });
}, 240_000);
afterAll(async () => {
  await h.close();
  process.env = savedEnv;
  await fs.rm(projectsRoot, { recursive: true, force: true });
});

async function submit() {
  const res = await createRun(jsonRequest('/api/runs', { projectId: 'p612', skill: 'bmad-prd', intent: 'create', inputs: 'Brief: a school-forms inbox.' }));
  expect(res.status).toBe(202);
  return ((await res.json()) as any).data.runId as string;
}

async function run(id: string) {
  return ((await (await getRun(get(`/api/runs/${id}`), params({ id }))).json()) as any).data;
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

it('a restart ends the running run interrupted and starts the queued one', async () => {
  h.model.setScript('hang');
  const running = await submit();
  const queued = await submit();
  await waitFor(running, ['running']);
  expect((await run(queued)).status).toBe('queued');

  // The process holding the run dies (kill -9): its lease names a process that no longer exists,
  // and nothing it does afterwards counts.
  const dead = spawnSync(process.execPath, ['-e', '0']).pid;
  const db = new Database(path.join(h.config.dataDir, DATABASE_FILE));
  db.prepare(`UPDATE runs SET lease_owner = ?, lease_token = 'dead-token' WHERE id = ?`).run(encodeHolder({ host: os.hostname(), pid: dead, nonce: 'gone', started: null }), running);
  db.close();
  // Its runtime goes away without a word about the run (its lease is no longer its own).
  await setRuntime(undefined);
  const before = new Database(path.join(h.config.dataDir, DATABASE_FILE), { readonly: true });
  expect(before.prepare('SELECT status FROM runs WHERE id = ?').get(running)).toEqual({ status: 'running' });
  expect(before.prepare('SELECT status FROM runs WHERE id = ?').get(queued)).toEqual({ status: 'queued' });
  before.close();

  // The server is back: a fresh runtime over the same DATA_DIR.
  h.model.setScript('headless-complete');
  const fresh = createRuntime(h.config);
  await setRuntime(fresh);
  h.runtime = fresh;
  fresh.runs.start();
  const interrupted = await waitFor(running, ['interrupted', 'complete', 'failed']);
  expect(interrupted.status).toBe('interrupted');
  expect(interrupted.error.code).toBe('E_INTERRUPTED');
  const done = await waitFor(queued, ['complete', 'failed', 'interrupted']);
  expect(done.status).toBe('complete');
  expect(done.artifacts).toEqual([{ path: '_bmad-output/planning-artifacts/prd.md', version: expect.stringMatching(/^[0-9a-f]{40}$/) }]);
}, 60_000);

it('a shutdown signal ends the running run interrupted and leaves the queued one for the next start', async () => {
  h.model.setScript('hang');
  const running = await submit();
  const queued = await submit();
  await waitFor(running, ['running']);
  // What SIGTERM does (installed by instrumentation.ts).
  abortRunningTurns();
  const r = await waitFor(running, ['interrupted', 'failed', 'cancelled']);
  expect(r).toMatchObject({ status: 'interrupted', error: { code: 'E_INTERRUPTED' } });
  // The process is going down: it takes no more runs, even when it polls the queue.
  await new Promise((res) => setTimeout(res, 2500));
  expect((await run(queued)).status).toBe('queued');
}, 60_000);

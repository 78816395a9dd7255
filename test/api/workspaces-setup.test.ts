import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PUT as putBuild } from '@/app/api/projects/[id]/build/route';
import { POST as createWorkspace } from '@/app/api/projects/[id]/workspaces/route';
import { GET as getWorkspace, DELETE as discardWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/route';
import { POST as mergeWorkspace } from '@/app/api/projects/[id]/workspaces/[wid]/merge/route';
import { POST as chat } from '@/app/api/chat/route';
import { setupOf } from '@/lib/services';
import { bmadProject } from '../bmad-installs';
import { sh, writeFiles } from '../git-repo';
import { jsonRequest, params, startHarness, type Harness } from './harness';

/**
 * A workspace's setup as the routes show it: its output while it runs (with the time it started),
 * merge, discard and turns refused meanwhile, its outcome, and the project's cache folder.
 */
let h: Harness;
let projectsRoot: string;
let shop: string;

beforeAll(async () => {
  projectsRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'bmad-workspaces-setup-'));
  shop = await bmadProject('6.12.0', { parent: projectsRoot, name: 'shop' });
  sh(shop, ['init', '-q', '-b', 'main']);
  writeFiles(shop, { 'src/app.txt': 'one\n' });
  sh(shop, ['add', '-A']);
  sh(shop, ['commit', '-q', '-m', 'initial']);
  h = await startHarness({ PROJECTS_ROOT: projectsRoot });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await fsp.rm(projectsRoot, { recursive: true, force: true });
});

async function json(res: Response): Promise<{ status: number; body: any; text: string }> {
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}
const setBuild = (body: unknown) => putBuild(jsonRequest('/api/projects/shop/build', body, { method: 'PUT' }), params({ id: 'shop' })).then(json);
const create = (name: string) => createWorkspace(jsonRequest('/api/projects/shop/workspaces', { name }), params({ id: 'shop' })).then(json);
const one = (wid: string) => getWorkspace(new Request(`http://localhost/api/projects/shop/workspaces/${wid}`), params({ id: 'shop', wid })).then(json);

it('shows the setup output while it runs, refuses merge, discard and turns meanwhile, then keeps the outcome', async () => {
  // The line waits for a file the test writes: it is running for as long as the test needs.
  await setBuild({ enabled: true, setup: 'echo fetching; echo "warn: slow mirror" >&2; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo installed' });
  const made = await create('live');
  expect(made.status).toBe(201);
  const wid = made.body.data.id as string;
  expect(made.body.data.setup).toMatchObject({ status: 'running', output: '' });
  const startedAt = made.body.data.setup.startedAt as string;
  expect(Date.parse(startedAt)).toBeGreaterThan(Date.now() - 60_000);

  let detail = (await one(wid)).body.data;
  for (let i = 0; i < 100 && !String(detail.setup?.output ?? '').includes('warn: slow mirror'); i++) {
    await new Promise((r) => setTimeout(r, 100));
    detail = (await one(wid)).body.data;
  }
  expect(detail.setup).toMatchObject({ status: 'running', startedAt, output: 'fetching\nwarn: slow mirror\n' });
  expect(detail.setup.output).not.toContain(projectsRoot);

  const merge = await mergeWorkspace(jsonRequest(`/api/projects/shop/workspaces/${wid}/merge`, {}), params({ id: 'shop', wid })).then(json);
  expect([merge.status, merge.body.code]).toEqual([409, 'E_CONFLICT']);
  expect(merge.body.error).toMatch(/setup is running/);
  const discard = await discardWorkspace(new Request(`http://localhost/api/projects/shop/workspaces/${wid}`, { method: 'DELETE' }), params({ id: 'shop', wid })).then(json);
  expect([discard.status, discard.body.code]).toEqual([409, 'E_CONFLICT']);
  const turn = await chat(jsonRequest('/api/chat', { projectId: 'shop', agentId: 'bmad-agent-pm', message: 'go', workspaceId: wid, stream: false })).then(json);
  expect([turn.status, turn.body.code]).toEqual([409, 'E_CONFLICT']);
  expect(sh(shop, ['branch', '--list', 'bmad/live']).trim()).toBe('bmad/live');

  const tmp = path.join(h.runtime.config.workspacesRoot, '.tmp', wid);
  fs.writeFileSync(path.join(tmp, 'go'), '');
  await setupOf(wid);
  detail = (await one(wid)).body.data;
  expect(detail.setup).toMatchObject({ status: 'ok', exitCode: 0, startedAt, output: 'fetching\nwarn: slow mirror\ninstalled\n' });
  expect(detail.setup.durationMs).toBeGreaterThan(0);
  expect(Date.parse(detail.setup.at)).toBeGreaterThanOrEqual(Date.parse(startedAt));

  // Done: discard works again.
  fs.rmSync(path.join(tmp, 'go'));
  const gone = await discardWorkspace(new Request(`http://localhost/api/projects/shop/workspaces/${wid}`, { method: 'DELETE' }), params({ id: 'shop', wid })).then(json);
  expect(gone.status).toBe(200);
}, 120_000);

it("gives setups the project's own package cache folder, under DATA_DIR/caches", async () => {
  await setBuild({ enabled: true, setup: 'echo "cache=$npm_config_cache"; echo kept > /cache/marker' });
  const wid = (await create('cached')).body.data.id as string;
  await setupOf(wid);
  const detail = (await one(wid)).body.data;
  expect(detail.setup).toMatchObject({ status: 'ok' });
  expect(detail.setup.output).toContain('cache=/cache/npm');
  expect(fs.readFileSync(path.join(h.runtime.config.dataDir, 'caches', 'shop', 'packages', 'marker'), 'utf8')).toBe('kept\n');
  await setBuild({ setup: null });
}, 120_000);

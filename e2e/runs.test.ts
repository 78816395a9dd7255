import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { api, sleep } from './durability-helpers';
import { makeFolders, REPO, startApp, type AppServer, type Folders } from './support';
import { axeViolations, launchBrowser, openTab, smallTapTargets, until } from './browser-helpers';

/**
 * Headless runs on the production server (`next start`) over a real 6.12 install: the CI command
 * line against it, and a `kill -9` with a run running and one queued.
 */
let model: ScriptedModel;
let folders: Folders;
let projectsRoot: string;
let app: AppServer | null = null;
let brief: string;

const env = () => ({ OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted', PROJECTS_ROOT: projectsRoot, RUNS_CONCURRENCY: '1' });

beforeAll(async () => {
  model = await startScriptedModel({});
  folders = await makeFolders('runs');
  projectsRoot = path.join(folders.root, 'projects');
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'p612' });
  brief = path.join(folders.root, 'brief.md');
  await fs.writeFile(brief, '# Brief\n\nA school-forms inbox for busy parents.\n');
  app = await startApp(folders, env());
}, 240_000);
afterAll(async () => {
  await app?.stop();
  await model.close();
  await folders.cleanup();
});

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const { BMAD_TOKEN: _none, ...base } = process.env;
    const child = spawn(process.execPath, [path.join(REPO, 'node_modules/tsx/dist/cli.mjs'), path.join(REPO, 'scripts/bmad.ts'), ...args], {
      cwd: REPO,
      env: base,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function waitFor(id: string, statuses: string[], timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = await api(app!.url, `/api/runs/${id}`);
    if (got.status === 200 && statuses.includes(got.body.data.status)) return got.body.data;
    if (Date.now() > until) throw new Error(`run ${id}: ${JSON.stringify(got.body).slice(0, 300)}`);
    await sleep(100);
  }
}

it('the CLI runs a skill on the production server: exit 0 complete, 10 partial, 20 blocked', async () => {
  const args = ['run', '--url', app!.url, '--project', 'p612', '--skill', 'bmad-prd', '--intent', 'create', '--input', brief, '--wait'];
  model.setScript('headless-complete');
  const complete = await cli(args);
  expect(complete.code).toBe(0);
  const run = JSON.parse(complete.stdout);
  expect(run).toMatchObject({ status: 'complete', result: { status: 'complete', intent: 'create' }, artifacts: [{ path: '_bmad-output/planning-artifacts/prd.md', version: expect.stringMatching(/^[0-9a-f]{40}$/) }] });
  model.setScript('headless-partial');
  expect((await cli(args)).code).toBe(10);
  model.setScript('headless-question');
  expect((await cli(args)).code).toBe(20);
}, 120_000);

it("lists the project's runs beside its conversations and opens one read-only with its status and result (375 px, axe clean)", async () => {
  const browser = await launchBrowser();
  try {
    const tab = await openTab(browser, app!.url, { width: 375, height: 800 });
    const { page } = tab;
    await page.goto('/?p=p612');
    await page.getByTestId('sidebar-toggle').click();
    const items = page.getByTestId('run-item');
    await until(async () => (await items.count()) >= 3, 'the runs are listed');
    expect(await page.getByTestId('run-status').allTextContents()).toEqual(expect.arrayContaining(['complete', 'partial', 'blocked']));
    await page.locator('[data-testid="run-item"][data-status="complete"]').first().getByRole('button').click();
    const dialog = page.getByTestId('run-dialog');
    await dialog.waitFor();
    expect(await dialog.getByTestId('run-dialog-status').textContent()).toBe('complete');
    expect(await dialog.getByTestId('run-result').textContent()).toContain('"status": "complete"');
    await until(async () => (await dialog.getByTestId('run-message').count()) >= 2, 'the conversation is shown');
    expect(await dialog.locator('textarea, input').count()).toBe(0);
    expect(await axeViolations(page)).toEqual([]);
    expect(await smallTapTargets(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(tab.pageErrors).toEqual([]);
    await tab.close();
  } finally {
    await browser.close();
  }
}, 120_000);

it('after a kill -9, the server ends the running run interrupted as soon as it is back and starts the queued one', async () => {
  model.setScript('hang');
  const submit = () => api(app!.url, '/api/runs', { method: 'POST', json: { projectId: 'p612', skill: 'PRD', intent: 'create', inputs: 'Brief: a school-forms inbox.' } });
  const running = (await submit()).body.data.runId;
  const queued = (await submit()).body.data.runId;
  await waitFor(running, ['running']);
  expect((await api(app!.url, `/api/runs/${queued}`)).body.data.status).toBe('queued');

  await app!.kill9();
  model.setScript('headless-complete');
  app = await startApp(folders, env());
  const interrupted = await waitFor(running, ['interrupted', 'complete', 'failed']);
  expect(interrupted).toMatchObject({ status: 'interrupted', error: { code: 'E_INTERRUPTED' } });
  const done = await waitFor(queued, ['complete', 'failed', 'interrupted']);
  expect(done.status).toBe('complete');
  const listed = await api(app!.url, '/api/runs?projectId=p612');
  expect(listed.body.data.items.map((r: { id: string }) => r.id)).toEqual(expect.arrayContaining([running, queued]));
}, 120_000);

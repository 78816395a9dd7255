/**
 * BMAD projects in a real browser (Debian's chromium through playwright-core) against the
 * production build: choose a project, chat with one of its agents through a BMAD menu code,
 * see the document it wrote with its history, create a project with BMAD's installer.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { launchBrowser, openTab, screenshot, until, waitForText, type Tab } from './browser-helpers';

jest.setTimeout(90_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let tab: Tab | null = null;

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('projects-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'garden' });
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot });
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});
afterEach(async () => {
  if (!tab) return;
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').toLowerCase();
  await screenshot(tab.page, `projects-${name}.png`).catch(() => undefined);
  const errors = [...tab.pageErrors];
  await tab.close();
  tab = null;
  expect(errors).toEqual([]);
});

it("chats with a project's agent by its menu code and shows the document it wrote, with its history", async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  model.setScript([
    reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{planning_artifacts}/prd.md', content: '# PRD\n\nGarden tools, rented by the week.\n' } }]),
    reply.text('I started the PRD workflow and saved a first draft.'),
  ]);
  await page.goto('/');
  await page.getByRole('combobox', { name: 'Project' }).selectOption('garden');
  await page.waitForURL((u) => u.searchParams.get('p') === 'garden');
  const card = page.locator('[data-testid="agent-card"][data-agent-id="pm"]');
  await card.waitFor();
  await card.click();
  await page.waitForURL((u) => u.searchParams.get('agent') === 'pm');
  const input = page.getByTestId('composer-input');
  await until(() => input.isEnabled(), 'composer enabled');
  await input.fill('*CP');
  await input.press('Enter');
  await waitForText(page.locator('[data-testid="message-assistant"]').last(), 'saved a first draft');
  // The server started the workflow before the model spoke: its tool card comes first.
  const requests = model.chatRequests();
  expect(requests).toHaveLength(2);
  const firstCall = (requests[0].body?.messages ?? []).find((m) => m.role === 'assistant');
  expect(JSON.stringify(firstCall)).toContain('execute_workflow');

  const toggle = page.getByTestId('outputs-toggle');
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  await page.getByRole('heading', { name: 'Project documents' }).waitFor();
  const row = page.locator('[data-testid="output-file"][data-path="planning-artifacts/prd.md"]');
  await row.waitFor();
  await row.click();
  await page.getByRole('tab', { name: 'History' }).click();
  await until(async () => (await page.getByTestId('version-item').count()) === 1, 'one version listed');
  await screenshot(page, 'projects-history.png');
});

it('creates a project with the New project form', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await dialog.getByRole('textbox', { name: 'Project name' }).fill('orchard');
  await dialog.getByRole('textbox', { name: 'Your name (optional)' }).fill('Ada');
  // 6.12.0 is the default now; this test keeps the compiled-agent release it was written for.
  await dialog.getByRole('combobox', { name: 'BMAD version' }).selectOption('6.0.4');
  await dialog.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL((u) => u.searchParams.get('p') === 'orchard', { timeout: 60_000 });
  await page.locator('[data-testid="agent-card"][data-agent-id="analyst"]').waitFor();
  await expect(fs.stat(path.join(folders.root, 'projects', 'orchard', '_bmad', '_config', 'agent-manifest.csv'))).resolves.toBeTruthy();
});

/**
 * Build in a real browser against the production build: a project that is a real git repository
 * (a BMAD 6.12 install committed in it, with a tiny JavaScript project and its test), build
 * enabled from its Build section, a workspace made there, a conversation started in it from the
 * agent's menu where the scripted model edits a file and runs the tests with run_command in the
 * real sandbox, the diff shown on the workspace page, and the merge landing the change in the
 * project folder.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { sh, writeFiles } from '../test/git-repo';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, until, waitForText, type Tab } from './browser-helpers';

jest.setTimeout(180_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let tab: Tab | null = null;
let project: string;

const BUGGY = 'module.exports = (a, b) => a - b;\n';
const FIXED = 'module.exports = (a, b) => a + b;\n';

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('build-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  project = await bmadProject('6.12.0', { parent: projectsRoot, name: 'calc' });
  writeFiles(project, {
    'package.json': JSON.stringify({ name: 'calc', version: '1.0.0', scripts: { test: 'node test.js' } }, null, 2) + '\n',
    'src/sum.js': BUGGY,
    'test.js': "const sum = require('./src/sum');\nif (sum(2, 3) !== 5) { console.error('FAIL: sum(2, 3) is ' + sum(2, 3)); process.exit(1); }\nconsole.log('PASS: sum(2, 3) is 5');\n",
  });
  sh(project, ['init', '-q', '-b', 'main']);
  sh(project, ['add', '-A']);
  sh(project, ['commit', '-q', '-m', 'A calculator with a BMAD install']);
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});
afterEach(async () => {
  if (!tab) return;
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').toLowerCase().slice(0, 80);
  await screenshot(tab.page, `build-${name}.png`).catch(() => undefined);
  const errors = [...tab.pageErrors];
  await tab.close();
  tab = null;
  expect(errors).toEqual([]);
});

it('enables build, makes a workspace, has the agent fix a file and run the tests in it, shows the diff and merges it into the project folder', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/?p=calc');
  const build = page.getByTestId('project-build');
  await build.waitFor();
  await waitForText(page.getByTestId('build-repository'), 'branch main');
  await waitForText(page.getByTestId('build-state'), 'Build is off');
  await expectNoViolations(page, 'build section');

  // Enable build (the single-user mode is its owner).
  await page.getByTestId('build-edit').click();
  await page.getByTestId('build-enabled').check();
  await expectNoViolations(page, 'build settings form');
  await page.getByTestId('build-save').click();
  await waitForText(page.getByTestId('build-state'), 'Build is enabled');

  // A workspace: a taken name would be said; this one is new.
  await page.getByTestId('new-workspace').click();
  await page.getByTestId('workspace-name').fill('fix sum');
  await page.getByTestId('workspace-create').click();
  await waitForText(page.getByTestId('new-workspace-dialog').getByRole('alert'), 'cannot be used');
  await page.getByTestId('workspace-name').fill('fix-sum');
  await page.getByTestId('workspace-create').click();
  const wsPage = page.getByTestId('workspace-page');
  await wsPage.waitFor({ timeout: 60_000 });
  await waitForText(wsPage, 'bmad/fix-sum');
  await expectNoViolations(page, 'new workspace page');
  await page.getByTestId('workspace-back').click();
  await waitForText(page.getByTestId('workspace-item'), 'fix-sum');

  // Start the developer agent in that workspace from its card's menu.
  model.setScript([
    reply.toolCalls([{ name: 'edit_file', arguments: { file_path: '{project-root}/src/sum.js', old_text: 'a - b', new_text: 'a + b' } }]),
    reply.toolCalls([{ name: 'run_command', arguments: { command: 'npm test' } }]),
    reply.text('Fixed the sum; the tests pass.'),
  ]);
  const card = page.locator('li', { has: page.locator('[data-testid="agent-card"][data-agent-id="bmad-agent-dev"]') });
  await card.getByTestId('agent-menu').click();
  await card.getByTestId('start-in-workspace').click();
  const dialog = page.getByTestId('start-in-workspace-dialog');
  await dialog.getByRole('radio', { name: /fix-sum/ }).check();
  await expectNoViolations(page, 'start in a workspace');
  await dialog.getByTestId('start-in-workspace-go').click();
  await page.waitForURL((u) => u.searchParams.get('agent') === 'bmad-agent-dev' && !!u.searchParams.get('ws'));
  await waitForText(page.getByTestId('workspace-branch'), 'bmad/fix-sum');

  const input = page.getByTestId('composer-input');
  await until(() => input.isEnabled(), 'composer enabled');
  await input.fill('Fix the sum and run the tests.');
  await input.press('Enter');
  await waitForText(page.locator('[data-testid="message-assistant"]').last(), 'the tests pass', 90_000);
  const commandCard = page.locator('[data-testid="tool-activity"][data-tool="run_command"]');
  await waitForText(commandCard.getByTestId('tool-label'), 'npm test');
  await waitForText(commandCard.getByTestId('command-outcome'), 'exit code 0');
  await commandCard.getByTestId('tool-label').click();
  await waitForText(commandCard.getByTestId('command-output'), 'PASS: sum(2, 3) is 5');
  const chatBody = (model.chatRequests()[0]?.body ?? {}) as { tools?: Array<{ function?: { name?: string } }> };
  expect((chatBody.tools ?? []).map((t) => t.function?.name)).toContain('run_command');
  // The project folder is untouched until the merge.
  expect(await fs.readFile(path.join(project, 'src/sum.js'), 'utf8')).toBe(BUGGY);
  await expectNoViolations(page, 'chat in a workspace');

  // The workspace page: the change, its diff, the command log; then merge.
  await page.goto('/?p=calc');
  await page.locator('[data-testid="workspace-item"]', { hasText: 'fix-sum' }).getByRole('button', { name: 'fix-sum' }).click();
  await wsPage.waitFor();
  const file = page.locator('[data-testid="workspace-file"][data-path="src/sum.js"]');
  await file.waitFor({ timeout: 30_000 });
  await file.click();
  const diff = page.locator('[data-testid="diff-file"][data-path="src/sum.js"]');
  await diff.waitFor();
  await waitForText(diff.locator('.diff-add'), 'a + b');
  await waitForText(diff.locator('.diff-del'), 'a - b');
  await waitForText(page.getByTestId('command-log'), 'npm test');
  await expectNoViolations(page, 'workspace page with diff');
  await page.setViewportSize({ width: 375, height: 800 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
  await screenshot(page, 'build-workspace-375.png');
  await page.setViewportSize({ width: 1280, height: 860 });

  await page.getByTestId('workspace-merge').click();
  const confirm = page.getByTestId('confirm-dialog');
  await confirm.waitFor();
  await page.keyboard.press('Escape');
  await until(async () => (await confirm.count()) === 0, 'Escape closes the confirmation');
  expect(await fs.readFile(path.join(project, 'src/sum.js'), 'utf8')).toBe(BUGGY);
  await page.getByTestId('workspace-merge').click();
  await page.getByTestId('confirm-button').click();
  await waitForText(page.getByTestId('workspace-notice'), 'Merged into main', 30_000);
  expect(await fs.readFile(path.join(project, 'src/sum.js'), 'utf8')).toBe(FIXED);
  expect(sh(project, ['log', '-1', '--format=%s', 'main']).trim()).not.toBe('');
  expect(sh(project, ['status', '--porcelain', '--untracked-files=no']).trim()).toBe('');
});

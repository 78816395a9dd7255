/**
 * A project from a Git URL in a real browser (Debian's chromium through playwright-core) against
 * the production build and the tests' own git server (nginx, git http-backend, basic auth) on
 * loopback: New project → From a Git repository, git's progress while it clones, the project
 * then open with its remote in the Build section, fetched on demand.
 *
 * Run: npx jest -c jest.e2e.config.ts e2e/remotes   (E2E_SKIP_BUILD=1 reuses an existing build).
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { startGitServer, type GitServer } from '../test/git-server';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, until, waitForText, type Tab } from './browser-helpers';

jest.setTimeout(180_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let server: GitServer;
let tab: Tab | null = null;
const TOKEN = `tok_${crypto.randomBytes(12).toString('hex')}`;

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  // GitHub-style: the token is the password of the user name the server sends by default.
  server = await startGitServer({ user: 'x-access-token', token: TOKEN, rateLimit: '256k' });
  const seed = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-e2e-remote-seed-'));
  const shop = await bmadProject('6.12.0', { parent: seed, name: 'shop' });
  server.createRepository('team/shop', { 'src/app.txt': 'one\n', 'assets/blob.bin': crypto.randomBytes(1024 * 1024).toString('latin1') }, { from: shop });
  await fs.rm(seed, { recursive: true, force: true });
  folders = await makeFolders('remotes-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  app = await startApp(folders, {
    OPENAI_BASE_URL: model.url,
    OPENAI_MODEL: 'e2e-model',
    PROJECTS_ROOT: projectsRoot,
    SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
    GIT_REMOTE_HOSTS: server.hostPort,
  });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await model?.close();
  await server?.stop();
  await folders?.cleanup();
});
afterEach(async () => {
  if (!tab) return;
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').toLowerCase().slice(0, 80);
  await screenshot(tab.page, `remotes-${name}.png`).catch(() => undefined);
  const errors = [...tab.pageErrors];
  await tab.close();
  tab = null;
  expect(errors).toEqual([]);
});

it('makes a project from a Git URL, showing git’s progress while it clones, then its remote in the Build section', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await dialog.getByRole('radio', { name: /A Git repository/ }).check();
  await dialog.getByRole('textbox', { name: 'Repository URL' }).fill(server.repoUrl('team/shop'));
  await dialog.getByLabel('Access token (optional)').fill(TOKEN);
  await expectNoViolations(page, 'new project from a git repository');
  await dialog.getByRole('button', { name: 'Clone repository' }).click();

  // git's own phase and percentage, as the server reads them from the clone.
  const progress = dialog.getByTestId('clone-progress');
  const seen: string[] = [];
  await until(async () => {
    const text = (await progress.textContent().catch(() => '')) ?? '';
    if (text) seen.push(text);
    return /Receiving objects: ([1-9]\d?)%/.test(text);
  }, 'a percentage of receiving objects', 60_000);
  await screenshot(page, 'remotes-clone-progress.png');
  await expectNoViolations(page, 'clone in progress');
  expect(await dialog.getByTestId('git-token').inputValue()).toBe('');

  // Ready: the project opens.
  await page.waitForURL((u) => u.searchParams.get('p') === 'shop', { timeout: 90_000 });
  await page.locator('[data-testid="agent-card"]').first().waitFor();
  const remote = page.getByTestId('remote-settings');
  await remote.waitFor();
  await waitForText(page.getByTestId('remote-url-shown'), server.repoUrl('team/shop'));
  await waitForText(remote, 'token set');
  await waitForText(page.getByTestId('remote-base'), 'up to date');

  // A teammate pushes; Fetch brings the base along.
  server.pushAsTeammate('team/shop', { 'src/teammate.txt': 'hello\n' });
  await page.getByTestId('remote-fetch').click();
  await waitForText(page.getByTestId('remote-fetch-note'), 'Fetched: the base is up to date', 60_000);
  await expect(fs.readFile(path.join(folders.root, 'projects', 'shop', 'src', 'teammate.txt'), 'utf8')).resolves.toBe('hello\n');
  await expectNoViolations(page, 'build section with a remote');
  // Nothing the browser got holds the token.
  expect(await page.content()).not.toContain(TOKEN);
  expect(seen.some((s) => s.includes(TOKEN))).toBe(false);
});

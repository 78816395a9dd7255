/**
 * Accounts in a real browser against the production build: the first visitor creates the admin,
 * the admin adds a person on the account page and gives them one project, a token is shown once
 * and works with curl's header, and the person signs in to see that project and not the other.
 * Also: the server refuses AUTH=off on 0.0.0.0.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { REPO, appEnv, freePort, makeFolders, startApp, type AppServer, type Folders } from './support';
import { axeViolations, launchBrowser, openTab, screenshot, smallTapTargets, until, type Tab } from './browser-helpers';

jest.setTimeout(120_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
const tabs: Tab[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('accounts-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'garden' });
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'lab' });
  app = await startApp(folders, { AUTH: 'on', OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  for (const t of tabs) await t.close().catch(() => undefined);
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

async function tab(width = 1280): Promise<Page> {
  const t = await openTab(browser, app.url, { width, height: 860 });
  tabs.push(t);
  return t.page;
}

async function expectAccessible(page: Page) {
  expect(await axeViolations(page)).toEqual([]);
}

let adminPage: Page;

it('asks the first visitor to create the admin, then shows the app', async () => {
  // Signed out, the API answers 401.
  expect((await fetch(`${app.url}/api/projects`)).status).toBe(401);
  const page = (adminPage = await tab());
  await page.goto('/');
  await page.getByTestId('first-run').waitFor();
  await expectAccessible(page);
  await page.getByLabel('Your name').fill('Root');
  await page.getByLabel('Email').fill('root@example.com');
  await page.getByLabel('Password').fill('root-password-1');
  await page.getByRole('button', { name: 'Create admin account' }).click();
  await page.getByRole('combobox', { name: 'Project' }).waitFor();
  await page.getByTestId('account-link').waitFor();
  // An admin sees every project, including those with no members yet.
  const options = page.getByRole('combobox', { name: 'Project' }).locator('option');
  const values = () => options.evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  await until(async () => (await values()).includes('garden'), 'the projects listed');
  expect(await values()).toContain('lab');
});

it('lets the admin add a person, give them a project and make a token shown once', async () => {
  const page = adminPage;
  await page.getByTestId('account-link').click();
  await page.waitForURL((u) => u.pathname === '/settings');
  await page.getByTestId('people').waitFor();
  const people = page.getByTestId('people');
  await people.getByLabel('Name').fill('Alice');
  await people.getByLabel('Email').fill('alice@example.com');
  await people.getByLabel('Password').fill('alice-password-1');
  await people.getByRole('button', { name: 'Add person' }).click();
  await until(async () => (await page.getByTestId('person-item').count()) === 2, 'two people listed');

  const members = page.getByTestId('members');
  await members.getByLabel('Project', { exact: true }).selectOption('garden');
  await members.getByLabel('Email of the person').fill('alice@example.com');
  await members.getByLabel('Role', { exact: true }).selectOption('editor');
  await members.getByRole('button', { name: 'Add member' }).click();
  // Alice, then the admin (no member, but with access): everyone who can see garden.
  await until(async () => (await page.getByTestId('member-item').count()) === 2, 'alice is a member of garden');

  const tokens = page.getByTestId('tokens');
  await tokens.getByLabel('Token name').fill('ci');
  await tokens.getByRole('button', { name: 'Create token' }).click();
  const secret = (await page.getByTestId('token-secret').locator('code').textContent())!.trim();
  expect(secret).toMatch(/^bmad_/);
  await screenshot(page, 'accounts-settings.png');
  await expectAccessible(page);
  // Shown once: the page after a reload lists the token without it.
  await page.reload();
  await page.getByTestId('token-item').waitFor();
  expect(await page.content()).not.toContain(secret);
  // It works as curl sends it.
  const res = await fetch(`${app.url}/api/projects`, { headers: { authorization: `Bearer ${secret}` } });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { data: { id: string }[] }).data.map((p) => p.id).sort()).toEqual(['garden', 'lab']);

  // The account page works on a phone: every control a finger can hit.
  const phone = await tab(375);
  await phone.context().addCookies(await page.context().cookies());
  await phone.goto('/settings');
  await phone.getByTestId('tokens').waitFor();
  expect(await smallTapTargets(phone)).toEqual([]);
});

it('signs a member in, who sees their project and not the other', async () => {
  const page = await tab();
  await page.goto('/');
  await page.getByTestId('sign-in').waitFor();
  await expectAccessible(page);
  await page.getByLabel('Email').fill('alice@example.com');
  await page.getByLabel('Password').fill('wrong-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('auth-error').waitFor();
  await page.getByLabel('Password').fill('alice-password-1');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const workspace = page.getByRole('combobox', { name: 'Project' });
  await workspace.waitFor();
  const values = () => workspace.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  await until(async () => (await values()).includes('garden'), 'her project listed');
  expect(await values()).not.toContain('lab');
  const statuses = await page.evaluate(async () => ({
    garden: (await fetch('/api/projects/garden')).status,
    lab: (await fetch('/api/projects/lab')).status,
    people: (await fetch('/api/users')).status,
  }));
  expect(statuses).toEqual({ garden: 200, lab: 404, people: 403 });
  // A member's account page has no People section.
  await page.goto('/settings');
  await page.getByTestId('tokens').waitFor();
  expect(await page.getByTestId('people').count()).toBe(0);
  await page.getByTestId('sign-out').click();
  await page.getByTestId('sign-in').waitFor();
  // Signed out, the account page is not rendered at all: the server sends the browser to sign in.
  const res = await page.goto('/settings');
  expect(new URL(page.url()).pathname).toBe('/');
  expect(res?.status()).toBe(200);
  await page.getByTestId('sign-in').waitFor();
});

it('refuses AUTH=off when next start listens on 0.0.0.0, naming HOST', async () => {
  const port = await freePort();
  let out = '';
  const proc = spawn(process.execPath, [path.join(REPO, 'node_modules/next/dist/bin/next'), 'start', '-p', String(port), '-H', '0.0.0.0'], {
    cwd: REPO,
    env: appEnv(folders, { AUTH: 'off' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const started = Date.now();
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      resolve(null);
    }, 30_000);
    proc.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  expect(code).not.toBe(0);
  expect(code).not.toBeNull();
  expect(Date.now() - started).toBeLessThan(30_000);
  expect(out).toMatch(/HOST is 0\.0\.0\.0/);
});

/**
 * People and projects on the account page, in a real browser against the production build, with
 * two people in two browser contexts: an admin and a member. Projects are named by folder with
 * their BMAD name beside it; an editor sees no member controls; the member changes their own
 * password; the admin sets one for them and deactivates them (the member's open page is signed
 * out on its next request); revoking a token asks first and its 401 says it was revoked; the
 * sign-in and account pages pass axe-core in the light and the dark scheme.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, sleep, until, type Tab } from './browser-helpers';

jest.setTimeout(120_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
const tabs: Tab[] = [];
let admin: Page;
let member: Page;

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('people-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  // Two copies of one install: one BMAD project_name, two folders.
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'alpha' });
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'beta' });
  app = await startApp(folders, {
    AUTH: 'on',
    ADMIN_EMAIL: 'root@example.com',
    ADMIN_PASSWORD: 'root-password-1',
    OPENAI_BASE_URL: model.url,
    OPENAI_MODEL: 'e2e-model',
    PROJECTS_ROOT: projectsRoot,
  });
}, 240_000);
afterAll(async () => {
  for (const t of tabs) await t.close().catch(() => undefined);
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

/** A new browser context: its own cookies, as a second person's browser. */
async function browserOfItsOwn(): Promise<Page> {
  const t = await openTab(browser, app.url);
  tabs.push(t);
  return t.page;
}

async function signIn(page: Page, email: string, password: string) {
  await page.goto('/');
  await page.getByTestId('sign-in').waitFor();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('account-link').waitFor();
}

const status = (page: Page, url: string) => page.evaluate(async (u) => (await fetch(u)).status, url);

it('signs the admin in (the sign-in page passes axe in both schemes) and names projects by folder and BMAD name', async () => {
  admin = await browserOfItsOwn();
  await admin.goto('/');
  await admin.getByTestId('sign-in').waitFor();
  await expectNoViolations(admin, 'sign-in');
  await signIn(admin, 'root@example.com', 'root-password-1');
  // The way to the account page says what it is.
  await admin.getByRole('link', { name: 'Account' }).click();
  await admin.waitForURL((u) => u.pathname === '/settings');

  const people = admin.getByTestId('people');
  await people.getByLabel('Name').fill('Mia');
  await people.getByLabel('Email').fill('mia@example.com');
  await people.getByLabel('Password').fill('mia-password-1');
  await people.getByRole('button', { name: 'Add person' }).click();
  await until(async () => (await admin.getByTestId('person-item').count()) === 2, 'Mia listed');

  const projects = (await admin.evaluate(async () => ((await (await fetch('/api/projects')).json()) as { data: { id: string; name: string }[] }).data)) as { id: string; name: string }[];
  const names = new Set(projects.map((p) => p.name));
  expect(names.size).toBe(1);
  const [bmadName] = [...names];
  expect(bmadName).not.toBe('alpha');
  const members = admin.getByTestId('members');
  const picker = members.getByLabel('Project', { exact: true });
  expect(await picker.locator('option').allTextContents()).toEqual([`alpha (${bmadName})`, `beta (${bmadName})`]);
  const tokenPicker = admin.getByTestId('tokens').getByLabel('Projects');
  expect(await tokenPicker.locator('option').allTextContents()).toEqual(['all of mine', `only alpha (${bmadName})`, `only beta (${bmadName})`]);

  await picker.selectOption('alpha');
  await members.getByLabel('Email of the person').fill('mia@example.com');
  await members.getByLabel('Role', { exact: true }).selectOption('editor');
  await members.getByRole('button', { name: 'Add member' }).click();
  // Mia, then the admin, who is no member but has access: listed and marked.
  await until(async () => (await members.getByTestId('member-item').count()) === 2, 'Mia and the admin listed');
  expect(await members.getByTestId('member-item').nth(1).getAttribute('data-access')).toBe('admin');
  expect(await members.getByTestId('member-item').nth(1).textContent()).toMatch(/root.*admin/);
  await expectNoViolations(admin, 'settings (admin)');
});

it('shows the member (an editor) everyone with access but no member controls; they change their own password', async () => {
  member = await browserOfItsOwn();
  await signIn(member, 'mia@example.com', 'mia-password-1');
  await member.getByRole('link', { name: 'Account' }).click();
  await member.waitForURL((u) => u.pathname === '/settings');
  const members = member.getByTestId('members');
  await members.getByTestId('members-read-only').waitFor();
  await until(async () => (await members.getByTestId('member-item').count()) === 2, 'two people with access');
  expect(await members.getByRole('button', { name: 'Add member' }).count()).toBe(0);
  expect(await members.getByRole('button', { name: /^Remove/ }).count()).toBe(0);
  expect(await members.getByLabel(/^Role of/).count()).toBe(0);
  expect(await member.getByTestId('people').count()).toBe(0);
  await expectNoViolations(member, 'settings (member)');

  const own = member.getByTestId('own-password');
  await own.getByLabel('Current password').fill('mia-password-1');
  await own.getByLabel('New password', { exact: true }).fill('mia-password-2');
  await own.getByLabel('New password again').fill('mia-password-2');
  await own.getByRole('button', { name: 'Change password' }).click();
  await own.getByText('Password changed.').waitFor();
  // This browser stays signed in; the new password is the one that works.
  expect(await status(member, '/api/users/me')).toBe(200);
  const other = await browserOfItsOwn();
  await other.goto('/');
  await other.getByLabel('Email').fill('mia@example.com');
  await other.getByLabel('Password').fill('mia-password-1');
  await other.getByRole('button', { name: 'Sign in' }).click();
  await other.getByTestId('auth-error').waitFor();
  await signIn(other, 'mia@example.com', 'mia-password-2');
});

it('lets the admin set the member a password: the member’s open page is signed out, the new password works', async () => {
  await admin.reload();
  const people = admin.getByTestId('people');
  await people.getByRole('button', { name: 'Set password for Mia' }).click();
  const dialog = admin.getByRole('alertdialog');
  await dialog.getByLabel('New password').fill('set-by-admin-1');
  await dialog.getByRole('button', { name: 'Set password' }).click();
  await admin.getByText(/Mia has a new password/).waitFor();
  expect(await status(member, '/api/users/me')).toBe(401);
  await member.reload();
  await member.getByTestId('sign-in').waitFor();
  await signIn(member, 'mia@example.com', 'set-by-admin-1');
});

it('lets the admin deactivate the member after asking: their open page gets 401 at once and sign-in is refused; reactivated, they are back', async () => {
  expect(await status(member, '/api/projects')).toBe(200);
  const people = admin.getByTestId('people');
  await people.getByRole('button', { name: 'Deactivate Mia' }).click();
  const dialog = admin.getByRole('alertdialog');
  expect(await dialog.textContent()).toMatch(/Deactivate Mia\?/);
  await expectNoViolations(admin, 'settings (deactivate dialog)');
  await dialog.getByRole('button', { name: 'Deactivate' }).click();
  await until(async () => (await people.getByTestId('person-item').nth(1).getAttribute('data-status')) === 'deactivated', 'Mia marked deactivated');
  expect(await people.getByTestId('person-item').nth(1).textContent()).toMatch(/Mia \(deactivated\)/);

  // The member's next request, from the page they had open.
  expect(await status(member, '/api/projects')).toBe(401);
  await member.reload();
  await member.getByTestId('sign-in').waitFor();
  // Every browser here signs in from one address, allowed 5 attempts a minute: the ones above used them.
  await sleep(61_000);
  await member.getByLabel('Email').fill('mia@example.com');
  await member.getByLabel('Password').fill('set-by-admin-1');
  await member.getByRole('button', { name: 'Sign in' }).click();
  expect(await member.getByTestId('auth-error').textContent()).toMatch(/deactivated/);

  await people.getByRole('button', { name: 'Reactivate Mia' }).click();
  await until(async () => (await people.getByTestId('person-item').nth(1).getAttribute('data-status')) === 'active', 'Mia active again');
  await signIn(member, 'mia@example.com', 'set-by-admin-1');
  await screenshot(admin, 'people-settings.png');
}, 180_000);

it('asks before revoking a token, naming it; the revoked token’s 401 says so', async () => {
  const tokens = admin.getByTestId('tokens');
  await tokens.getByLabel('Token name').fill('deploy');
  await tokens.getByRole('button', { name: 'Create token' }).click();
  const secret = (await admin.getByTestId('token-secret').locator('code').textContent())!.trim();
  await tokens.getByRole('button', { name: 'Revoke token deploy' }).click();
  const dialog = admin.getByRole('alertdialog');
  expect(await dialog.textContent()).toMatch(/Revoke token “deploy”\?/);
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  expect((await fetch(`${app.url}/api/projects`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);

  await tokens.getByRole('button', { name: 'Revoke token deploy' }).click();
  await admin.getByRole('alertdialog').getByRole('button', { name: 'Revoke token' }).click();
  await until(async () => (await tokens.getByTestId('token-item').count()) === 0, 'the token gone from the list');
  const res = await fetch(`${app.url}/api/projects`, { headers: { authorization: `Bearer ${secret}` } });
  expect(res.status).toBe(401);
  expect(((await res.json()) as { error: string }).error).toMatch(/^This token was revoked/);
});

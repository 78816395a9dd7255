/**
 * Documents, the home and the no-access page in a real browser against the production build,
 * with accounts on and people in separate browser contexts: the one document viewer from every
 * place it opens (journey, project documents, a chat's tool card) with History for all and Edit
 * only for those who may write; a save conflict that names the other person and keeps the draft;
 * Escape with the focus on the page; `/?p=<a project one cannot see>` in words, never listed; the
 * projects first, the journey above the agents. axe-core clean in light and dark.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, sendMessage, sleep, until, waitForText, waitIdle, type Tab } from './browser-helpers';

jest.setTimeout(120_000);

const BRIEF = '_bmad-output/planning-artifacts/briefs/brief-plants-2026-11-25/brief.md';
const BRIEF_REL = BRIEF.replace('_bmad-output/', '');
const PEOPLE = {
  grace: { email: 'grace@example.com', name: 'Grace', password: 'grace-password-1', role: 'editor' },
  ada: { email: 'ada@example.com', name: 'Ada', password: 'ada-password-1', role: 'editor' },
  vic: { email: 'vic@example.com', name: 'Vic', password: 'vic-password-1', role: 'viewer' },
} as const;
type Person = keyof typeof PEOPLE;

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let projectsRoot: string;
const tabs: Tab[] = [];

const sessions = new Map<string, { name: string; value: string }[]>();
const browserSessions = new Map<Person, Awaited<ReturnType<Tab['context']['cookies']>>>();
let client = 0;

/** One sign-in per person for the whole suite: the sign-in limit counts attempts. */
async function signIn(email: string, password: string): Promise<{ name: string; value: string }[]> {
  const known = sessions.get(email);
  if (known) return known;
  const res = await fetch(`${app.url}/api/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: app.url, 'x-forwarded-for': `10.9.0.${++client}` },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`sign-in ${email}: ${res.status} ${await res.text()}`);
  const cookies = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .filter((c) => !c.endsWith('='))
    .map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1) }));
  sessions.set(email, cookies);
  return cookies;
}

async function asAdmin(method: string, url: string, body: unknown) {
  const cookies = await signIn('root@example.com', 'root-password-1');
  const res = await fetch(`${app.url}${url}`, {
    method,
    headers: { 'content-type': 'application/json', origin: app.url, cookie: cookies.map((c) => `${c.name}=${c.value}`).join('; ') },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
}

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('documents-ui');
  projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  const plants = await bmadProject('6.12.0', { parent: projectsRoot, name: 'plants' });
  await bmadProject('6.12.0', { parent: projectsRoot, name: 'secret' });
  await fs.mkdir(path.dirname(path.join(plants, BRIEF)), { recursive: true });
  await fs.writeFile(path.join(plants, BRIEF), '---\nstatus: final\n---\n# Plants brief\n\nPlants, delivered weekly.\n');
  app = await startApp(folders, {
    AUTH: 'on',
    ADMIN_EMAIL: 'root@example.com',
    ADMIN_PASSWORD: 'root-password-1',
    OPENAI_BASE_URL: model.url,
    OPENAI_MODEL: 'e2e-model',
    PROJECTS_ROOT: projectsRoot,
  });
  for (const p of Object.values(PEOPLE)) {
    await asAdmin('POST', '/api/users', { email: p.email, name: p.name, password: p.password, role: 'member' });
    await asAdmin('PUT', '/api/projects/plants/members', { email: p.email, role: p.role });
  }
}, 300_000);
afterAll(async () => {
  for (const t of tabs) await t.close().catch(() => undefined);
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});
afterEach(async () => {
  const open = tabs.splice(0);
  const errors = open.flatMap((t) => t.pageErrors);
  for (const t of open) await t.close().catch(() => undefined);
  expect(errors).toEqual([]);
});

/** A browser context of its own for one person, signed in. */
async function tabOf(who: Person, viewport?: { width: number; height: number }): Promise<Page> {
  const tab = await openTab(browser, app.url, viewport);
  tabs.push(tab);
  const known = browserSessions.get(who);
  if (known) await tab.context.addCookies(known);
  else {
    // Signed in through the context itself, so the browser keeps the cookies as the server set them.
    const res = await tab.context.request.post('/api/auth/sign-in/email', {
      data: { email: PEOPLE[who].email, password: PEOPLE[who].password },
      headers: { origin: app.url, 'x-forwarded-for': `10.9.1.${++client}` },
    });
    if (res.status() !== 200) throw new Error(`sign-in ${who}: ${res.status()} ${await res.text()}`);
    browserSessions.set(who, await tab.context.cookies());
  }
  return tab.page;
}

async function projectScreen(page: Page) {
  await page.goto('/?p=plants');
  await page.getByTestId('journey-document').first().waitFor();
}

async function openFromJourney(page: Page) {
  await projectScreen(page);
  await page.locator(`[data-testid="journey-document"][data-path="${BRIEF_REL}"]`).click();
  const panel = page.getByTestId('document-panel');
  await waitForText(panel.getByTestId('document-content'), 'Plants, delivered weekly.');
  return panel;
}

it('home: the projects one can see first, with version, stage and activity; the bundles below; the journey above the agents', async () => {
  const page = await tabOf('grace');
  await page.goto('/');
  const card = page.locator('[data-testid="home-project"][data-project-id="plants"]');
  await card.waitFor();
  expect(await page.getByTestId('home-project').count()).toBe(1);
  expect(await page.locator('[data-project-id="secret"]').count()).toBe(0);
  expect(await card.innerText()).toContain('BMAD 6.12.0');
  expect(await card.innerText()).toContain('Editor');
  await waitForText(card.getByTestId('home-stage'), 'Next:');
  expect(await card.getByTestId('home-activity').innerText()).toBe('No conversations yet');
  // The projects come first, the sample bundles below them.
  await page.getByRole('heading', { name: 'Sample bundles' }).waitFor();
  const homeBox = (await page.getByTestId('home').boundingBox())!;
  const bundlesBox = (await page.getByRole('heading', { name: 'Sample bundles' }).boundingBox())!;
  expect(homeBox.y).toBeLessThan(bundlesBox.y);
  await expectNoViolations(page, 'home');

  await card.getByRole('link').first().click();
  await page.waitForURL((u) => u.searchParams.get('p') === 'plants');
  const firstCard = page.locator('[data-testid="agent-card"]').first();
  await firstCard.waitFor();
  // The journey is already there when the cards show, above them, and nothing moves after.
  const journey = (await page.getByTestId('project-journey').boundingBox())!;
  const before = (await firstCard.boundingBox())!;
  expect(journey.y + journey.height).toBeLessThanOrEqual(before.y);
  await sleep(1500);
  expect((await firstCard.boundingBox())!.y).toBe(before.y);
});

it('an editor gets History and Edit wherever the document opens: the journey, the documents list, a chat card', async () => {
  const page = await tabOf('grace');
  let panel = await openFromJourney(page);
  await panel.getByRole('tab', { name: 'History' }).waitFor();
  await panel.getByTestId('document-edit').waitFor();
  await expectNoViolations(page, 'document viewer');

  // Escape with the focus on the page (a click on the title, which takes no focus) closes it.
  await panel.locator('.viewer-title').click();
  expect(await page.evaluate(() => document.activeElement === document.body || document.activeElement?.id === 'main')).toBe(true);
  await page.keyboard.press('Escape');
  await panel.waitFor({ state: 'detached' });

  const toggle = page.getByTestId('outputs-toggle');
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  await page.locator(`[data-testid="output-file"][data-path="${BRIEF_REL}"]`).click();
  panel = page.getByTestId('document-panel');
  await waitForText(panel.getByTestId('document-content'), 'Plants, delivered weekly.');
  await panel.getByTestId('document-edit').waitFor();
  await panel.getByRole('tab', { name: 'History' }).click();
  await panel.getByTestId('document-history').waitFor();
  await page.keyboard.press('Escape');
  await panel.waitFor({ state: 'detached' });

  model.reset();
  model.setScript([
    reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{planning_artifacts}/notes.md', content: '# Notes\n\nWritten by the PM.\n' } }]),
    reply.text('Saved the notes.'),
  ]);
  await page.goto('/?p=plants&agent=bmad-agent-pm');
  await sendMessage(page, 'Write the notes.');
  await waitIdle(page);
  await page.getByTestId('tool-open').first().click();
  panel = page.getByTestId('document-panel');
  await waitForText(panel.getByTestId('document-content'), 'Written by the PM.');
  await panel.getByTestId('document-edit').waitFor();
  await panel.getByRole('tab', { name: 'History' }).click();
  await waitForText(panel.getByTestId('version-item').first(), 'Version 1');
});

it('a save conflict names who saved first and when, and keeps the draft beside their version', async () => {
  const grace = await tabOf('grace');
  const ada = await tabOf('ada');
  const gracePanel = await openFromJourney(grace);
  await gracePanel.getByTestId('document-edit').click();
  const source = gracePanel.getByTestId('document-source');
  await until(async () => (await source.inputValue()).includes('Plants, delivered weekly.'), 'source loaded');
  await source.fill('---\nstatus: final\n---\n# Plants brief\n\nPlants, delivered weekly.\nGrace: in recycled pots.\n');

  // Ada, in her own browser, saves first.
  const adaPanel = await openFromJourney(ada);
  await adaPanel.getByTestId('document-edit').click();
  const adaSource = adaPanel.getByTestId('document-source');
  await until(async () => (await adaSource.inputValue()).includes('Plants, delivered weekly.'), 'source loaded for Ada');
  await adaSource.fill('---\nstatus: final\n---\n# Plants brief\n\nPlants, delivered weekly.\nAda: by bike.\n');
  await adaPanel.getByTestId('document-save').click();
  await waitForText(adaPanel.getByTestId('document-content'), 'Ada: by bike.');

  await gracePanel.getByTestId('document-save').click();
  const notice = gracePanel.getByTestId('document-conflict');
  await notice.waitFor();
  expect(await notice.getByTestId('conflict-author').innerText()).toBe('Ada');
  expect(await notice.innerText()).toMatch(/just now|min ago/);
  expect(await source.inputValue()).toContain('Grace: in recycled pots.');
  await expectNoViolations(grace, 'document conflict');

  await notice.getByRole('button', { name: 'Load their version' }).click();
  await until(async () => (await source.inputValue()).includes('Ada: by bike.'), 'their version loaded');
  const merge = gracePanel.getByTestId('document-merge');
  expect(await merge.getByTestId('merge-draft').textContent()).toContain('Grace: in recycled pots.');
  await merge.getByTestId('merge-change').first().getByRole('button', { name: 'Keep both' }).click();
  expect(await source.inputValue()).toContain('Ada: by bike.\nGrace: in recycled pots.');
  await expectNoViolations(grace, 'document merge');
  await gracePanel.getByTestId('document-save').click();
  await gracePanel.getByTestId('document-editor').waitFor({ state: 'detached' }).catch(async (e) => {
    await screenshot(grace, 'documents-merge-save.png');
    throw e;
  });
  await waitForText(gracePanel.getByTestId('document-content'), 'Grace: in recycled pots.');
  const saved = await fs.readFile(path.join(projectsRoot, 'plants', BRIEF), 'utf8');
  expect(saved).toContain('Ada: by bike.');
  expect(saved).toContain('Grace: in recycled pots.');

  // Leaving with unsaved edits asks first.
  await gracePanel.getByTestId('document-edit').click();
  await until(async () => (await source.inputValue()).includes('Grace'), 'source loaded again');
  await source.fill('unsaved');
  await gracePanel.getByTestId('document-close').click();
  const ask = grace.getByRole('alertdialog', { name: 'Discard your changes?' });
  await ask.waitFor();
  await ask.getByRole('button', { name: 'Cancel' }).click();
  expect(await source.inputValue()).toBe('unsaved');
});

it('a viewer of the project reads the document and its history, with no Edit and no Restore', async () => {
  const page = await tabOf('vic');
  const panel = await openFromJourney(page);
  await panel.getByRole('tab', { name: 'History' }).waitFor();
  expect(await panel.getByTestId('document-edit').count()).toBe(0);
  const toggle = page.getByTestId('outputs-toggle');
  await page.keyboard.press('Escape');
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  await page.locator(`[data-testid="output-file"][data-path="${BRIEF_REL}"]`).click();
  await page.getByTestId('document-panel').getByRole('tab', { name: 'History' }).click();
  // Ada's and Grace's saves (the test before) are older versions a writer could restore.
  await until(async () => (await page.getByTestId('version-item').count()) >= 3, 'the versions listed');
  await page.getByTestId('document-panel').getByRole('button', { name: 'Diff version 1 against the current file' }).waitFor();
  expect(await page.getByTestId('document-panel').getByTestId('document-edit').count()).toBe(0);
  expect(await page.getByTestId('document-panel').getByRole('button', { name: /^Restore/ }).count()).toBe(0);
  await expectNoViolations(page, 'document history for a viewer');
});

it('a project one cannot see is a page in words with a way back, and never enters the project list', async () => {
  const page = await tabOf('grace');
  await page.goto('/?p=secret');
  const notFound = page.getByTestId('not-found');
  await notFound.waitFor();
  const text = await notFound.innerText();
  expect(text).toContain('This project is not available');
  expect(text).not.toMatch(/\/api\/|E_[A-Z_]+|GET |404/);
  expect(await page.locator('body').innerText()).not.toContain('No project with id');
  expect(await page.getByRole('combobox', { name: 'Project' }).count()).toBe(0);
  await expectNoViolations(page, 'no access');
  await notFound.getByRole('link', { name: 'Back to your projects' }).click();
  await page.getByTestId('home').waitFor();
  await page.locator('[data-testid="home-project"][data-project-id="plants"]').waitFor();
  const options = await page.getByRole('combobox', { name: 'Project' }).locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  expect(options).toEqual(['', 'plants']);
  expect(await page.locator('[data-project-id="secret"]').count()).toBe(0);

  // An unknown agent in the URL: words too.
  await page.goto('/?p=plants&agent=nobody');
  await waitForText(page.getByTestId('not-found'), 'This agent is not here');
});

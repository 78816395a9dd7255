/**
 * Read-only sharing in real browsers against the production build, two people in two contexts
 * (and an admin in a third): the owner's words are labelled by author, a reader of a shared
 * conversation gets the read-only line instead of the composer, Edit and Regenerate, continues in
 * a copy of their own and chats there; an admin opening a member's private conversation reads it
 * and cannot send. Every screen passes axe-core in the light and the dark scheme.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, sendMessage, until, waitIdle, type Tab } from './browser-helpers';

jest.setTimeout(120_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
const tabs: Tab[] = [];
const pages: Record<string, Page> = {};
let conversationId: string;

/** A request from `who`'s browser (their session cookie, same origin). */
async function api(who: string, method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  return pages[who]!.evaluate(
    async ({ method, url, body }) => {
      const res = await fetch(url, { method, headers: body !== undefined ? { 'content-type': 'application/json' } : {}, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      return { status: res.status, body: await res.json().catch(() => null) };
    },
    { method, url, body },
  );
}

async function newPage(width = 1280): Promise<Page> {
  const t = await openTab(browser, app.url, { width, height: 860 });
  tabs.push(t);
  return t.page;
}

/** A browser context of its own, signed in on the sign-in page as `who`. */
async function signIn(who: string): Promise<Page> {
  const page = await newPage();
  await page.goto('/');
  await page.getByTestId('sign-in').waitFor();
  await page.getByLabel('Email').fill(`${who}@example.com`);
  await page.getByLabel('Password').fill(`${who}-password-1`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('account-link').waitFor();
  return (pages[who] = page);
}

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('sharing-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  await bmadProject('6.0.4', { parent: projectsRoot, name: 'garden' });
  app = await startApp(folders, { AUTH: 'on', OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot });
  // The admin, then the people, as an admin makes them (the account page has tests of its own).
  const root = (pages.root = await newPage());
  await root.goto('/');
  await root.getByTestId('first-run').waitFor();
  await root.getByLabel('Your name').fill('Root');
  await root.getByLabel('Email').fill('root@example.com');
  await root.getByLabel('Password').fill('root-password-1');
  await root.getByRole('button', { name: 'Create admin account' }).click();
  await root.getByTestId('account-link').waitFor();
  for (const [who, name] of [
    ['alice', 'Alice'],
    ['bob', 'Bob'],
  ] as const) {
    expect((await api('root', 'POST', '/api/users', { email: `${who}@example.com`, name, password: `${who}-password-1`, role: 'member' })).status).toBe(201);
    expect((await api('root', 'PUT', '/api/projects/garden/members', { email: `${who}@example.com`, role: 'editor' })).status).toBe(200);
    await signIn(who);
  }
}, 240_000);

afterAll(async () => {
  for (const t of tabs) await t.close().catch(() => undefined);
  for (const t of tabs) expect(t.pageErrors).toEqual([]);
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

let alicePage: Page;

it('lets the owner chat; her own words carry no one else’s name', async () => {
  const page = (alicePage = pages.alice!);
  model.setScript([reply.text('Here is a first outline of the garden PRD.')]);
  await page.goto('/?p=garden&agent=pm');
  await sendMessage(page, 'Draft the garden PRD');
  await page.waitForURL((u) => !!u.searchParams.get('c'));
  await waitIdle(page);
  conversationId = new URL(page.url()).searchParams.get('c')!;
  await page.getByTestId('message-assistant').filter({ hasText: 'first outline' }).waitFor();
  expect(await page.getByTestId('message-author').count()).toBe(0);
  expect(await page.getByTestId('read-only-line').count()).toBe(0);
});

it("lets an admin read a member's private conversation, never send in it", async () => {
  const page = pages.root!;
  await page.goto(`/?p=garden&c=${conversationId}`);
  const line = page.getByTestId('read-only-line');
  await line.waitFor();
  expect(await line.textContent()).toContain('Alice’s private conversation · read-only');
  await page.getByTestId('message-user').filter({ hasText: 'Draft the garden PRD' }).waitFor();
  expect(await page.getByTestId('message-author').first().textContent()).toBe('Alice said:');
  expect(await page.getByTestId('composer-input').count()).toBe(0);
  expect(await page.getByTestId('edit-message').count()).toBe(0);
  expect(await page.getByTestId('regenerate').count()).toBe(0);
  // The server says the same to a write sent by hand from this browser.
  const refused = await api('root', 'POST', '/api/chat', { projectId: 'garden', agentId: 'pm', message: 'hi', conversationId, stream: false });
  expect(refused.status).toBe(403);
  expect(refused.body.code).toBe('E_FORBIDDEN');
  expect(refused.body.error).toMatch(/read this conversation but not write in it/);
  await expectNoViolations(page, 'admin reading a private conversation');
});

it('shows a shared conversation read-only to a member, who continues in a copy and chats there', async () => {
  // Alice shares it.
  const share = alicePage.getByTestId('share-toggle');
  await share.waitFor();
  await share.click();
  await until(async () => (await share.getAttribute('aria-pressed')) === 'true', 'shared');

  const page = pages.bob!;
  await page.goto(`/?p=garden&c=${conversationId}`);
  const line = page.getByTestId('read-only-line');
  await line.waitFor();
  expect(await line.textContent()).toContain('Shared by Alice · read-only');
  await page.getByTestId('message-user').filter({ hasText: 'Draft the garden PRD' }).waitFor();
  expect(await page.getByTestId('message-author').first().textContent()).toBe('Alice said:');
  expect(await page.getByTestId('composer-input').count()).toBe(0);
  expect(await page.getByTestId('edit-message').count()).toBe(0);
  expect(await page.getByTestId('regenerate').count()).toBe(0);
  expect(await page.getByTestId('share-toggle').count()).toBe(0);
  // The list names whose it is, and offers no Rename or Delete on it.
  const item = page.locator(`[data-testid="conversation-item"][data-conversation-id="${conversationId}"]`);
  await item.waitFor();
  expect(await item.getByTestId('conversation-owner').textContent()).toContain('Alice’s');
  expect(await item.getByTestId('rename-conversation').count()).toBe(0);
  expect(await item.getByTestId('delete-conversation').count()).toBe(0);
  await screenshot(page, 'sharing-read-only.png');
  await expectNoViolations(page, 'a shared conversation, read-only');

  await page.getByTestId('continue-in-copy').click();
  await page.waitForURL((u) => !!u.searchParams.get('c') && u.searchParams.get('c') !== conversationId);
  const copyId = new URL(page.url()).searchParams.get('c')!;
  await page.getByTestId('composer-input').waitFor();
  expect(await page.getByTestId('read-only-line').count()).toBe(0);
  await page.getByTestId('message-user').filter({ hasText: 'Draft the garden PRD' }).waitFor();
  model.setScript([reply.text('Pricing section added for Bob.')]);
  await sendMessage(page, 'Add a pricing section');
  await page.getByTestId('message-assistant').filter({ hasText: 'Pricing section added' }).waitFor();
  await waitIdle(page);
  const labels = await page.getByTestId('message-author').allTextContents();
  expect(labels).toEqual(['Alice said:', 'You said:']);
  await expectNoViolations(page, "one's own copy");

  // Stored: the copy is Bob's, his message names him; Alice's conversation did not move.
  const copy = (await api('bob', 'GET', `/api/conversations/${copyId}`)).body as { data: { canWrite: boolean; messages: Array<{ role: string; author?: { name: string } }> } };
  expect(copy.data.canWrite).toBe(true);
  expect(copy.data.messages.filter((m) => m.role === 'user').map((m) => m.author?.name)).toEqual(['Alice', 'Bob']);
  const original = (await api('alice', 'GET', `/api/conversations/${conversationId}`)).body as { data: { messages: unknown[] } };
  expect(original.data.messages).toHaveLength(2);
  expect((await api('alice', 'GET', `/api/conversations/${copyId}`)).status).toBe(404);
});

it('works read-only on a phone: the line and the button fit at 375 px', async () => {
  const page = await newPage(375);
  await page.context().addCookies(await pages.bob!.context().cookies());
  await page.goto(`/?p=garden&c=${conversationId}`);
  const button = page.getByTestId('continue-in-copy');
  await button.waitFor();
  const box = (await button.boundingBox())!;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(375);
  expect(box.height).toBeGreaterThanOrEqual(44);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
});

/**
 * The BMAD journey in a real browser (Debian's chromium through playwright-core) against the
 * production build, on a real 6.12.0 install: the project screen with its phases and next steps,
 * "What next?", switching agent, editing and saving a document, and the New project dialog's
 * installer steps; axe-clean at desktop and 375 px, 44 px targets.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { launchBrowser, smallTapTargets, until, useTabs, waitForText, waitIdle, expectNoViolations } from './browser-helpers';

jest.setTimeout(120_000);

const PHONE = { width: 375, height: 800 };
const BRIEF = '_bmad-output/planning-artifacts/briefs/brief-plants-2026-11-25/brief.md';

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let projectsRoot: string;

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('journey-ui');
  projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  const project = await bmadProject('6.12.0', { parent: projectsRoot, name: 'plants' });
  // The analyst's brief, where 6.12's brief skill writes it.
  await fs.mkdir(path.dirname(path.join(project, BRIEF)), { recursive: true });
  await fs.writeFile(path.join(project, BRIEF), '---\nstatus: final\n---\n# Plants brief\n\nPlants, delivered weekly.\n');
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

const newTab = useTabs(() => browser, () => app.url, 'journey');

async function projectScreen(page: Page) {
  await page.goto('/?p=plants');
  await page.getByTestId('journey-next-button').first().waitFor();
}

/** Controls under 44 px inside what this feature added (the whole page is checked at 375 px). */
async function smallTargetsIn(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((selector) => {
    const out: string[] = [];
    for (const root of document.querySelectorAll(selector)) {
      for (const el of root.querySelectorAll<HTMLElement>('button, a[href], input:not([type="hidden"]), select, textarea, summary')) {
        const r = el.getBoundingClientRect();
        if ((el as HTMLButtonElement).disabled || r.width === 0 || r.height === 0) continue;
        if (r.width < 43.5 || r.height < 43.5) out.push(`${el.tagName.toLowerCase()} “${(el.textContent ?? '').trim().slice(0, 30)}” ${Math.round(r.width)}×${Math.round(r.height)}`);
      }
    }
    return out;
  }, selector);
}

const sentMessages = (i: number) => JSON.stringify(model.chatRequests()[i]?.body?.messages ?? []);

it('the project screen: phases with their documents and next steps that start the right agent on its command', async () => {
  const { page } = await newTab();
  model.reset();
  model.setScript(() => reply.text('Let us write the PRD. What problem does it solve?'));
  await projectScreen(page);
  const phases = page.getByTestId('journey-phase');
  expect(await phases.evaluateAll((els) => els.map((e) => [e.getAttribute('data-phase'), e.getAttribute('data-status')]))).toEqual([
    ['2-planning', 'not-started'],
    ['plan', 'started'],
    ['ship', 'not-started'],
    ['anytime', 'not-started'],
  ]);
  await page.locator('[data-testid="journey-document"][data-path="planning-artifacts/briefs/brief-plants-2026-11-25/brief.md"]').waitFor();
  const next = page.getByTestId('journey-next-button').first();
  expect([await next.getAttribute('data-agent'), await next.getAttribute('data-command')]).toEqual(['bmad-agent-pm', '*PRD']);
  expect(await smallTargetsIn(page, '[data-testid="project-journey"]')).toEqual([]);
  await expectNoViolations(page, 'project screen');

  await next.click();
  await page.waitForURL((u) => u.searchParams.get('agent') === 'bmad-agent-pm' || u.searchParams.has('c'));
  await waitForText(page.getByTestId('message-assistant').last(), 'What problem does it solve?');
  await page.waitForURL((u) => u.searchParams.has('c'));
  // The server started the PRD skill before the model spoke.
  expect(sentMessages(0)).toContain('skill:bmad-prd');
  expect(await page.getByTestId('message-user').first().textContent()).toContain('*PRD');
});

it('What next? runs the help with the journey, and Switch agent starts a new conversation with another agent', async () => {
  const { page } = await newTab();
  model.reset();
  model.setScript(() => reply.text('You have a brief; the PRD comes next, with John (*PRD).'));
  await page.goto('/?p=plants&agent=bmad-agent-analyst');
  const whatNext = page.getByTestId('what-next');
  await whatNext.waitFor();
  await until(() => whatNext.isEnabled(), 'What next? enabled');
  await whatNext.click();
  await waitForText(page.getByTestId('message-assistant').last(), 'the PRD comes next');
  await waitIdle(page);
  expect(sentMessages(0)).toContain('skill:bmad-help');
  expect(sentMessages(0)).toContain('Where this project stands');
  const conversation = new URL(page.url()).searchParams.get('c');
  expect(conversation).toBeTruthy();
  await expectNoViolations(page, 'conversation header');

  await page.getByTestId('switch-agent').click();
  const items = page.getByTestId('switch-agent-item');
  await items.first().waitFor();
  expect(await items.evaluateAll((els) => els.map((e) => e.getAttribute('data-agent-id')))).not.toContain('bmad-agent-analyst');
  expect(await smallTargetsIn(page, '[data-testid="conversation-header"]')).toEqual([]);
  await expectNoViolations(page, 'switch agent menu');
  await page.locator('[data-testid="switch-agent-item"][data-agent-id="bmad-agent-architect"]').click();
  await page.waitForURL((u) => u.searchParams.get('agent') === 'bmad-agent-architect' && u.searchParams.get('p') === 'plants');
  await page.getByTestId('composer-input').waitFor();
  expect(new URL(page.url()).searchParams.get('c')).toBeNull();
});

it('edits a document in the panel (source and preview) and saves it; a change made meanwhile is not overwritten', async () => {
  const { page } = await newTab();
  await projectScreen(page);
  await page.getByTestId('journey-document').first().click();
  const panel = page.getByTestId('document-panel');
  await waitForText(panel, 'Plants, delivered weekly.');
  await panel.getByTestId('document-edit').click();
  const source = panel.getByTestId('document-source');
  await until(async () => (await source.inputValue()).includes('Plants, delivered weekly.'), 'source loaded');
  await source.fill('---\nstatus: final\n---\n# Plants brief\n\nPlants, delivered weekly, in recycled pots.\n');
  await panel.getByTestId('document-preview-tab').click();
  await waitForText(panel.getByTestId('document-preview'), 'in recycled pots');
  await expectNoViolations(page, 'document editor');
  await panel.getByTestId('document-save').click();
  await waitForText(panel.getByTestId('document-content'), 'in recycled pots');
  const file = path.join(projectsRoot, 'plants', BRIEF);
  expect(await fs.readFile(file, 'utf8')).toContain('in recycled pots');

  // Someone else changes it while it is open for editing: the save is refused, their version can be loaded.
  await panel.getByTestId('document-edit').click();
  await until(async () => (await source.inputValue()).includes('in recycled pots'), 'source loaded again');
  await fs.writeFile(file, '---\nstatus: final\n---\n# Plants brief\n\nChanged by hand meanwhile.\n');
  await source.fill('# My version\n');
  await panel.getByTestId('document-save').click();
  await panel.getByTestId('document-conflict').waitFor();
  expect(await fs.readFile(file, 'utf8')).toContain('Changed by hand meanwhile.');
  await expectNoViolations(page, 'document conflict');
  await panel.getByRole('button', { name: 'Load their version' }).click();
  await until(async () => (await source.inputValue()).includes('Changed by hand meanwhile.'), 'their version loaded');
});

it('at 375 px: the project screen, the conversation header and the document editor', async () => {
  const { page } = await newTab(PHONE);
  await projectScreen(page);
  expect(await smallTapTargets(page)).toEqual([]);
  await expectNoViolations(page, 'phone project screen');
  await page.getByTestId('journey-document').first().click();
  const panel = page.getByTestId('document-panel');
  await panel.getByTestId('document-edit').click();
  await panel.getByTestId('document-source').waitFor();
  expect(await smallTapTargets(page)).toEqual([]);
  await expectNoViolations(page, 'phone document editor');
  await page.keyboard.press('Escape');

  await page.goto('/?p=plants&agent=bmad-agent-pm');
  await page.getByTestId('what-next').waitFor();
  expect(await smallTapTargets(page)).toEqual([]);
  await expectNoViolations(page, 'phone conversation');
});

it("the New project dialog offers the release and the tools, and shows the installer's steps as they happen", async () => {
  const { page } = await newTab();
  await page.goto('/');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  const version = dialog.getByRole('combobox', { name: 'BMAD version' });
  await until(async () => (await version.locator('option').count()) === 2, 'both releases listed');
  expect(await version.inputValue()).toBe('6.12.0');
  expect(await dialog.getByRole('checkbox', { name: 'Claude Code' }).isChecked()).toBe(true);
  await dialog.getByRole('checkbox', { name: 'Cursor' }).check();
  expect(await smallTargetsIn(page, '[data-testid="new-project-dialog"]')).toEqual([]);
  await expectNoViolations(page, 'new project dialog');

  await dialog.getByRole('textbox', { name: 'Project name' }).fill('orchard');
  await dialog.getByRole('textbox', { name: 'Your name (optional)' }).fill('Ada');
  await dialog.getByRole('button', { name: 'Create project' }).click();
  const steps = dialog.getByTestId('install-steps');
  await steps.waitFor();
  expect(await steps.locator('li').first().textContent()).toBe('Installing BMAD 6.12.0 (bmm; claude-code, cursor) into orchard');
  await page.waitForURL((u) => u.searchParams.get('p') === 'orchard', { timeout: 60_000 });
  await page.locator('[data-testid="agent-card"][data-agent-id="bmad-agent-pm"]').waitFor();
  await page.getByTestId('project-journey').waitFor();
  await expect(fs.stat(path.join(projectsRoot, 'orchard', '.claude', 'skills', 'bmad-help', 'SKILL.md'))).resolves.toBeTruthy();
  // Cursor reads the shared `.agents/skills/` (6.12's platform-codes.yaml).
  await expect(fs.stat(path.join(projectsRoot, 'orchard', '.agents', 'skills', 'bmad-help', 'SKILL.md'))).resolves.toBeTruthy();
});

it('the New project dialog at 375 px', async () => {
  const { page } = await newTab(PHONE);
  await page.goto('/');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await until(async () => (await dialog.getByRole('combobox', { name: 'BMAD version' }).locator('option').count()) === 2, 'both releases listed');
  await dialog.getByText(/^More tools/).click();
  expect(await smallTapTargets(page)).toEqual([]);
  await expectNoViolations(page, 'phone new project dialog');
});

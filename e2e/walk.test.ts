/**
 * The defects a new user met walking through the app, in a real browser (Debian's chromium through
 * playwright-core) against the production build: projects told apart by their folder, the doctor's
 * lines as the CLI prints them and a broken menu item marked before it is picked, titles that tell
 * workflow runs apart, cost after a reload with the conversation's and the project's totals, a
 * restore credited to the person who made it, "No differences" between identical versions, the
 * stored text of a stopped answer equal to the screen, and the sidebar's row actions at 375 px.
 * Each screen touched is checked with axe-core, light and dark, on a desktop and at 375 px.
 *
 * Run: npx jest -c jest.e2e.config.ts e2e/walk   (E2E_SKIP_BUILD=1 reuses an existing build).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { REPO, makeFolders, startApp, type AppServer, type Folders } from './support';
import { launchBrowser, sendMessage, sleep, until, useTabs, waitForText, waitIdle, expectNoViolations } from './browser-helpers';

jest.setTimeout(120_000);

const PHONE = { width: 375, height: 800 };
const DESKTOP = { width: 1280, height: 860 };

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let projectsRoot: string;

/** Two copies of one install: BMAD's project_name is the same in both, the folders differ. */
async function copyOfInstall(name: string): Promise<string> {
  const dir = await bmadProject('6.12.0', { parent: projectsRoot, name });
  for (const file of ['_bmad/config.toml', '_bmad/bmm/config.yaml', '_bmad/core/config.yaml']) {
    const at = path.join(dir, file);
    const text = await fs.readFile(at, 'utf8').catch(() => null);
    if (text !== null) await fs.writeFile(at, text.replace(/^project_name(\s*[:=]\s*)"?project"?$/m, (_, sep: string) => `project_name${sep}${sep.includes('=') ? '"v612"' : 'v612'}`));
  }
  return dir;
}

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('walk');
  projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  await copyOfInstall('shop');
  const broken = await copyOfInstall('shop2');
  // shop2 lost a skill its PM's menu runs: the doctor reports it, the menu marks it.
  await fs.rm(path.join(broken, '.claude/skills/bmad-prd'), { recursive: true });
  const models = path.join(folders.root, 'models.yaml');
  await fs.writeFile(
    models,
    [
      'default: paid',
      'profiles:',
      `  paid: { baseURL: ${model.url}, model: e2e-model, contextWindow: 131072, maxOutputTokens: 4096, price: { input: 200, output: 800 } }`,
      `  slow: { baseURL: ${model.url}, model: "scripted:slow", contextWindow: 131072, maxOutputTokens: 4096, price: { input: 200, output: 800 } }`,
      '',
    ].join('\n'),
  );
  app = await startApp(folders, { MODELS_FILE: models, PROJECTS_ROOT: projectsRoot });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});

beforeEach(() => {
  model.reset();
  model.setScript([]);
});

const newTab = useTabs(() => browser, () => app.url, 'walk');

async function apiGet<T>(url: string): Promise<T> {
  const res = await fetch(`${app.url}${url}`);
  const body = (await res.json()) as { success: boolean; data: T };
  if (!body.success) throw new Error(`${url}: ${JSON.stringify(body)}`);
  return body.data;
}

const conversationIdOf = (page: Page) => new URL(page.url()).searchParams.get('c');
const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

async function openProject(page: Page, id: string) {
  await page.goto(`/?p=${id}`);
  await page.locator('[data-testid="agent-card"]').first().waitFor();
  // The project's checks and journey arrive after the cards; the screen is settled once they have.
  await until(
    async () => (await page.locator('[data-testid="project-journey"] .msg-pending').count()) === 0 && (await page.getByText('Checking the project…').count()) === 0,
    'the project screen settled',
  );
}

async function startWith(page: Page, projectId: string, agentId: string) {
  await openProject(page, projectId);
  await page.locator(`[data-testid="agent-card"][data-agent-id="${agentId}"]`).click();
  await page.waitForURL((u) => u.searchParams.get('agent') === agentId);
  await until(() => page.getByTestId('composer-input').isEnabled(), 'composer enabled');
}

/** The sidebar (opened first on a phone, where it is a drawer). */
async function sidebar(page: Page) {
  const toggle = page.getByTestId('sidebar-toggle');
  if (await toggle.isVisible()) {
    await toggle.click();
    await sleep(300);
  }
  return page.getByRole('navigation', { name: 'Conversations' });
}

describe('projects named by their folder', () => {
  it('tells two copies of one install apart everywhere a project is named', async () => {
    const listed = await apiGet<Array<{ id: string; name: string }>>('/api/projects');
    expect(listed.map((p) => [p.id, p.name])).toEqual([
      ['shop', 'v612'],
      ['shop2', 'v612'],
    ]);
    for (const viewport of [DESKTOP, PHONE]) {
      const { page } = await newTab(viewport);
      await page.goto('/');
      const select = page.getByRole('combobox', { name: 'Project' });
      const projectOptions = async () => (await select.locator('option').evaluateAll((els) => els.map((el) => (el.textContent ?? '').trim()))).filter((o) => o.startsWith('shop'));
      const options = await until(async () => ((await projectOptions()).length === 2 ? projectOptions() : null), 'the projects listed');
      expect(options).toEqual(['shop (v612) — BMAD 6.12.0, 5 agents', 'shop2 (v612) — BMAD 6.12.0, 5 agents']);
      await select.selectOption('shop2');
      await page.waitForURL((u) => u.searchParams.get('p') === 'shop2');
      await waitForText(page.getByTestId('topbar-project'), 'shop2 (v612)');
      await page.getByTestId('project-problems').waitFor();
      await expectNoViolations(page, `project picker ${viewport.width}px`);
      const nav = await sidebar(page);
      await waitForText(nav.getByRole('heading', { name: /^Conversations/ }), 'shop2 (v612)');
    }
  });
});

describe('the doctor', () => {
  it('shows the lines and the count `npm run doctor` prints, and marks the broken menu item before it is clicked', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(REPO, 'node_modules/tsx/dist/cli.mjs'), path.join(REPO, 'scripts/doctor.ts'), path.join(projectsRoot, 'shop2')], {
      cwd: REPO,
      env: { ...process.env, INIT_CWD: REPO },
    }).catch((e: { stdout: string }) => ({ stdout: e.stdout }));
    const printed = stdout.split('\n').filter(Boolean);
    const summary = printed.pop()!;
    expect(summary).toMatch(/^1 error, 1 warning in the project/);

    const { page } = await newTab();
    await openProject(page, 'shop2');
    const problems = page.getByTestId('project-problems');
    await problems.locator('summary').click();
    expect(await page.getByTestId('doctor-summary').innerText()).toBe('1 error, 1 warning');
    expect(summary.startsWith(await page.getByTestId('doctor-summary').innerText())).toBe(true);
    const shown = await page.getByTestId('doctor-line').evaluateAll((els) => els.map((el) => el.getAttribute('data-line')));
    expect(shown).toEqual(printed);
    await expectNoViolations(page, 'doctor lines');

    // The PM's PRD item runs the skill that is gone: marked on the menu before anyone picks it.
    await page.locator('[data-testid="agent-card"][data-agent-id="bmad-agent-pm"]').click();
    await page.waitForURL((u) => u.searchParams.get('agent') === 'bmad-agent-pm');
    const cards = page.getByTestId('command-card');
    await cards.first().waitFor();
    const prd = cards.filter({ hasText: '*PRD' });
    expect(await prd.getAttribute('data-broken')).toBe('true');
    await waitForText(prd, 'cannot run');
    expect(await prd.innerText()).toContain('The skill bmad-prd is not installed');
    expect(await cards.filter({ hasText: '*CE' }).getAttribute('data-broken')).toBeNull();
    await expectNoViolations(page, 'broken menu item');

    const before = model.chatRequests().length;
    await prd.click();
    const notice = page.getByTestId('broken-command');
    await waitForText(notice, 'cannot run');
    expect(await notice.innerText()).toContain('Run BMAD');
    expect(await notice.innerText()).not.toContain('ENOENT');
    // Explained, not run: no message was sent and no conversation was made.
    expect(model.chatRequests().length).toBe(before);
    expect(conversationIdOf(page)).toBeNull();
    expect(await page.getByTestId('message-user').count()).toBe(0);
    await expectNoViolations(page, 'broken command explained');

    // Typed by hand, the same, with what the user wanted to write about too.
    await sendMessage(page, '*prd plant shop');
    await waitForText(notice, 'bmad-prd');
    expect(model.chatRequests().length).toBe(before);

    // At 375 px: the mark and the explanation, each screen clean.
    const phone = (await newTab(PHONE)).page;
    await phone.goto(page.url());
    const phoneCard = phone.getByTestId('command-card').filter({ hasText: '*PRD' });
    await waitForText(phoneCard, 'cannot run');
    await expectNoViolations(phone, 'broken menu item at 375 px');
    await phoneCard.click();
    await waitForText(phone.getByTestId('broken-command'), 'cannot run');
    await expectNoViolations(phone, 'broken command explained at 375 px');
  });
});

describe('titles and cost', () => {
  it('names each run by its workflow and what it is about, and keeps costs and totals after a reload', async () => {
    model.setScript(() => reply.text('Let us start on the PRD.'));
    const { page } = await newTab();
    const ids: string[] = [];
    for (const subject of ['plant shop', 'bike rental']) {
      await startWith(page, 'shop', 'bmad-agent-pm');
      await sendMessage(page, `*PRD ${subject}`);
      await waitForText(page.getByTestId('message-assistant').last(), 'Let us start on the PRD.');
      await waitIdle(page);
      ids.push((await until(() => conversationIdOf(page), 'URL with ?c=<id>')) as string);
    }
    for (const [i, subject] of ['plant shop', 'bike rental'].entries()) {
      const item = page.locator(`[data-testid="conversation-item"][data-conversation-id="${ids[i]}"]`);
      await waitForText(item.locator('.conv-title'), `PRD · ${subject}`);
    }
    expect((await apiGet<{ title: string }>(`/api/conversations/${ids[0]}`)).title).toBe('PRD · plant shop');

    // The answer's cost, the conversation's and the project's: the same after a reload.
    const shownCost = async () => (await page.getByTestId('answer-cost').last().innerText()).replace(/^\W*cost\s*/, '');
    await page.getByTestId('answer-cost').last().waitFor();
    const live = await shownCost();
    const liveTotal = await page.getByTestId('conversation-cost').innerText();
    await page.reload();
    await page.getByTestId('answer-cost').last().waitFor();
    expect(await shownCost()).toBe(live);
    expect(await page.getByTestId('conversation-cost').innerText()).toBe(liveTotal);
    const detail = await apiGet<{ usage: { cost?: number } }>(`/api/conversations/${ids[1]}`);
    expect(detail.usage.cost).toBeGreaterThan(0);
    expect(liveTotal).toContain(formatCost(detail.usage.cost!));

    const project = await apiGet<{ usage: { cost?: number } }>('/api/projects/shop');
    const both = (await apiGet<{ usage: { cost?: number } }>(`/api/conversations/${ids[0]}`)).usage.cost! + detail.usage.cost!;
    expect(project.usage.cost).toBeCloseTo(both, 9);
    await waitForText(page.getByTestId('project-cost'), formatCost(project.usage.cost!));
    await expectNoViolations(page, 'costs after reload');

    const phone = (await newTab(PHONE)).page;
    await phone.goto(page.url());
    await phone.getByTestId('conversation-cost').waitFor();
    await waitForText(phone.getByTestId('project-cost'), formatCost(project.usage.cost!));
    await expectNoViolations(phone, 'costs at 375 px');
  });
});

/** The UI's rounding of a cost (app/_lib/format.ts). */
function formatCost(cost: number): string {
  if (cost === 0) return '0';
  if (cost < 0.01) return cost.toPrecision(2).replace(/0+$/, '');
  return cost.toFixed(2);
}

describe('document history', () => {
  it('credits a restore to the person, links only conversations that exist, and says "No differences" for identical versions', async () => {
    const save = (text: string) => [reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{output_folder}/notes.md', content: text } }]), reply.text('Saved.')];
    const { page } = await newTab();
    model.setScript(save('# Notes\n\nFirst draft.\n'));
    await startWith(page, 'shop', 'bmad-agent-analyst');
    await sendMessage(page, 'Write the first notes.');
    await waitForText(page.getByTestId('message-assistant').last(), 'Saved.');
    await waitIdle(page);
    const first = (await until(() => conversationIdOf(page), 'first conversation')) as string;

    model.setScript(save('# Notes\n\nSecond draft.\n'));
    await startWith(page, 'shop', 'bmad-agent-analyst');
    await sendMessage(page, 'Write the second notes.');
    await waitForText(page.getByTestId('message-assistant').last(), 'Saved.');
    await waitIdle(page);
    await until(() => conversationIdOf(page), 'second conversation');
    // The first conversation goes: the version it wrote must not link to it.
    expect((await fetch(`${app.url}/api/conversations/${first}`, { method: 'DELETE' })).status).toBe(200);

    const toggle = page.getByTestId('outputs-toggle');
    if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
    await page.locator('[data-testid="output-file"][data-path="notes.md"]').click();
    const viewer = page.getByTestId('document-panel');
    await viewer.getByRole('tab', { name: 'History' }).click();
    const items = viewer.getByTestId('version-item');
    await until(async () => (await items.count()) === 2, 'two versions');
    expect(await items.nth(0).innerText()).toContain('in this conversation');
    expect(await items.nth(1).innerText()).not.toContain('another conversation');
    expect(await items.nth(1).getByRole('link').count()).toBe(0);

    await viewer.getByRole('button', { name: 'Restore version 1' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Restore' }).click();
    await until(async () => (await items.count()) === 3, 'the restore listed');
    const restored = items.nth(0);
    await waitForText(restored, 'restored by local');
    expect(await restored.getByRole('link').count()).toBe(0);
    await expectNoViolations(page, 'history after a restore');

    // Version 1 is the current content again: nothing differs.
    await viewer.getByRole('button', { name: 'Diff version 1 against the current file' }).click();
    await waitForText(viewer.getByTestId('no-differences'), 'No differences');
    expect(await viewer.getByTestId('version-diff').count()).toBe(0);
    await expectNoViolations(page, 'identical diff');
    await viewer.getByRole('button', { name: '← All versions' }).click();
    await viewer.getByRole('button', { name: 'Diff version 2 against the current file' }).click();
    await waitForText(viewer.getByTestId('version-diff'), '-Second draft.');

    // The same at 375 px.
    const phone = (await newTab(PHONE)).page;
    await phone.goto(page.url());
    await phone.getByTestId('outputs-toggle').click();
    await phone.locator('[data-testid="output-file"][data-path="notes.md"]').click();
    await phone.getByTestId('document-panel').getByRole('tab', { name: 'History' }).click();
    await waitForText(phone.getByTestId('version-item').first(), 'restored by local');
    await expectNoViolations(phone, 'history at 375 px');
  });
});

describe('stop', () => {
  it('keeps in the history exactly the words the screen shows, before and after a reload', async () => {
    model.setScript(undefined); // the scenarios answer: the `slow` profile's model is scripted:slow
    const { page } = await newTab();
    await startWith(page, 'shop', 'bmad-agent-analyst');
    await page.getByTestId('model-select').selectOption('slow');
    await sendMessage(page, 'Tell me a long story.');
    const answer = page.getByTestId('message-assistant').last();
    await waitForText(answer, 'token by token');
    await sleep(400);
    await page.getByTestId('stop-button').click();
    await page.getByTestId('stopped-notice').waitFor();
    const id = (await until(() => conversationIdOf(page), 'URL with ?c=<id>')) as string;

    const screenText = async () => squash((await page.getByTestId('message-assistant').last().locator('.markdown').allInnerTexts()).join(' '));
    const storedText = async () => {
      const d = await apiGet<{ status: string; messages: Array<{ role: string; content: string }> }>(`/api/conversations/${id}`);
      return d.status === 'running' ? null : squash(d.messages.filter((m) => m.role === 'assistant').at(-1)?.content ?? '');
    };
    // The screen settles on the stored answer once the server has ended the turn.
    await until(async () => {
      const stored = await storedText();
      return stored !== null && stored === (await screenText());
    }, 'the screen to show the stored answer', 10_000);
    const stored = (await storedText())!;
    // Cut short: some words, far from the whole answer (three times a 48-word paragraph).
    expect(stored.split(' ').length).toBeGreaterThan(10);
    expect(stored.split(' ').length).toBeLessThan(120);
    await sleep(500);
    expect(await screenText()).toBe(stored);

    await page.reload();
    await page.getByTestId('stopped-notice').waitFor();
    await until(async () => (await screenText()) === stored, 'the reloaded screen to show the stored answer');
  });
});

describe('sidebar row actions at 375 px', () => {
  it('gives Rename and Delete each a whole 44×44 target, covered by nothing, reachable by touch, keyboard and pointer', async () => {
    const context = await browser.newContext({ baseURL: app.url, viewport: PHONE, hasTouch: true, isMobile: true, reducedMotion: 'reduce' });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    try {
      await openProject(page, 'shop');
      const nav = await sidebar(page);
      const rows = nav.getByTestId('conversation-item');
      await until(async () => (await rows.count()) >= 2, 'conversations listed');
      await expectNoViolations(page, 'sidebar at 375 px');

      const boxes = await page.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>('[data-testid="rename-conversation"], [data-testid="delete-conversation"]')].map((el) => {
          const r = el.getBoundingClientRect();
          const describe = (at: Element | null) => (at ? `${at.tagName.toLowerCase()}.${String(at.getAttribute('class') ?? '').replace(/\s+/g, '.')}[${at.getAttribute('aria-label') ?? ''}]` : 'nothing');
          const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
          // Each edge's middle too, half a pixel inside (corners are rounded off, so a click there
          // falls through by design): no neighbour lies over any side of the target. Two buttons
          // sharing an edge fail here, as Rename and Delete did: its right edge was Delete's.
          const corners = [
            [r.left + 0.5, r.top + r.height / 2],
            [r.right - 0.5, r.top + r.height / 2],
            [r.left + r.width / 2, r.top + 0.5],
            [r.left + r.width / 2, r.bottom - 0.5],
          ].map(([x, y]) => {
            const at = document.elementFromPoint(x, y);
            return !!at && (at === el || el.contains(at)) ? true : describe(at);
          });
          return { label: el.getAttribute('aria-label'), width: r.width, height: r.height, centreHitsIt: !!hit && (hit === el || el.contains(hit)), corners };
        }),
      );
      expect(boxes.length).toBeGreaterThanOrEqual(4);
      for (const b of boxes) {
        expect({ label: b.label, big: b.width >= 44 && b.height >= 44 }).toEqual({ label: b.label, big: true });
        expect({ label: b.label, centre: b.centreHitsIt, corners: b.corners }).toEqual({ label: b.label, centre: true, corners: [true, true, true, true] });
      }

      // Touch: a tap on Rename opens the title for editing; Escape leaves it as it was.
      const row = rows.first();
      const rename = row.getByTestId('rename-conversation');
      const box = (await rename.boundingBox())!;
      await page.touchscreen.tap(box.x + box.width / 2, box.y + box.height / 2);
      await row.getByTestId('rename-input').waitFor();
      await page.keyboard.press('Escape');
      await rename.waitFor();

      // Keyboard: Tab from the row's title reaches Rename, then Delete; Enter on Delete asks first.
      await row.locator('.conv-open').focus();
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('rename-conversation');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('delete-conversation');
      await page.keyboard.press('Enter');
      const confirm = page.getByRole('alertdialog', { name: 'Delete conversation?' });
      await confirm.waitFor();
      await page.keyboard.press('Escape');
      await confirm.waitFor({ state: 'detached' });

      // Pointer: a click on Delete asks too.
      await row.getByTestId('delete-conversation').click();
      await confirm.waitFor();
      await confirm.getByRole('button', { name: 'Cancel' }).click();
    } finally {
      await page.screenshot({ path: path.join(__dirname, 'artifacts', 'walk-row-actions-375.png') }).catch(() => undefined);
      await context.close();
    }
    expect(errors).toEqual([]);
  });
});

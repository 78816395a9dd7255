/**
 * The sprint autopilot in a real browser against the production build: a real open-source project
 * (minimist, from the npm registry) with BMAD 6.12 installed by its own installer, in a real git
 * repository, with a sprint of two stories in two epics; build enabled and the scripted model doing
 * what `bmad-build-auto` and `bmad-code-review` do (the build writes the story's spec, the review
 * its verdict). The owner turns the autopilot on from the board's panel and sets how many stories
 * it runs at once; the cards move through building, review, the test gate and the merge while the
 * page stays where it is (the project's event stream, no reload); the second story's build leaves a
 * file the project's test line refuses, so its gate is red and a decision waits on the panel; the
 * owner merges it anyway from the decision's button and the card lands in done.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { reply, startScriptedModel, type ChatMessage, type ChatRequestBody, type Reply, type ScriptedModel } from '../test/scripted-model';
import { openSourceRepo, type OpenSourceRepo } from '../test/open-source-repo';
import { sh } from '../test/git-repo';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, smallTapTargets, until, waitForText, type Tab } from './browser-helpers';

jest.setTimeout(240_000);

const ARTIFACTS = '_bmad-output/implementation-artifacts';
const STATUS_PATH = `${ARTIFACTS}/sprint-status.yaml`;
const SPRINT = `development_status:
  epic-1: in-progress
  1-1-alpha: ready-for-dev
  epic-1-retrospective: optional
  epic-2: in-progress
  2-1-beta: ready-for-dev
  epic-2-retrospective: optional
`;
/** 2-1-beta's build leaves a file in `flags/`; the project's tests refuse any. The sleep keeps the gate's step on screen long enough to be seen. */
const TEST_LINE = 'sleep 2; if [ -d flags ]; then echo "refused: $(ls flags)"; exit 1; fi; echo "no flags"';

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let repo: OpenSourceRepo;
let app: AppServer;
let tab: Tab | null = null;
let id: string;

function gate(): { wait: () => Promise<void>; open: () => void; reached: boolean } {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  const g = {
    reached: false,
    wait: () => {
      g.reached = true;
      return p;
    },
    open: () => open(),
  };
  return g;
}
/** 1-1-alpha's build and review wait until the browser has shown the step they are in. */
const alphaBuild = gate();
const alphaReview = gate();

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

/** Which story a conversation is about, and whether it is the build or the review (the server starts a skill with its SKILL.md). */
function taskOf(body: ChatRequestBody): { key: string; kind: 'build' | 'review' } | null {
  const first = (body.messages ?? []).find((m: ChatMessage) => m.role === 'user' && /Story: \d+-\d+-/.test(textOf(m.content)));
  if (!first) return null;
  const review = (body.messages ?? []).some((m) => m.role !== 'system' && textOf(m.content).includes('bmad-code-review'));
  return { key: /Story: (\d+-\d+-[a-z0-9-]+)/.exec(textOf(first.content))![1]!, kind: review ? 'review' : 'build' };
}

const madeCalls = (body: ChatRequestBody) => (body.messages ?? []).flatMap((m) => (m.tool_calls ?? []).map((c) => c.function?.name ?? ''));
const specOf = (key: string) => `{project-root}/${ARTIFACTS}/spec-${key.split('-').slice(0, 2).join('-')}-${key.split('-').slice(2).join('-')}.md`;

function skills() {
  return async ({ body }: { body: ChatRequestBody }): Promise<Reply> => {
    const task = taskOf(body);
    if (!task) return reply.text('HALT: no story in the first message');
    const { key, kind } = task;
    const made = madeCalls(body);
    if (made.includes('save_output')) return reply.text(kind === 'build' ? `Story ${key} is built.` : `Story ${key} is reviewed.`);
    if (kind === 'review' && !made.includes('read_file')) return reply.toolCalls([{ name: 'read_file', arguments: { file_path: specOf(key) } }]);
    if (kind === 'build') {
      if (key === '1-1-alpha') await alphaBuild.wait();
      const spec = `---\ntitle: ${key}\nstatus: done\n---\n\n# ${key}\n\nBuilt.\n\n## Auto Run Result\n\nStatus: done\nBlocking condition: none\n`;
      const calls = [{ name: 'save_output', arguments: { file_path: specOf(key), content: spec } }];
      if (key === '2-1-beta') calls.push({ name: 'run_command', arguments: { command: `mkdir -p flags && echo ${key} > flags/${key}.txt` } } as never);
      return reply.toolCalls(calls);
    }
    if (key === '1-1-alpha') await alphaReview.wait();
    const spec = `---\ntitle: ${key}\nstatus: done\n---\n\n# ${key}\n\n### Review Findings\n\n- No findings.\n`;
    return reply.toolCalls([{ name: 'save_output', arguments: { file_path: specOf(key), content: spec } }]);
  };
}

beforeAll(async () => {
  browser = await launchBrowser();
  folders = await makeFolders('autopilot-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  repo = await openSourceRepo({ parent: projectsRoot, name: 'minimist' });
  id = path.basename(repo.root);
  await fs.mkdir(path.join(repo.root, ARTIFACTS), { recursive: true });
  await fs.writeFile(path.join(repo.root, STATUS_PATH), SPRINT);
  for (const key of ['1-1-alpha', '2-1-beta']) {
    await fs.writeFile(path.join(repo.root, ARTIFACTS, `${key}.md`), `# Story ${key}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a CLI author, I want ${key}.\n`);
  }
  sh(repo.root, ['add', '-A']);
  sh(repo.root, ['commit', '-q', '-m', 'Sprint planning']);
  model = await startScriptedModel({ script: skills() });
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'scripted-build', PROJECTS_ROOT: projectsRoot, AUTOPILOT_TICK_MS: '300', RUNS_CONCURRENCY: '3' });
  // Build on, with the test line; the autopilot itself is left off for the browser to turn on.
  const build = await fetch(`${app.url}/api/projects/${id}/build`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ enabled: true, test: TEST_LINE }) });
  expect(build.status).toBe(200);
}, 240_000);
afterAll(async () => {
  alphaBuild.open();
  alphaReview.open();
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});
afterEach(async () => {
  if (!tab) return;
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').toLowerCase().slice(0, 80);
  await screenshot(tab.page, `autopilot-${name}.png`).catch(() => undefined);
  const errors = [...tab.pageErrors];
  await tab.close();
  tab = null;
  expect(errors).toEqual([]);
});

/** Every step each card has shown, in order, as the page changed it (a step shown once is kept even if the next read replaced it). */
async function recordSteps(page: Page) {
  await page.evaluate(() => {
    const w = window as unknown as { __steps: Record<string, string[]>; __marker: string };
    w.__marker = 'this page was never reloaded';
    w.__steps = {};
    const note = () => {
      for (const el of document.querySelectorAll<HTMLElement>('[data-testid="board-card"]')) {
        const key = el.dataset.key!;
        const step = el.dataset.step ?? '';
        const seen = (w.__steps[key] ??= []);
        if (step && seen[seen.length - 1] !== step) seen.push(step);
      }
    };
    note();
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-step'] });
  });
}
const stepsSeen = (page: Page) => page.evaluate(() => (window as unknown as { __steps: Record<string, string[]> }).__steps);

it('is turned on from the board, moves the cards through build, review, the test gate and the merge without a reload, and merges a red story from its decision', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  let navigations = 0;
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame()) navigations++;
  });
  await page.goto(`/?p=${id}`);
  const board = page.getByTestId('project-board');
  await board.waitFor();
  const panel = page.getByTestId('autopilot-panel');
  await panel.waitFor();
  await waitForText(page.getByTestId('board-source'), 'live');
  const card = (key: string) => board.locator(`[data-testid="board-card"][data-key="${key}"]`);
  const stepOf = (key: string) => card(key).getAttribute('data-step');
  const laneOf = (key: string) => card(key).evaluate((el) => el.closest('[data-testid="board-column"]')?.getAttribute('data-column'));
  await card('1-1-alpha').waitFor();
  expect(await laneOf('1-1-alpha')).toBe('ready-for-dev');
  expect(await laneOf('2-1-beta')).toBe('ready-for-dev');
  expect(await panel.getAttribute('data-enabled')).toBe('off');
  await recordSteps(page);
  const loadsBefore = navigations;

  // One story at a time: set from the panel before turning it on.
  await panel.getByTestId('autopilot-slots-edit').click();
  await panel.getByTestId('autopilot-slots').fill('0');
  await panel.getByTestId('autopilot-slots-save').click();
  await waitForText(panel.getByRole('alert'), 'whole number of 1 or more');
  await panel.getByTestId('autopilot-slots').fill('1');
  await panel.getByTestId('autopilot-slots-save').click();
  await waitForText(panel, 'At most 1 story at once.');
  await expectNoViolations(page, 'autopilot panel, off');

  await panel.getByTestId('autopilot-toggle').click();
  await until(async () => (await panel.getAttribute('data-enabled')) === 'on', 'the panel says on');
  await waitForText(page.getByTestId('autopilot-state'), 'of 1 slot in use');
  const settings = (await (await fetch(`${app.url}/api/projects/${id}/autopilot`)).json()) as { data: { enabled: boolean; maxParallel: number } };
  expect(settings.data).toMatchObject({ enabled: true, maxParallel: 1 });

  // 1-1-alpha: each step shows on its card while the model holds it there.
  await until(async () => (await stepOf('1-1-alpha')) === 'building', "1-1-alpha's card says building", 90_000, 100);
  await until(async () => (await laneOf('1-1-alpha')) === 'in-progress', '1-1-alpha in progress');
  await waitForText(card('1-1-alpha').getByTestId('board-card-step'), 'building');
  await waitForText(page.getByTestId('autopilot-state'), '1 of 1 slot in use');
  await until(() => alphaBuild.reached, "1-1-alpha's build reaches the model", 60_000);
  // One slot: the other story waits.
  expect(await stepOf('2-1-beta')).toBe('');
  alphaBuild.open();
  await until(async () => (await stepOf('1-1-alpha')) === 'reviewing', "1-1-alpha's card says in review", 90_000, 100);
  await waitForText(card('1-1-alpha').getByTestId('board-card-step'), 'in review round 1');
  await until(() => alphaReview.reached, "1-1-alpha's review reaches the model", 60_000);
  expect(await stepOf('2-1-beta')).toBe('');
  alphaReview.open();
  await until(async () => (await stepOf('1-1-alpha')) === 'merged', '1-1-alpha merged', 90_000, 100);
  await until(async () => (await laneOf('1-1-alpha')) === 'done', '1-1-alpha in done');
  expect(await card('1-1-alpha').getByTestId('board-card-step').getAttribute('title')).toBe('The tests pass on the merge result.');
  const alphaSteps = (await stepsSeen(page))['1-1-alpha']!;
  expect(alphaSteps.filter((s) => ['building', 'reviewing', 'testing', 'merged'].includes(s))).toEqual(['building', 'reviewing', 'testing', 'merged']);
  expect(sh(repo.root, ['show', `main:${STATUS_PATH}`])).toMatch(/^ {2}1-1-alpha: done$/m);

  // 2-1-beta starts once the slot is free; its gate is red: a decision on the panel, with the test's output.
  const decision = panel.locator('[data-testid="autopilot-decision"][data-kind="test-gate"]');
  await decision.waitFor({ timeout: 90_000 });
  await until(async () => (await stepOf('2-1-beta')) === 'held', '2-1-beta held');
  await waitForText(decision, '2-1-beta');
  await waitForText(decision, 'tests failed on the merge');
  await waitForText(decision.getByTestId('autopilot-decision-detail'), 'refused: 2-1-beta.txt');
  expect(await decision.getByTestId('autopilot-decision-detail').innerText()).not.toContain(folders.root);
  const betaSteps = (await stepsSeen(page))['2-1-beta']!;
  expect(betaSteps.filter((s) => ['building', 'reviewing', 'held'].includes(s))).toEqual(['building', 'reviewing', 'held']);
  await until(async () => (await laneOf('2-1-beta')) === 'in-progress', '2-1-beta back in progress');
  expect(sh(repo.root, ['ls-tree', '--name-only', 'main', 'flags/']).trim()).toBe('');
  expect((await decision.locator('button[data-action]').evaluateAll((els) => els.map((e) => e.getAttribute('data-action'))))).toEqual(['retry', 'merge-anyway', 'skip', 'stop']);
  await expectNoViolations(page, 'autopilot panel with a decision');

  // The panel's controls are big enough to tap on a phone.
  await page.setViewportSize({ width: 375, height: 800 });
  await panel.scrollIntoViewIfNeeded();
  expect(await smallTapTargets(page, 44, '[data-testid="autopilot-panel"]')).toEqual([]);
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
  await expectNoViolations(page, 'autopilot panel with a decision at 375 px');
  await screenshot(page, 'autopilot-decision-375.png');
  await page.setViewportSize({ width: 1280, height: 860 });

  // Merge anyway: the decision goes, the story merges without the gate and lands in done.
  await decision.getByRole('button', { name: 'Merge anyway' }).click();
  await decision.waitFor({ state: 'detached', timeout: 30_000 });
  await until(async () => (await stepOf('2-1-beta')) === 'merged', '2-1-beta merged', 90_000, 100);
  await until(async () => (await laneOf('2-1-beta')) === 'done', '2-1-beta in done');
  expect(await card('2-1-beta').getByTestId('board-card-step').getAttribute('title')).toContain('without the test gate');
  expect(await page.getByTestId('autopilot-decisions').count()).toBe(0);
  await waitForText(page.getByTestId('autopilot-state'), '0 of 1 slot in use');
  expect(sh(repo.root, ['ls-tree', '--name-only', 'main', 'flags/']).trim()).toBe('flags/2-1-beta.txt');
  expect(sh(repo.root, ['show', `main:${STATUS_PATH}`])).toMatch(/^ {2}2-1-beta: done$/m);

  // All of it on the one page: no navigation, and what the page set on load is still there.
  expect(navigations).toBe(loadsBefore);
  expect(await page.evaluate(() => (window as unknown as { __marker?: string }).__marker)).toBe('this page was never reloaded');
  await expectNoViolations(page, 'board after the autopilot');
});

/**
 * The sprint board in a real browser against the production build: a BMAD 6.12 project that is a
 * real git repository with a sprint status (comments and all) and a story file, build enabled; the
 * board's lanes, a story started from its card, the scripted model fixing the code and writing the
 * story's status in the run's workspace, the card moving to review by itself, its diff, and the
 * merge moving it to done in the base branch's sprint status and the project folder.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { sh, writeFiles } from '../test/git-repo';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, until, waitForText, type Tab } from './browser-helpers';

jest.setTimeout(240_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let tab: Tab | null = null;
let project: string;

const BUGGY = 'module.exports = (a, b) => a - b;\n';
const FIXED = 'module.exports = (a, b) => a + b;\n';
const ARTIFACTS = '_bmad-output/implementation-artifacts';
const SPRINT = `${ARTIFACTS}/sprint-status.yaml`;
const STORY = `${ARTIFACTS}/1-1-fix-the-sum.md`;

const SPRINT_STATUS = `# generated: 05-06-2026 10:00
# project: calc
# STATUS DEFINITIONS: backlog, ready-for-dev, in-progress, review, done

generated: 05-06-2026 10:00
project: calc
tracking_system: file-system
story_location: "${ARTIFACTS}"

development_status:
  epic-1: in-progress
  # the sum is wrong for every input
  1-1-fix-the-sum: ready-for-dev
  1-2-document-the-sum: backlog
  epic-1-retrospective: optional
`;

const STORY_TEXT = `# Story 1.1: Fix the sum

Status: ready-for-dev

## Story

As a user, I want sum(2, 3) to be 5.

## Acceptance Criteria

1. \`npm test\` passes.
`;

async function api(method: string, url: string, body?: unknown) {
  const res = await fetch(`${app.url}${url}`, { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json().catch(() => null)) as { data?: unknown } | null };
}

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('board-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  project = await bmadProject('6.12.0', { parent: projectsRoot, name: 'calc' });
  writeFiles(project, {
    'package.json': JSON.stringify({ name: 'calc', version: '1.0.0', scripts: { test: 'node test.js' } }, null, 2) + '\n',
    'src/sum.js': BUGGY,
    'test.js': "const sum = require('./src/sum');\nif (sum(2, 3) !== 5) { console.error('FAIL'); process.exit(1); }\nconsole.log('PASS');\n",
    [SPRINT]: SPRINT_STATUS,
    [STORY]: STORY_TEXT,
  });
  sh(project, ['init', '-q', '-b', 'main']);
  sh(project, ['add', '-A']);
  sh(project, ['commit', '-q', '-m', 'A calculator with a BMAD install and its first sprint']);
  // A second project with no sprint yet: the board points to sprint planning.
  const fresh = await bmadProject('6.12.0', { parent: projectsRoot, name: 'fresh' });
  sh(fresh, ['init', '-q', '-b', 'main']);
  sh(fresh, ['add', '-A']);
  sh(fresh, ['commit', '-q', '-m', 'A BMAD install']);
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot });
  const build = await api('PUT', '/api/projects/calc/build', { enabled: true });
  expect(build.status).toBe(200);
}, 300_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await model?.close();
  await folders?.cleanup();
});
afterEach(async () => {
  if (!tab) return;
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').toLowerCase().slice(0, 80);
  await screenshot(tab.page, `board-${name}.png`).catch(() => undefined);
  const errors = [...tab.pageErrors];
  await tab.close();
  tab = null;
  expect(errors).toEqual([]);
});

it('shows the sprint, starts a story from its card, moves it to review when the run writes its status, shows its diff and merges it to done', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/?p=calc');
  const board = page.getByTestId('project-board');
  await board.waitFor();
  const card = (key: string) => board.locator(`[data-testid="board-card"][data-key="${key}"]`);
  const laneOf = (key: string) => card(key).evaluate((el) => el.closest('[data-testid="board-column"]')?.getAttribute('data-column'));
  await card('1-1-fix-the-sum').waitFor();
  expect(await laneOf('1-1-fix-the-sum')).toBe('ready-for-dev');
  expect(await laneOf('1-2-document-the-sum')).toBe('backlog');
  await waitForText(page.getByTestId('board-source'), SPRINT);
  // The board listens to the project's event stream: cards move on its events, not by polling.
  await waitForText(page.getByTestId('board-source'), 'live');
  await expectNoViolations(page, 'sprint board');

  // The run: fix the code, then write the story's status as dev-story does, then answer.
  model.setScript([
    reply.toolCalls([{ name: 'edit_file', arguments: { file_path: '{project-root}/src/sum.js', old_text: 'a - b', new_text: 'a + b' } }]),
    reply.toolCalls([{ name: 'edit_file', arguments: { file_path: `{project-root}/${STORY}`, old_text: 'Status: ready-for-dev', new_text: 'Status: review' } }]),
    reply.text('Fixed the sum; the story is ready for review.'),
  ]);
  // Open the card from the keyboard.
  await card('1-1-fix-the-sum').getByTestId('board-card-open').focus();
  await page.keyboard.press('Enter');
  const detail = page.getByTestId('story-detail');
  await detail.waitFor();
  await page.getByTestId('story-start').click();
  const dialog = page.getByTestId('start-story-dialog');
  await dialog.waitFor();
  await page.getByTestId('start-inputs').fill('Keep the module a single function.');
  await expectNoViolations(page, 'start a story');
  await page.getByTestId('start-go').click();
  await until(async () => (await dialog.count()) === 0, 'the start dialog closes');
  await waitForText(page.getByTestId('story-notice'), 'bmad/');
  // In progress at once, before the run has done anything.
  await waitForText(page.getByTestId('story-status'), 'in-progress');

  // Back on the board (Escape): the card moves to review by itself when the run has written it.
  await page.keyboard.press('Escape');
  await detail.waitFor({ state: 'detached' });
  await until(async () => (await laneOf('1-1-fix-the-sum')) === 'review', 'the card moves to review', 120_000, 250);
  await until(async () => (await card('1-1-fix-the-sum').getAttribute('data-run')) === 'complete', 'the run shows complete');
  // The project folder is untouched until the merge.
  expect(await fs.readFile(path.join(project, 'src/sum.js'), 'utf8')).toBe(BUGGY);
  expect(sh(project, ['show', `main:${SPRINT}`])).toContain('1-1-fix-the-sum: review');
  expect(sh(project, ['show', `main:${SPRINT}`])).toContain('# the sum is wrong for every input');

  // Its page: the run, its diff against the base.
  await card('1-1-fix-the-sum').getByTestId('board-card-open').click();
  await detail.waitFor();
  await until(async () => (await page.getByTestId('story-run').getAttribute('data-status')) === 'complete', 'the run on the story page');
  const diff = page.locator('[data-testid="diff-file"][data-path="src/sum.js"]');
  await diff.waitFor({ timeout: 30_000 });
  await waitForText(diff.locator('.diff-add'), 'a + b');
  await waitForText(diff.locator('.diff-del'), 'a - b');
  await expectNoViolations(page, 'story in review with its diff');
  await page.setViewportSize({ width: 375, height: 800 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
  await detail.scrollIntoViewIfNeeded();
  await screenshot(page, 'board-story-375.png');
  await page.setViewportSize({ width: 1280, height: 860 });

  // Merge: the story is done, in the base branch's sprint status and on the board.
  await page.getByTestId('story-merge').click();
  await page.getByTestId('confirm-button').click();
  await waitForText(page.getByTestId('story-notice'), 'the story is done', 30_000);
  await waitForText(page.getByTestId('story-status'), 'done');
  expect(await fs.readFile(path.join(project, 'src/sum.js'), 'utf8')).toBe(FIXED);
  const sprint = sh(project, ['show', `main:${SPRINT}`]);
  expect(sprint).toContain('1-1-fix-the-sum: done');
  expect(sprint).toContain('1-2-document-the-sum: backlog');
  expect(sprint).toContain('# the sum is wrong for every input');
  await page.getByTestId('story-back').click();
  await until(async () => (await laneOf('1-1-fix-the-sum')) === 'done', 'the card in done');
  await expectNoViolations(page, 'sprint board after the merge');
});

it('points a project without a sprint status to sprint planning', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/?p=fresh');
  const empty = page.getByTestId('board-empty');
  await waitForText(empty, 'no sprint yet');
  await expectNoViolations(page, 'board without a sprint');
  await empty.getByTestId('board-plan-sprint').click();
  await page.waitForURL((u) => !!u.searchParams.get('agent'));
});

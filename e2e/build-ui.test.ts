/**
 * The Build screens for long work in a real browser against the production build: a BMAD 6.12
 * project that is a real git repository with a sprint (stories waiting), build enabled with a setup
 * line that takes five seconds and prints a line a second. A new workspace's page shows the setup's
 * output as it comes with the time since it started, Merge and Discard held until it ends; the
 * agent's start waits for a new workspace's setup; a command whose text has two spaces shows them,
 * its output in the order it came with stderr marked; the workspace list shows ahead/behind; a
 * merge shows it works, then where it went; a story's run commits under the story's title. The
 * journey does not call the shipping phase done while stories wait, and the picker says Project.
 *
 * Parts read fields other parts of the server add (live setup output, the list's counts, merge
 * details, the command transcript, commit titles); each such assertion names the field it reads.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { sh, writeFiles } from '../test/git-repo';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, until, waitForText, type Tab } from './browser-helpers';

jest.setTimeout(300_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let tab: Tab | null = null;
let project: string;

const SETUP = 'for i in 1 2 3 4 5; do echo step $i; sleep 1; done';
const ARTIFACTS = '_bmad-output/implementation-artifacts';
const SPRINT = `${ARTIFACTS}/sprint-status.yaml`;
const STORY = `${ARTIFACTS}/1-1-fix-the-sum.md`;
/** Two spaces after the caret: a command that lost one would print the other line. */
const SED = "sed -n 's/^  1-1/X/p' notes.txt";
const COMMAND = `${SED}; sleep 0.3; echo warn >&2; sleep 0.3; echo after; printf '\\033[1;32mPASS\\033[0m  done\\n'`;
const LONG_PATH = 'src/a-rather-long-folder-name/with-another-long-folder-inside/and-a-third-one-too/a-file-with-a-very-long-name-indeed.js';
const REQUEST = 'Look at the notes and add the helper module';

const SPRINT_STATUS = `development_status:
  epic-1: in-progress
  1-1-fix-the-sum: ready-for-dev
  1-2-document-the-sum: backlog
  epic-1-retrospective: optional
`;

async function api(method: string, url: string, body?: unknown) {
  const res = await fetch(`${app.url}${url}`, { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json().catch(() => null)) as { data?: Record<string, unknown> } | null };
}

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  folders = await makeFolders('build-long');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  project = await bmadProject('6.12.0', { parent: projectsRoot, name: 'calc' });
  writeFiles(project, {
    'package.json': JSON.stringify({ name: 'calc', version: '1.0.0' }, null, 2) + '\n',
    'src/sum.js': 'module.exports = (a, b) => a - b;\n',
    'notes.txt': '  1-1 two spaces\n 1-1 one space\n',
    [SPRINT]: SPRINT_STATUS,
    [STORY]: '# Story 1.1: Fix the sum\n\nStatus: ready-for-dev\n\n## Story\n\nAs a user, I want sum(2, 3) to be 5.\n',
  });
  sh(project, ['init', '-q', '-b', 'main']);
  sh(project, ['add', '-A']);
  sh(project, ['commit', '-q', '-m', 'A calculator with a BMAD install and its sprint']);
  app = await startApp(folders, { OPENAI_BASE_URL: model.url, OPENAI_MODEL: 'e2e-model', PROJECTS_ROOT: projectsRoot });
  const build = await api('PUT', '/api/projects/calc/build', { enabled: true, setup: SETUP });
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
  await screenshot(tab.page, `build-long-${name}.png`).catch(() => undefined);
  const errors = [...tab.pageErrors];
  await tab.close();
  tab = null;
  expect(errors).toEqual([]);
});

/**
 * Checks that read a field another part of the server adds: each is run, and what failed is
 * gathered with the helper and field it waits for, so the rest of the test still runs and the
 * test fails at its end naming every missing part.
 */
let missing: string[] = [];
async function needs(part: string, check: () => Promise<unknown>): Promise<void> {
  try {
    await check();
  } catch (e) {
    missing.push(`${part}: ${String((e as Error)?.message ?? e).split('\n')[0]}`);
  }
}
beforeEach(() => {
  missing = [];
});
const noneMissing = () => expect(missing).toEqual([]);

it("shows a new workspace's setup as it runs with the time since it started, holds Merge and Discard until it ends; the journey and the picker say what they mean", async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/?p=calc');
  // The picker above the agents names projects, not workspaces.
  await page.getByRole('combobox', { name: 'Project' }).waitFor();
  // Stories wait in the sprint: the shipping phase is not done.
  const ship = page.locator('[data-testid="journey-phase"][data-phase="ship"]');
  await ship.waitFor();
  expect(await ship.getAttribute('data-status')).not.toBe('done');

  await page.getByTestId('new-workspace').click();
  await page.getByTestId('workspace-name').fill('live');
  await page.getByTestId('workspace-create').click();
  const setup = page.getByTestId('workspace-setup');
  await setup.waitFor({ timeout: 60_000 });
  expect(await setup.getAttribute('data-status')).toBe('running');
  // The clock counts from the start (the running outcome's time on a server without `startedAt`).
  const clock = page.getByTestId('setup-elapsed');
  const first = await clock.innerText();
  expect(first).toMatch(/^0:0\d$/);
  await until(async () => (await clock.innerText()) !== first || (await setup.getAttribute('data-status')) !== 'running', 'the clock ticks', 5_000);
  const merge = page.getByTestId('workspace-merge');
  expect(await merge.isDisabled()).toBe(true);
  expect(await page.getByTestId('workspace-discard').isDisabled()).toBe(true);
  await waitForText(page.getByTestId('workspace-wait'), 'Merge and Discard wait until the setup line ends');
  await expectNoViolations(page, 'workspace while its setup runs');
  await setup.scrollIntoViewIfNeeded();
  await screenshot(page, 'build-long-setup-running.png');
  await needs('setup: the running outcome\'s `output`', async () => {
    await waitForText(page.getByTestId('setup-output'), 'step 2', 10_000);
    expect(await setup.getAttribute('data-status')).toBe('running');
  });

  // It ends: its whole output, how it ended, Merge offered.
  await until(async () => (await setup.getAttribute('data-status')) === 'ok', 'the setup ends', 60_000, 200);
  await waitForText(setup, 'Setup succeeded (exit code 0)');
  await waitForText(page.getByTestId('setup-output'), 'step 5');
  await until(() => merge.isEnabled(), 'Merge offered');
  expect(await page.getByTestId('workspace-wait').count()).toBe(0);

  // The list: no setup output, and its counts.
  await page.getByTestId('workspace-back').click();
  const item = page.locator('[data-testid="workspace-item"]', { hasText: 'live' });
  await item.waitFor();
  expect(await item.innerText()).not.toContain('step 1');
  await needs('wsgit: the list items\' `ahead`/`behind`', () => waitForText(item.getByTestId('workspace-item-state'), '0 ahead, 0 behind main', 5_000));
  await expectNoViolations(page, 'workspace list');
  noneMissing();
});

it('waits for a new workspace’s setup before the agent starts; the command keeps its spaces and its output order; the list counts; a merge shows it works and where it went', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/?p=calc');
  model.setScript([
    reply.toolCalls([{ name: 'run_command', arguments: { command: COMMAND } }]),
    reply.toolCalls([{ name: 'run_command', arguments: { command: `mkdir -p ${path.posix.dirname(LONG_PATH)} && echo "module.exports = 1;" > ${LONG_PATH}` } }]),
    reply.text('Read the notes and added the helper.'),
  ]);
  const card = page.locator('li', { has: page.locator('[data-testid="agent-card"][data-agent-id="bmad-agent-dev"]') });
  await card.getByTestId('agent-menu').click();
  await card.getByTestId('start-in-workspace').click();
  const dialog = page.getByTestId('start-in-workspace-dialog');
  await dialog.getByTestId('start-new-workspace').check();
  await dialog.getByTestId('start-workspace-name').fill('notes');
  await dialog.getByTestId('start-in-workspace-go').click();
  // Its setup runs first: the dialog stays with the new workspace chosen and Start held.
  await waitForText(dialog.getByTestId('start-in-workspace-wait'), 'notes’s setup line is still running', 30_000);
  expect(await dialog.getByTestId('start-in-workspace-go').isDisabled()).toBe(true);
  await expectNoViolations(page, 'start in a workspace while its setup runs');
  await until(() => dialog.getByTestId('start-in-workspace-go').isEnabled(), 'Start offered once the setup ends', 60_000, 200);
  await dialog.getByTestId('start-in-workspace-go').click();
  await page.waitForURL((u) => u.searchParams.get('agent') === 'bmad-agent-dev' && !!u.searchParams.get('ws'));

  const input = page.getByTestId('composer-input');
  await until(() => input.isEnabled(), 'composer enabled');
  await input.fill(REQUEST);
  await input.press('Enter');
  await waitForText(page.locator('[data-testid="message-assistant"]').last(), 'added the helper', 90_000);
  const commandCard = page.locator('[data-testid="tool-activity"][data-tool="run_command"]').first();
  await waitForText(commandCard.getByTestId('command-outcome'), 'exit code 0');
  // The command as it ran, both spaces shown (rendered text: white space that collapsed would show one).
  expect(await commandCard.getByTestId('tool-label').innerText()).toContain(SED);
  await commandCard.getByTestId('tool-label').click();
  expect(await commandCard.getByTestId('command-line').innerText()).toBe(COMMAND);
  const output = commandCard.getByTestId('command-output');
  await waitForText(output, 'X two spaces');
  expect(await output.innerText()).not.toContain('one space');
  expect(await commandCard.innerText()).not.toMatch(/Errors/);
  // Its colours as styled text, the escape codes gone.
  await waitForText(output.locator('.ansi-green.ansi-bold'), 'PASS');
  expect(await output.innerText()).not.toContain('\u001b');
  // stderr is marked, not called an error, in the order it came.
  expect(await output.locator('[data-stream="stderr"]').innerText()).toContain('warn');
  await needs('sandbox: run_command\'s `transcript`', async () => {
    expect(await output.getAttribute('data-ordered')).toBe('true');
    expect(await output.locator('[data-stream]').evaluateAll((els) => els.map((e) => e.getAttribute('data-stream')))).toEqual(['stdout', 'stderr', 'stdout']);
  });
  await expectNoViolations(page, 'command card with its output');

  // The workspace page: the log keeps the spaces too; the phone layout of its changed files.
  await page.goto('/?p=calc');
  const item = page.locator('[data-testid="workspace-item"]', { hasText: 'notes' });
  await item.getByRole('button', { name: 'notes' }).click();
  const wsPage = page.getByTestId('workspace-page');
  await wsPage.waitFor();
  await page.locator(`[data-testid="workspace-file"][data-path="${LONG_PATH}"]`).waitFor({ timeout: 30_000 });
  const logLine = page.getByTestId('command-entry-line').first();
  await logLine.waitFor();
  expect(await logLine.innerText()).toBe(COMMAND);
  await needs('wsgit: the turn\'s commit titled after the request', () => waitForText(page.getByTestId('workspace-commits'), REQUEST.slice(0, 30), 5_000));
  await expectNoViolations(page, 'workspace page after a turn');
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
  const counts = await page.locator('.workspace-file-counts').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().right));
  expect(counts.length).toBeGreaterThan(0);
  for (const right of counts) expect(right).toBeLessThanOrEqual(390);
  await page.getByTestId('workspace-files').scrollIntoViewIfNeeded();
  await screenshot(page, 'build-long-files-390.png');
  await page.setViewportSize({ width: 1280, height: 860 });

  // Merge: its progress is said while it runs, then where it went.
  await page.evaluate(() => {
    const seenBusy: string[] = [];
    (window as unknown as { seenBusy: string[] }).seenBusy = seenBusy;
    new MutationObserver(() => {
      const el = document.querySelector('[data-testid="confirm-busy"]');
      if (el?.textContent) seenBusy.push(el.textContent.trim());
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await page.getByTestId('workspace-merge').click();
  await page.getByTestId('confirm-button').click();
  await waitForText(page.getByTestId('workspace-notice'), 'Merged into main at', 30_000);
  expect(await page.evaluate(() => (window as unknown as { seenBusy: string[] }).seenBusy)).toContain('Merging bmad/notes into main…');
  const head = sh(project, ['rev-parse', '--short=7', 'main']).trim();
  await waitForText(page.getByTestId('workspace-state'), `Merged into main at ${head}`);
  expect(await wsPage.innerText()).not.toMatch(/\d+ ahead/);
  await page.getByTestId('workspace-back').click();
  const merged = page.locator('[data-testid="workspace-item"]', { hasText: 'notes' });
  await waitForText(merged.getByTestId('workspace-item-state'), 'Merged into main');
  expect(await merged.innerText()).not.toContain('ahead');
  await needs('wsgit: `mergedInto`/`mergedAt`/`mergedBy` of a merged workspace', () => waitForText(merged.getByTestId('workspace-item-state'), ' by ', 5_000));
  noneMissing();
});

it("titles a story's run commit after the story, shown whole on the workspace page", async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  model.setScript([
    reply.toolCalls([{ name: 'edit_file', arguments: { file_path: '{project-root}/src/sum.js', old_text: 'a - b', new_text: 'a + b' } }]),
    reply.toolCalls([{ name: 'edit_file', arguments: { file_path: `{project-root}/${STORY}`, old_text: 'Status: ready-for-dev', new_text: 'Status: review' } }]),
    reply.text('Fixed the sum; the story is ready for review.'),
  ]);
  const started = await api('POST', '/api/projects/calc/board/stories/1-1-fix-the-sum/start', {});
  expect(started.status).toBe(202);
  const { runId, workspace } = started.body!.data as { runId: string; workspace: { id: string } };
  await until(async () => ((await api('GET', `/api/runs/${runId}`)).body?.data as { status?: string } | undefined)?.status === 'complete', 'the run completes', 120_000, 500);

  await page.goto('/?p=calc');
  await page.locator(`[data-testid="workspace-item"][data-workspace-id="${workspace.id}"]`).getByRole('button').first().click();
  await page.getByTestId('workspace-page').waitFor();
  const subject = page.getByTestId('commit-subject').first();
  await subject.waitFor();
  await expectNoViolations(page, 'workspace of a story run');
  await needs('wsgit: a story run\'s commit titled `Story 1-1: Fix the sum — <agent>`', async () => expect(await subject.innerText()).toMatch(/^Story 1-1: Fix the sum — \S+/));
  noneMissing();
});

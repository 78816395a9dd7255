/**
 * A story's pull request from the board in a real browser (Debian's chromium through
 * playwright-core) against the production build, the tests' own git server (nginx, git
 * http-backend) and a fake GitHub on loopback whose requests are checked against GitHub's
 * published OpenAPI description: a project cloned with a token, a story built by a run of the
 * scripted model, **Open pull request** on its page, the card linking the pull request, then the
 * merge upstream told by a signed webhook → the story done, its pull request shown merged.
 *
 * Run: npx jest -c jest.e2e.config.ts e2e/forges   (E2E_SKIP_BUILD=1 reuses an existing build).
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { reply, startScriptedModel, type ScriptedModel } from '../test/scripted-model';
import { bmadProject } from '../test/bmad-installs';
import { sh } from '../test/git-repo';
import { startGitServer, type GitServer } from '../test/git-server';
import { startFakeForge, type FakeForge } from '../test/forge-fakes';
import { makeFolders, startApp, type AppServer, type Folders } from './support';
import { expectNoViolations, launchBrowser, openTab, screenshot, until, waitForText, type Tab } from './browser-helpers';

jest.setTimeout(240_000);

let browser: Browser;
let model: ScriptedModel;
let folders: Folders;
let app: AppServer;
let server: GitServer;
let github: FakeForge;
let tab: Tab | null = null;
const TOKEN = `tok_${crypto.randomBytes(12).toString('hex')}`;
const SECRET = `whsec_${crypto.randomBytes(12).toString('hex')}`;
const ARTIFACTS = '_bmad-output/implementation-artifacts';
const STORY = `${ARTIFACTS}/1-1-login.md`;

async function api(method: string, url: string, body?: unknown) {
  const res = await fetch(`${app.url}${url}`, { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json().catch(() => null)) as { data?: any } | null };
}

beforeAll(async () => {
  browser = await launchBrowser();
  model = await startScriptedModel({ script: [] });
  server = await startGitServer({ user: 'x-access-token', token: TOKEN });
  const seed = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-e2e-forge-seed-'));
  const shop = await bmadProject('6.12.0', { parent: seed, name: 'shop' });
  server.createRepository(
    'team/shop',
    {
      [`${ARTIFACTS}/sprint-status.yaml`]: 'development_status:\n  epic-1: in-progress\n  1-1-login: ready-for-dev\n',
      [STORY]: '# Story 1.1: Log in\n\nStatus: ready-for-dev\n',
      'src/app.txt': 'one\n',
    },
    { from: shop },
  );
  await fs.rm(seed, { recursive: true, force: true });
  github = await startFakeForge({ kind: 'github', token: TOKEN, repository: 'team/shop', bare: server.repoPath('team/shop') });
  folders = await makeFolders('forges-ui');
  const projectsRoot = path.join(folders.root, 'projects');
  await fs.mkdir(projectsRoot);
  app = await startApp(folders, {
    OPENAI_BASE_URL: model.url,
    OPENAI_MODEL: 'e2e-model',
    PROJECTS_ROOT: projectsRoot,
    SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
    GIT_REMOTE_HOSTS: `${server.hostPort},${github.hostPort}`,
    FORGE_POLL_SECONDS: '0',
  });
  const cloned = await api('POST', '/api/projects', { id: 'shop', git: { url: server.repoUrl('team/shop'), token: TOKEN, forge: 'github', apiUrl: github.apiUrl } });
  expect(cloned.status).toBe(202);
  await until(async () => (await api('GET', '/api/projects/shop')).body?.data?.clone?.status === 'ready', 'the clone', 120_000);
  expect((await api('PUT', '/api/projects/shop/remote', { webhookSecret: SECRET })).status).toBe(200);
  expect((await api('PUT', '/api/projects/shop/build', { enabled: true })).status).toBe(200);
  // The story built by a run: the code, then the story's status as dev-story writes it.
  model.setScript([
    reply.toolCalls([{ name: 'save_output', arguments: { file_path: '{project-root}/src/login.txt', content: 'log in\n' } }]),
    reply.toolCalls([{ name: 'edit_file', arguments: { file_path: `{project-root}/${STORY}`, old_text: 'Status: ready-for-dev', new_text: 'Status: review' } }]),
    reply.text('The login is built; the story is ready for review.'),
  ]);
  const started = await api('POST', '/api/projects/shop/board/stories/1-1-login/start', {});
  expect(started.status).toBe(202);
  await until(async () => !['queued', 'running'].includes((await api('GET', `/api/runs/${started.body!.data.runId}`)).body?.data?.status), 'the run', 120_000);
}, 300_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await model?.close();
  await server?.stop();
  await github?.stop();
  await folders?.cleanup();
});
afterEach(async () => {
  if (!tab) return;
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').toLowerCase().slice(0, 80);
  await screenshot(tab.page, `forges-${name}.png`).catch(() => undefined);
  const errors = [...tab.pageErrors];
  await tab.close();
  tab = null;
  expect(errors).toEqual([]);
});

it('opens a story’s pull request from the board, links it on the card, and shows it merged once GitHub says so', async () => {
  tab = await openTab(browser, app.url);
  const { page } = tab;
  await page.goto('/?p=shop');
  const board = page.getByTestId('project-board');
  await board.waitFor();
  const card = board.locator('[data-testid="board-card"][data-key="1-1-login"]');
  await until(async () => (await card.getAttribute('data-status')) === 'review', 'the story in review', 60_000);
  await card.getByTestId('board-card-open').click();
  const publish = page.getByTestId('story-publish');
  await waitForText(publish, 'Open pull request');
  await expectNoViolations(page, 'a story in review with a remote in pull-request mode');
  await publish.click();
  await waitForText(page.getByTestId('story-notice'), 'Opened pull request #1 from bmad/1-1-login', 60_000);
  const link = page.getByTestId('story-pull-request').getByTestId('pull-request-link');
  await waitForText(link, '#1 open');
  expect(await link.getAttribute('href')).toBe(`http://127.0.0.1:${github.port}/team/shop/pull/1`);
  await waitForText(publish, 'Update pull request');
  // The pull request on the forge, and the branch on the git server.
  expect(github.pulls).toHaveLength(1);
  expect(github.pulls[0]).toMatchObject({ title: '1-1-login: Log in', head: 'bmad/1-1-login', base: 'main' });
  expect(sh(server.repoPath('team/shop'), ['rev-parse', 'bmad/1-1-login']).trim()).toMatch(/^[0-9a-f]{40}$/);
  expect(github.problems).toEqual([]);
  await screenshot(page, 'forges-pull-request-open.png');
  await expectNoViolations(page, 'a story with its pull request open');

  // Merged on GitHub; its signed webhook reaches the server.
  github.merge(1);
  const hook = github.pullRequestHook(1, SECRET);
  const res = await fetch(`${app.url}/api/forge/shop/hook`, { method: 'POST', headers: hook.headers, body: hook.body });
  expect(res.status).toBe(200);
  await page.reload();
  await board.waitFor();
  await until(async () => (await card.getAttribute('data-status')) === 'done', 'the story done', 30_000);
  const cardLink = card.getByTestId('pull-request-link');
  await waitForText(cardLink, '#1 merged');
  expect(await cardLink.getAttribute('data-state')).toBe('merged');
  await card.getByTestId('board-card-open').click();
  await waitForText(page.getByTestId('story-status'), 'done');
  await waitForText(page.getByTestId('story-pull-request'), '#1 merged');
  await screenshot(page, 'forges-pull-request-merged.png');
  await expectNoViolations(page, 'a story whose pull request was merged');
  expect(await page.content()).not.toContain(TOKEN);
});

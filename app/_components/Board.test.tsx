import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { BoardStoryView, BoardView, BudgetView } from '@/types/api';
import { Board } from './Board';

type Call = { url: string; method: string; body?: Record<string, unknown> };
let calls: Call[];
let board: BoardView;
let budget: BudgetView;
let runs: Record<string, { status: string; result: Record<string, unknown> | null; conversationId: string | null }>;
let refusal: { url: RegExp; status: number; body: unknown } | null;
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });

const story = (key: string, title: string, status: string, extra: Partial<BoardStoryView> = {}): BoardStoryView => ({
  key,
  title,
  status,
  file: `_bmad-output/implementation-artifacts/${key}.md`,
  ...extra,
});

function findStory(key: string): BoardStoryView {
  for (const e of board.epics) for (const s of e.stories) if (s.key === key) return s;
  throw new Error(`no story ${key}`);
}

const DIFF = 'diff --git a/src/cart.js b/src/cart.js\n--- a/src/cart.js\n+++ b/src/cart.js\n@@ -1,1 +1,1 @@\n-const total = 0;\n+const total = sum(items);\n';

beforeEach(() => {
  calls = [];
  refusal = null;
  runs = {
    run_r: { status: 'complete', result: { status: 'review', reason: 'All acceptance criteria met.' }, conversationId: 'c_r' },
    run_b: { status: 'blocked', result: { status: 'blocked', reason: 'Which payment provider should the cart use?' }, conversationId: 'c_b' },
  };
  board = {
    source: { path: '_bmad-output/implementation-artifacts/sprint-status.yaml', branch: 'main', commit: 'a1b2c3d4e5f6' },
    epics: [
      {
        key: 'epic-1',
        status: 'in-progress',
        retrospective: 'optional',
        stories: [
          story('1-1-login', 'Log in with email', 'done', { spend: { tokens: 1200, usd: 0.04 } }),
          story('1-2-cart', 'Add items to the cart', 'review', {
            workspace: { id: 'ws_cart', branch: 'bmad/1-2-cart', status: 'open' },
            run: { id: 'run_r', status: 'complete' },
            spend: { tokens: 5400, usd: null },
          }),
          story('1-3-pay', 'Pay for the cart', 'ready-for-dev'),
        ],
      },
      {
        key: 'epic-2',
        status: 'backlog',
        stories: [
          story('2-1-search', 'Search the catalog', 'backlog'),
          story('2-2-ship', 'Ship the order', 'drafted', { file: null }),
          story('2-3-refund', 'Refund an order', 'in-progress', { workspace: { id: 'ws_ref', branch: 'bmad/2-3-refund', status: 'open' }, run: { id: 'run_b', status: 'blocked' } }),
        ],
      },
    ],
    decisions: [{ runId: 'run_b', storyKey: '2-3-refund', kind: 'blocked', text: 'Which payment provider should the cart use?', since: new Date(Date.now() - 5 * 60_000).toISOString() }],
  };
  budget = {
    monthlyTokens: 1_000_000,
    monthlyUsd: null,
    spent: { tokens: 6600, usd: 0.04 },
    month: '2026-05',
    perPerson: { monthlyTokens: null, monthlyUsd: null },
    byPerson: [
      { id: 'u1', name: 'Ada', spent: { tokens: 6000, usd: 0.03 } },
      { id: 'u2', name: 'Ed', spent: { tokens: 600, usd: 0.01 } },
    ],
  };
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    const body = init.body ? (JSON.parse(String(init.body)) as Record<string, unknown>) : undefined;
    calls.push({ url, method, body });
    if (refusal && refusal.url.test(url) && method !== 'GET') return json(refusal.status, refusal.body);
    if (url === '/api/projects/shop/board') return json(200, { success: true, data: JSON.parse(JSON.stringify(board)) });
    let m = /^\/api\/projects\/shop\/board\/stories\/([^/]+)\/start$/.exec(url);
    if (m && method === 'POST') {
      const s = findStory(decodeURIComponent(m[1]!));
      s.status = 'in-progress';
      s.run = { id: 'run_new', status: 'queued' };
      s.workspace = { id: 'ws_new', branch: `bmad/${s.key}`, status: 'open' };
      runs.run_new = { status: 'queued', result: null, conversationId: 'c_new' };
      return json(202, { success: true, data: { runId: 'run_new', workspace: { id: 'ws_new', branch: `bmad/${s.key}` } } });
    }
    m = /^\/api\/projects\/shop\/board\/stories\/([^/]+)$/.exec(url);
    if (m && method === 'PATCH') {
      const s = findStory(decodeURIComponent(m[1]!));
      s.status = String(body?.status);
      return json(200, { success: true, data: s });
    }
    if (url === '/api/projects/shop/budget' && method === 'GET') return json(200, { success: true, data: budget });
    if (url === '/api/projects/shop/budget' && method === 'PUT') {
      budget = { ...budget, ...(body as Partial<BudgetView>) };
      return json(200, { success: true, data: budget });
    }
    m = /^\/api\/runs\/([^/]+)$/.exec(url);
    if (m && runs[m[1]!]) {
      const r = runs[m[1]!]!;
      return json(200, { success: true, data: { id: m[1], projectId: 'shop', skill: 'bmad-build-auto', agentId: 'dev', intent: null, artifacts: [], answers: 0, createdAt: new Date().toISOString(), startedAt: null, endedAt: null, error: null, ...r } });
    }
    if (/^\/api\/runs\/[^/]+\/answer$/.test(url) && method === 'POST') return json(202, { success: true, data: { status: 'queued' } });
    if (/^\/api\/projects\/shop\/workspaces\/[^/]+\/diff/.test(url)) return json(200, { success: true, data: { diff: DIFF, cut: false, bytes: DIFF.length } });
    if (/^\/api\/projects\/shop\/workspaces\/[^/]+\/publish$/.test(url) && method === 'POST') {
      const s = findStory('1-2-cart');
      s.pullRequest = { number: 4, url: 'https://gitlab.example.com/team/shop/-/merge_requests/4', state: 'open', checks: { state: 'pending', checks: [{ name: 'pipeline #9', state: 'pending' }] } };
      return json(200, { success: true, data: { branch: 'bmad/1-2-cart', pullRequest: s.pullRequest } });
    }
    if (/^\/api\/projects\/shop\/workspaces\/[^/]+\/merge$/.test(url) && method === 'POST') {
      const s = findStory('1-2-cart');
      s.status = 'done';
      s.workspace = { ...s.workspace!, status: 'merged' };
      return json(200, { success: true, data: { commit: 'f'.repeat(40), fastForward: false, checkoutUpdated: true } });
    }
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

const agents = [
  { id: 'bmad-agent-pm', name: 'John', title: 'Product Manager', bundleName: 'shop', projectId: 'shop', commands: [{ cmd: '*CP', description: 'Create a PRD', target: 'skill:bmad-create-prd', name: 'bmad-create-prd' }, { cmd: '*IR', description: 'Readiness and sprint planning', target: 'skill:bmad-sprint-planning', name: 'bmad-sprint-planning' }] },
];

const lane = (id: string) => screen.getAllByTestId('board-column').find((c) => c.dataset.column === id)!;
const cardsIn = (id: string) => within(lane(id)).queryAllByTestId('board-card').map((c) => c.dataset.key);
const methodsOf = (re: RegExp) => calls.filter((c) => re.test(c.url) && c.method !== 'GET');

it('shows the sprint as lanes of cards grouped by epic, with their runs and spend, and a lane for other statuses', async () => {
  render(<Board projectId="shop" role="viewer" agents={[]} />);
  await screen.findAllByTestId('board-card');
  expect(screen.getAllByTestId('board-column').map((c) => c.dataset.column)).toEqual(['backlog', 'ready-for-dev', 'in-progress', 'review', 'done', 'other']);
  expect(cardsIn('backlog')).toEqual(['2-1-search']);
  expect(cardsIn('ready-for-dev')).toEqual(['1-3-pay']);
  expect(cardsIn('in-progress')).toEqual(['2-3-refund']);
  expect(cardsIn('review')).toEqual(['1-2-cart']);
  expect(cardsIn('done')).toEqual(['1-1-login']);
  expect(cardsIn('other')).toEqual(['2-2-ship']);
  expect(within(lane('other')).getByTestId('board-card')).toHaveTextContent('drafted');
  expect(within(lane('review')).getByRole('heading', { level: 4 })).toHaveTextContent('Epic 1');
  expect(within(lane('review')).getByRole('heading', { level: 3 })).toHaveTextContent('Review (1)');
  const cart = within(lane('review')).getByTestId('board-card');
  expect(cart).toHaveTextContent('Add items to the cart');
  expect(cart).toHaveTextContent('1-2-cart');
  expect(cart).toHaveTextContent('run complete');
  expect(cart).toHaveTextContent('5,400 tokens');
  expect(within(lane('done')).getByTestId('board-card')).toHaveTextContent('1,200 tokens · $0.04');
  expect(screen.getByTestId('board-source')).toHaveTextContent('From _bmad-output/implementation-artifacts/sprint-status.yaml on main at a1b2c3d');
  expect(screen.getByTestId('board-epics')).toHaveTextContent('Epic 1 in-progress (retrospective optional) · Epic 2 backlog');
  // The decision is listed for everyone; nothing is polled while no run is active.
  expect(screen.getByTestId('decision')).toHaveTextContent('Which payment provider should the cart use?');
  expect(screen.getByTestId('decision')).toHaveTextContent('blocked since 5 min ago');
});

it('gives a viewer no controls, an editor the story controls but no budget, and an owner the budget too', async () => {
  const { unmount } = render(<Board projectId="shop" role="viewer" agents={[]} />);
  await screen.findAllByTestId('board-card');
  expect(screen.queryByTestId('decision-answer')).toBeNull();
  expect(screen.queryByTestId('budget-line')).toBeNull();
  await userEvent.click(within(lane('ready-for-dev')).getByRole('button', { name: 'Pay for the cart' }));
  expect(await screen.findByTestId('story-detail')).toHaveAttribute('data-key', '1-3-pay');
  expect(screen.queryByTestId('story-start')).toBeNull();
  expect(screen.queryByTestId('story-move-select')).toBeNull();
  unmount();
  expect(calls.some((c) => c.url.endsWith('/budget'))).toBe(false);

  const editor = render(<Board projectId="shop" role="editor" agents={[]} />);
  await screen.findAllByTestId('board-card');
  expect(screen.getByTestId('decision-answer')).toBeInTheDocument();
  expect(screen.queryByTestId('budget-line')).toBeNull();
  await userEvent.click(within(lane('ready-for-dev')).getByRole('button', { name: 'Pay for the cart' }));
  expect(await screen.findByTestId('story-start')).toBeInTheDocument();
  expect(screen.getByTestId('story-move-select')).toBeInTheDocument();
  // Merge is for a story in review only.
  expect(screen.queryByTestId('story-merge')).toBeNull();
  editor.unmount();
  expect(calls.some((c) => c.url.endsWith('/budget'))).toBe(false);

  render(<Board projectId="shop" role="owner" agents={[]} />);
  expect(await screen.findByTestId('budget-line')).toHaveTextContent('Budget for 2026-05: spent 6,600 tokens · $0.04 of 1,000,000 tokens.');
  expect(screen.getByTestId('budget-people')).toHaveTextContent('By person: Ada 6,000 tokens · $0.03 · Ed 600 tokens · $0.01');
  await userEvent.click(screen.getByTestId('budget-edit'));
  await userEvent.clear(screen.getByTestId('budget-tokens'));
  await userEvent.type(screen.getByTestId('budget-tokens'), '-5');
  await userEvent.click(screen.getByTestId('budget-save'));
  expect(within(screen.getByTestId('budget-line')).getByRole('alert')).toHaveTextContent('A limit is a number of 0 or more');
  expect(methodsOf(/\/budget$/)).toEqual([]);
  await userEvent.clear(screen.getByTestId('budget-tokens'));
  await userEvent.type(screen.getByTestId('budget-usd'), '25');
  await userEvent.click(screen.getByTestId('budget-save'));
  expect(methodsOf(/\/budget$/).map((c) => c.body)).toEqual([{ monthlyTokens: null, monthlyUsd: 25 }]);
  await waitFor(() => expect(screen.getByTestId('budget-line')).toHaveTextContent('of $25.00'));
  expect(screen.queryByTestId('budget-per-person')).toBeNull();
  await userEvent.click(screen.getByTestId('budget-edit'));
  await userEvent.type(screen.getByTestId('budget-person-tokens'), '200000');
  await userEvent.click(screen.getByTestId('budget-save'));
  expect(methodsOf(/\/budget$/).map((c) => c.body)[1]).toEqual({ monthlyTokens: null, monthlyUsd: 25, perPerson: { monthlyTokens: 200000, monthlyUsd: null } });
  await waitFor(() => expect(screen.getByTestId('budget-per-person')).toHaveTextContent('Each person may spend 200,000 tokens a month here.'));
});

it('starts a story with notes for the run; its card shows in progress at once and moves to review by itself when the run ends', async () => {
  render(<Board projectId="shop" role="editor" agents={[]} pollMs={40} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('ready-for-dev')).getByRole('button', { name: 'Pay for the cart' }));
  await userEvent.click(await screen.findByTestId('story-start'));
  const dialog = screen.getByTestId('start-story-dialog');
  expect(screen.getByTestId('start-inputs')).toHaveFocus();
  await userEvent.type(screen.getByTestId('start-inputs'), 'Use the sandbox keys.');
  await userEvent.type(screen.getByTestId('start-tokens'), '50000');
  await userEvent.click(within(dialog).getByTestId('start-go'));
  await waitFor(() => expect(screen.queryByTestId('start-story-dialog')).toBeNull());
  expect(methodsOf(/\/start$/)).toEqual([{ url: '/api/projects/shop/board/stories/1-3-pay/start', method: 'POST', body: { inputs: 'Use the sandbox keys.', budget: { tokens: 50000 } } }]);
  expect(screen.getByTestId('story-notice')).toHaveTextContent('bmad/1-3-pay');
  expect(screen.getByTestId('story-status')).toHaveTextContent('in-progress');
  expect(screen.getByTestId('story-run')).toHaveAttribute('data-status', 'queued');

  // The run works, then writes the story's status: the board follows without a click.
  findStory('1-3-pay').run = { id: 'run_new', status: 'running' };
  await waitFor(() => expect(screen.getByTestId('story-run')).toHaveAttribute('data-status', 'running'));
  const s = findStory('1-3-pay');
  s.status = 'review';
  s.run = { id: 'run_new', status: 'complete' };
  runs.run_new = { status: 'complete', result: { status: 'review', reason: 'Implemented; tests pass.' }, conversationId: 'c_new' };
  await waitFor(() => expect(screen.getByTestId('story-status')).toHaveTextContent('review'));
  expect(await screen.findByTestId('run-reason')).toHaveTextContent('Implemented; tests pass.');
  expect(screen.getByTestId('workspace-diff')).toHaveTextContent('const total = sum(items);');

  // Back on the board (Escape), the card is in review and the focus is on it; polling has stopped.
  await userEvent.keyboard('{Escape}');
  await waitFor(() => expect(screen.queryByTestId('story-detail')).toBeNull());
  expect(cardsIn('review')).toEqual(['1-2-cart', '1-3-pay']);
  expect(within(lane('review')).getByRole('button', { name: 'Pay for the cart' })).toHaveFocus();
  const reads = calls.filter((c) => c.url === '/api/projects/shop/board').length;
  await act(() => new Promise((r) => setTimeout(r, 200)));
  expect(calls.filter((c) => c.url === '/api/projects/shop/board').length).toBe(reads);
});

it('says why a start is refused, and changes nothing', async () => {
  refusal = { url: /\/start$/, status: 409, body: { success: false, code: 'E_STORY_BUSY', error: 'busy' } };
  render(<Board projectId="shop" role="owner" agents={[]} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('backlog')).getByRole('button', { name: 'Search the catalog' }));
  await userEvent.click(await screen.findByTestId('story-start'));
  await userEvent.click(screen.getByTestId('start-go'));
  expect(await screen.findByText(/A run is already working on this story/)).toBeInTheDocument();
  expect(screen.getByTestId('story-status')).toHaveTextContent('backlog');
  refusal = { url: /\/start$/, status: 402, body: { success: false, code: 'E_BUDGET', error: 'The monthly token budget (1,000,000) is spent.' } };
  await userEvent.click(screen.getByTestId('start-go'));
  expect(await screen.findByText(/The project’s budget is spent: The monthly token budget/)).toBeInTheDocument();
  await userEvent.click(within(screen.getByTestId('start-story-dialog')).getByRole('button', { name: 'Cancel' }));
  expect(screen.getByTestId('story-status')).toHaveTextContent('backlog');
});

it('moves a story with the status select, and the card lands in its new lane', async () => {
  render(<Board projectId="shop" role="editor" agents={[]} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('backlog')).getByRole('button', { name: 'Search the catalog' }));
  const select = await screen.findByTestId('story-move-select');
  expect(screen.getByTestId('story-move')).toBeDisabled();
  await userEvent.selectOptions(select, 'ready-for-dev');
  await userEvent.click(screen.getByTestId('story-move'));
  await waitFor(() => expect(screen.getByTestId('story-status')).toHaveTextContent('ready-for-dev'));
  expect(methodsOf(/\/board\/stories\/[^/]+$/)).toEqual([{ url: '/api/projects/shop/board/stories/2-1-search', method: 'PATCH', body: { status: 'ready-for-dev' } }]);
  await userEvent.click(screen.getByTestId('story-back'));
  expect(cardsIn('backlog')).toEqual([]);
  expect(cardsIn('ready-for-dev')).toEqual(['1-3-pay', '2-1-search']);
});

it('merges a story from review; a conflict shows the paths and keeps it in review', async () => {
  render(<Board projectId="shop" role="editor" agents={[]} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('review')).getByRole('button', { name: 'Add items to the cart' }));
  expect(await screen.findByTestId('run-reason')).toHaveTextContent('All acceptance criteria met.');
  refusal = { url: /\/merge$/, status: 409, body: { success: false, code: 'E_MERGE_CONFLICT', error: 'conflict', paths: ['src/cart.js', 'README.md'] } };
  await userEvent.click(screen.getByTestId('story-merge'));
  await userEvent.click(screen.getByTestId('confirm-button'));
  const alert = await screen.findByTestId('story-error');
  expect(alert).toHaveTextContent('the story stays in review');
  expect(within(screen.getByTestId('conflict-paths')).getAllByRole('listitem').map((li) => li.textContent)).toEqual(['src/cart.js', 'README.md']);
  expect(screen.getByTestId('story-status')).toHaveTextContent('review');
  expect(screen.getByTestId('story-merge')).toBeInTheDocument();

  refusal = null;
  await userEvent.click(screen.getByTestId('story-merge'));
  await userEvent.click(screen.getByTestId('confirm-button'));
  await waitFor(() => expect(screen.getByTestId('story-status')).toHaveTextContent('done'));
  expect(screen.getByTestId('story-notice')).toHaveTextContent('Merged at fffffff: the story is done.');
  expect(screen.queryByTestId('story-merge')).toBeNull();
  expect(methodsOf(/\/merge$/).map((c) => c.url)).toEqual(['/api/projects/shop/workspaces/ws_cart/merge', '/api/projects/shop/workspaces/ws_cart/merge']);
});

it('in pull-request mode, opens the story’s merge request from review, then offers to update it; the card links it with its checks', async () => {
  board.pullRequests = { forge: 'gitlab' };
  render(<Board projectId="shop" role="editor" agents={[]} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('review')).getByRole('button', { name: 'Add items to the cart' }));
  const publish = await screen.findByTestId('story-publish');
  expect(publish).toHaveTextContent('Open merge request');
  expect(screen.queryByTestId('story-pull-request')).toBeNull();
  await userEvent.click(publish);
  expect(await screen.findByTestId('story-notice')).toHaveTextContent('Opened merge request !4 from bmad/1-2-cart.');
  await waitFor(() => expect(screen.getByTestId('story-publish')).toHaveTextContent('Update merge request'));
  const link = within(screen.getByTestId('story-pull-request')).getByTestId('pull-request-link');
  expect(link).toHaveTextContent('!4 open · checks running');
  expect(link).toHaveAttribute('href', 'https://gitlab.example.com/team/shop/-/merge_requests/4');
  expect(screen.getByTestId('story-pull-request')).toHaveTextContent('pipeline #9');
  expect(methodsOf(/\/publish$/).map((c) => c.url)).toEqual(['/api/projects/shop/workspaces/ws_cart/publish']);
  await userEvent.click(screen.getByTestId('story-back'));
  expect(within(lane('review')).getByTestId('pull-request-link')).toHaveTextContent('!4 open');
});

it('offers no pull request when the remote is not in pull-request mode', async () => {
  render(<Board projectId="shop" role="editor" agents={[]} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('review')).getByRole('button', { name: 'Add items to the cart' }));
  await screen.findByTestId('story-merge');
  expect(screen.queryByTestId('story-publish')).toBeNull();
});

it('links a pull request and its checks only when they are web pages (a forge said javascript: or data:)', async () => {
  board.pullRequests = { forge: 'github' };
  findStory('1-2-cart').pullRequest = { number: 4, url: 'javascript:alert(document.cookie)', state: 'open', checks: { state: 'success', checks: [{ name: 'evil', state: 'success', url: 'data:text/html,<script>alert(1)</script>' }, { name: 'ci', state: 'success', url: 'https://ci.example.com/1' }] } };
  render(<Board projectId="shop" role="viewer" agents={[]} />);
  await screen.findAllByTestId('board-card');
  expect(within(lane('review')).getByTestId('pull-request-link')).not.toHaveAttribute('href');
  await userEvent.click(within(lane('review')).getByRole('button', { name: 'Add items to the cart' }));
  const detail = await screen.findByTestId('story-pull-request');
  expect(within(detail).getByTestId('pull-request-link')).not.toHaveAttribute('href');
  expect(within(detail).queryByRole('link', { name: 'evil' })).toBeNull();
  expect(within(detail).getByText('evil')).toBeInTheDocument();
  expect(within(detail).getByRole('link', { name: 'ci' })).toHaveAttribute('href', 'https://ci.example.com/1');
});

it('gives a viewer no pull request button in pull-request mode', async () => {
  board.pullRequests = { forge: 'github' };
  render(<Board projectId="shop" role="viewer" agents={[]} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('review')).getByRole('button', { name: 'Add items to the cart' }));
  await screen.findByTestId('story-detail');
  expect(screen.queryByTestId('story-publish')).toBeNull();
});

it('answers a run that waits on a person from the decisions list', async () => {
  render(<Board projectId="shop" role="editor" agents={[]} />);
  const decision = await screen.findByTestId('decision');
  await userEvent.click(within(decision).getByTestId('decision-send'));
  expect(within(decision).getByRole('alert')).toHaveTextContent('Write an answer first.');
  await userEvent.type(within(decision).getByLabelText('Your answer for 2-3-refund'), 'Use Stripe.');
  board.decisions = [];
  findStory('2-3-refund').run = { id: 'run_b', status: 'queued' };
  await userEvent.click(within(decision).getByTestId('decision-send'));
  await waitFor(() => expect(screen.queryByTestId('decision')).toBeNull());
  expect(methodsOf(/\/answer$/)).toEqual([{ url: '/api/runs/run_b/answer', method: 'POST', body: { text: 'Use Stripe.' } }]);
});

it('opens the story document through the page’s viewer', async () => {
  const opened: string[] = [];
  const openDocument = (p: string) => (p.startsWith('_bmad-output/') ? () => opened.push(p) : null);
  render(<Board projectId="shop" role="viewer" agents={[]} openDocument={openDocument} />);
  await screen.findAllByTestId('board-card');
  await userEvent.click(within(lane('done')).getByRole('button', { name: 'Log in with email' }));
  await userEvent.click(await screen.findByTestId('story-open-document'));
  expect(opened).toEqual(['_bmad-output/implementation-artifacts/1-1-login.md']);
  await userEvent.click(screen.getByTestId('story-back'));
  await userEvent.click(within(lane('other')).getByRole('button', { name: 'Ship the order' }));
  expect(await screen.findByText(/No story file was found/)).toBeInTheDocument();
});

it('points a project without a sprint status to sprint planning', async () => {
  board = { source: null, epics: [], decisions: [] };
  const started: string[][] = [];
  const { unmount } = render(<Board projectId="shop" role="editor" agents={agents} onStartAgent={(a, c) => started.push([a, c])} />);
  const empty = await screen.findByTestId('board-empty');
  expect(empty).toHaveTextContent('This project has no sprint yet');
  expect(screen.queryByTestId('board-column')).toBeNull();
  await userEvent.click(within(empty).getByTestId('board-plan-sprint'));
  expect(started).toEqual([['bmad-agent-pm', '*IR']]);
  unmount();
  // A viewer cannot start an agent: the step is named, not offered.
  render(<Board projectId="shop" role="viewer" agents={agents} onStartAgent={(a, c) => started.push([a, c])} />);
  expect(await screen.findByTestId('board-empty')).toHaveTextContent('Run sprint planning');
  expect(screen.queryByTestId('board-plan-sprint')).toBeNull();
});

it('leaves the budget line out on a server without budgets', async () => {
  const base = (globalThis as unknown as { fetch: jest.Mock }).fetch.getMockImplementation()!;
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init?: RequestInit) =>
    url.endsWith('/budget') ? (calls.push({ url, method: 'GET' }), json(404, { success: false, error: 'No API route GET /api/projects/shop/budget.', code: 'E_NOT_FOUND' })) : base(url, init),
  );
  render(<Board projectId="shop" role="owner" agents={[]} />);
  await screen.findAllByTestId('board-card');
  await waitFor(() => expect(calls.some((c) => c.url.endsWith('/budget'))).toBe(true));
  expect(screen.queryByTestId('budget-line')).toBeNull();
});

import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { AutopilotView, BoardStoryView, BoardView } from '@/types/api';
import { Board } from './Board';

type Call = { url: string; method: string; body?: Record<string, unknown> };
let calls: Call[];
let board: BoardView;
let autopilot: AutopilotView | null;
let autopilotStatus: number;
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });

/** The browser's EventSource as the board uses it: the test opens it and sends events through it. */
class FakeEventSource {
  static all: FakeEventSource[] = [];
  readonly listeners = new Map<string, Set<(m: MessageEvent) => void>>();
  onopen: (() => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  constructor(readonly url: string) {
    FakeEventSource.all.push(this);
  }
  addEventListener(type: string, fn: (m: MessageEvent) => void) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type)!.add(fn);
  }
  removeEventListener(type: string, fn: (m: MessageEvent) => void) {
    this.listeners.get(type)?.delete(fn);
  }
  close() {
    this.closed = true;
  }
  open() {
    this.onopen?.();
  }
  send(type: string, data: Record<string, unknown>) {
    for (const fn of this.listeners.get(type) ?? []) fn({ data: JSON.stringify({ type, at: new Date().toISOString(), ...data }) } as MessageEvent);
  }
}

const story = (key: string, title: string, status: string, extra: Partial<BoardStoryView> = {}): BoardStoryView => ({ key, title, status, file: null, ...extra });
const since = new Date(Date.now() - 60_000).toISOString();

beforeEach(() => {
  calls = [];
  FakeEventSource.all = [];
  autopilotStatus = 200;
  board = {
    source: { path: '_bmad-output/implementation-artifacts/sprint-status.yaml', branch: 'main', commit: 'a1b2c3d4e5f6' },
    epics: [
      {
        key: 'epic-1',
        status: 'in-progress',
        stories: [
          story('1-1-login', 'Log in', 'in-progress', { run: { id: 'run_1', status: 'running' } }),
          story('1-2-cart', 'Cart', 'review'),
          story('1-3-pay', 'Pay', 'review'),
          story('1-4-ship', 'Ship', 'review'),
          story('1-5-done', 'Done one', 'done'),
          story('1-6-held', 'Held one', 'in-progress'),
          story('1-7-next', 'Next', 'ready-for-dev'),
        ],
      },
    ],
    decisions: [],
  };
  autopilot = {
    enabled: true,
    maxParallel: 3,
    order: 'epic',
    reviewSkill: null,
    reviewModel: 'reviewer',
    maxReviewRounds: 2,
    testCommand: null,
    merge: { onRed: 'decide' },
    enabledBy: { id: 'u1', name: 'Ada' },
    running: 2,
    paused: null,
    stories: {
      '1-1-login': { step: 'building', round: 1, since },
      '1-2-cart': { step: 'reviewing', round: 2, since },
      '1-3-pay': { step: 'testing', round: 1, since },
      '1-4-ship': { step: 'queued-to-merge', round: 1, since },
      '1-5-done': { step: 'merged', round: 1, since },
      '1-6-held': { step: 'held', round: 1, since, note: 'the tests failed on the merge' },
    },
    problems: [{ kind: 'cycle', stories: ['2-1-a', '2-2-b'], text: 'These stories depend on each other.' }],
    decisions: [
      { id: 'd1', storyKey: '1-6-held', kind: 'test-gate', text: 'The tests failed on the merged result.', detail: 'not ok 3 - flags\n# fail 1', runId: null, actions: ['retry', 'skip', 'merge-anyway', 'stop'], since },
      { id: 'd2', storyKey: '1-2-cart', kind: 'question', text: 'Which payment provider?', detail: null, runId: 'run_2', actions: ['answer', 'skip'], since },
    ],
  } as AutopilotView;
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    const body = init.body ? (JSON.parse(String(init.body)) as Record<string, unknown>) : undefined;
    calls.push({ url, method, body });
    if (url === '/api/projects/shop/board') return json(200, { success: true, data: JSON.parse(JSON.stringify(board)) });
    if (url === '/api/projects/shop/autopilot' && method === 'GET') {
      if (autopilotStatus !== 200 || !autopilot) return json(autopilotStatus, { success: false, error: 'Not implemented', code: autopilotStatus === 501 ? 'E_NOT_IMPLEMENTED' : 'E_NOT_FOUND' });
      return json(200, { success: true, data: JSON.parse(JSON.stringify(autopilot)) });
    }
    if (url === '/api/projects/shop/autopilot' && method === 'PUT') {
      autopilot = { ...autopilot!, ...(body as Partial<AutopilotView>) };
      return json(200, { success: true, data: autopilot });
    }
    const m = /^\/api\/projects\/shop\/autopilot\/decisions\/([^/]+)$/.exec(url);
    if (m && method === 'POST') {
      autopilot = { ...autopilot!, decisions: autopilot!.decisions.filter((d) => d.id !== m[1]) };
      return json(200, { success: true, data: { ok: true } });
    }
    if (url === '/api/projects/shop/autopilot/stop' && method === 'POST') {
      autopilot = { ...autopilot!, enabled: false, running: 0 };
      return json(200, { success: true, data: { ok: true } });
    }
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

afterEach(() => {
  delete (globalThis as { EventSource?: unknown }).EventSource;
});

const card = (key: string) => screen.getAllByTestId('board-card').find((c) => c.dataset.key === key)!;
const reads = (url: string) => calls.filter((c) => c.url === url && c.method === 'GET').length;

it("shows each card's step, the autopilot's slots, its problems and decisions", async () => {
  render(<Board projectId="shop" role="viewer" agents={[]} />);
  const panel = await screen.findByTestId('autopilot-panel');
  expect(within(panel).getByTestId('autopilot-state')).toHaveTextContent('On: 2 of 3 slots in use, runs paid by Ada.');
  await waitFor(() => expect(within(card('1-1-login')).getByTestId('board-card-step')).toHaveTextContent('building'));
  expect(within(card('1-2-cart')).getByTestId('board-card-step')).toHaveTextContent('in review round 2');
  expect(within(card('1-3-pay')).getByTestId('board-card-step')).toHaveTextContent('testing the merge');
  expect(within(card('1-4-ship')).getByTestId('board-card-step')).toHaveTextContent('queued to merge');
  expect(within(card('1-5-done')).getByTestId('board-card-step')).toHaveTextContent('merged');
  expect(within(card('1-6-held')).getByTestId('board-card-step')).toHaveTextContent('held');
  expect(within(card('1-6-held')).getByTestId('board-card-step')).toHaveAttribute('title', 'the tests failed on the merge');
  expect(within(card('1-7-next')).queryByTestId('board-card-step')).toBeNull();
  expect(within(panel).getByTestId('autopilot-problems')).toHaveTextContent('These stories depend on each other. (2-1-a, 2-2-b)');
  const decisions = within(panel).getAllByTestId('autopilot-decision');
  expect(decisions.map((d) => d.dataset.id)).toEqual(['d1', 'd2']);
  expect(within(decisions[0]!).getByTestId('autopilot-decision-detail')).toHaveTextContent('not ok 3 - flags');
  // A viewer reads; nothing to press.
  expect(within(panel).queryAllByRole('button')).toEqual([]);
});

it('lets an owner switch it, set its slots, act on decisions and stop all', async () => {
  render(<Board projectId="shop" role="owner" agents={[]} />);
  const panel = await screen.findByTestId('autopilot-panel');
  await userEvent.click(within(panel).getByTestId('autopilot-slots-edit'));
  await userEvent.clear(within(panel).getByTestId('autopilot-slots'));
  await userEvent.type(within(panel).getByTestId('autopilot-slots'), '0');
  await userEvent.click(within(panel).getByTestId('autopilot-slots-save'));
  expect(within(panel).getByRole('alert')).toHaveTextContent('a whole number of 1 or more');
  await userEvent.clear(within(panel).getByTestId('autopilot-slots'));
  await userEvent.type(within(panel).getByTestId('autopilot-slots'), '4');
  await userEvent.click(within(panel).getByTestId('autopilot-slots-save'));
  await waitFor(() => expect(within(panel).getByTestId('autopilot-state')).toHaveTextContent('2 of 4 slots in use'));
  expect(calls.filter((c) => c.method === 'PUT').map((c) => c.body)).toEqual([{ maxParallel: 4 }]);

  const held = within(panel).getAllByTestId('autopilot-decision')[0]!;
  expect(within(held).getAllByRole('button').map((b) => b.textContent?.trim())).toEqual(['Retry', 'Skip the story', 'Merge anyway', 'Stop']);
  await userEvent.click(within(held).getByRole('button', { name: 'Retry' }));
  await waitFor(() => expect(within(panel).getAllByTestId('autopilot-decision').map((d) => d.dataset.id)).toEqual(['d2']));
  expect(calls.find((c) => c.url === '/api/projects/shop/autopilot/decisions/d1')?.body).toEqual({ action: 'retry' });

  const question = within(panel).getByTestId('autopilot-decision');
  await userEvent.click(within(question).getByRole('button', { name: 'Answer' }));
  await userEvent.type(within(question).getByTestId('autopilot-answer'), 'Use Stripe.');
  await userEvent.click(within(question).getByTestId('autopilot-answer-send'));
  await waitFor(() => expect(within(panel).queryByTestId('autopilot-decisions')).toBeNull());
  expect(calls.find((c) => c.url === '/api/projects/shop/autopilot/decisions/d2')?.body).toEqual({ action: 'answer', answer: 'Use Stripe.' });

  await userEvent.click(within(panel).getByTestId('autopilot-stop'));
  await waitFor(() => expect(within(panel).getByTestId('autopilot-state')).toHaveTextContent('Off'));
  expect(calls.some((c) => c.url === '/api/projects/shop/autopilot/stop' && c.method === 'POST')).toBe(true);
  await userEvent.click(within(panel).getByTestId('autopilot-toggle'));
  await waitFor(() => expect(calls.filter((c) => c.method === 'PUT').map((c) => c.body)).toEqual([{ maxParallel: 4 }, { enabled: true }]));
  await waitFor(() => expect(within(panel).getByTestId('autopilot-state')).toHaveTextContent('On'));
});

it('leaves the panel out where the server has no autopilot (404 or 501), the board as before', async () => {
  for (const status of [404, 501]) {
    autopilotStatus = status;
    const { unmount } = render(<Board projectId="shop" role="owner" agents={[]} />);
    await screen.findAllByTestId('board-card');
    await waitFor(() => expect(reads('/api/projects/shop/autopilot')).toBeGreaterThan(0));
    expect(screen.queryByTestId('autopilot-panel')).toBeNull();
    expect(screen.queryByTestId('board-card-step')).toBeNull();
    expect(screen.queryByRole('alert')).toBeNull();
    unmount();
  }
});

it('moves cards when the event stream says so, without polling while it is open', async () => {
  (globalThis as { EventSource?: unknown }).EventSource = FakeEventSource;
  // A run is active, so without events the board would be read every 30 ms.
  render(<Board projectId="shop" role="viewer" agents={[]} pollMs={30} slowPollMs={3_600_000} />);
  await screen.findByTestId('autopilot-panel');
  const source = FakeEventSource.all[0]!;
  expect(source.url).toBe('/api/projects/shop/events');
  act(() => source.open());
  await waitFor(() => expect(screen.getByTestId('board-source')).toHaveTextContent('live'));
  const boardReads = reads('/api/projects/shop/board');
  await new Promise((r) => setTimeout(r, 200));
  expect(reads('/api/projects/shop/board')).toBe(boardReads);

  // The autopilot moves 1-2-cart on and 1-1-login to review: one burst of events, one read.
  autopilot = { ...autopilot!, stories: { ...autopilot!.stories, '1-2-cart': { step: 'queued-to-merge', round: 2, since }, '1-1-login': { step: 'reviewing', round: 1, since } } };
  board.epics[0]!.stories[0] = story('1-1-login', 'Log in', 'review', { run: { id: 'run_1', status: 'complete' } });
  act(() => {
    source.send('story', { storyKey: '1-1-login' });
    source.send('run', { runId: 'run_1' });
    source.send('autopilot', {});
  });
  await waitFor(() => expect(within(card('1-2-cart')).getByTestId('board-card-step')).toHaveTextContent('queued to merge'));
  expect(card('1-1-login').dataset.status).toBe('review');
  expect(within(card('1-1-login')).getByTestId('board-card-step')).toHaveTextContent('in review round 1');
  expect(reads('/api/projects/shop/board')).toBe(boardReads + 1);

  // The stream lost: the board polls again while runs work.
  board.epics[0]!.stories[0] = story('1-1-login', 'Log in', 'review', { run: { id: 'run_9', status: 'running' } });
  act(() => source.send('run', { runId: 'run_9' }));
  await waitFor(() => expect(card('1-1-login').dataset.run).toBe('running'));
  const before = reads('/api/projects/shop/board');
  act(() => source.onerror?.());
  await waitFor(() => expect(reads('/api/projects/shop/board')).toBeGreaterThan(before + 1));
});

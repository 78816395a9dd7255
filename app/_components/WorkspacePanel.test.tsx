import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { WorkspacePanel } from './WorkspacePanel';

// Rendering a thousand diff lines takes a while on a loaded machine.
jest.setTimeout(90_000);

type Call = { url: string; method: string };
let calls: Call[];
let mergeAnswer: { status: number; body: unknown };
let mergeGate: Promise<void> | null;
/** The workspace the detail route answers with (tests change it). */
let detail: Record<string, unknown>;
/** Answers of the detail route in turn (the last one repeats), when a test sets them. */
let details: Record<string, unknown>[] | null;
let commandResult: Record<string, unknown>;
let command: string;
let diffText: string;
let cut: boolean;
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });

const ws = {
  id: 'ws_1',
  name: 'fix-sum',
  branch: 'bmad/fix-sum',
  base: 'main',
  baseCommit: 'c'.repeat(40),
  status: 'open',
  createdBy: 'Ada Lovelace',
  setup: { status: 'ok', exitCode: 0, output: 'added 12 packages', durationMs: 4200, at: '2026-01-01T00:00:00Z' },
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
  head: 'd'.repeat(40),
  ahead: 1,
  behind: 0,
  files: [{ path: 'src/sum.js', status: 'modified', additions: 1000, deletions: 1 }],
  commits: [{ sha: 'd'.repeat(40), subject: 'Fix sum of negatives', author: 'Ada Lovelace', date: '2026-01-01T00:00:00Z' }],
};

function bigDiff(n: number): string {
  const lines = ['diff --git a/src/sum.js b/src/sum.js', 'index 111..222 100644', '--- a/src/sum.js', '+++ b/src/sum.js', `@@ -1,1 +1,${n} @@`, '-module.exports = (a, b) => a - b;'];
  for (let i = 0; i < n; i++) lines.push(`+const line${i} = ${i};`);
  return lines.join('\n') + '\n';
}

beforeEach(() => {
  calls = [];
  mergeGate = null;
  detail = ws;
  details = null;
  command = 'npm test';
  commandResult = { exit_code: 0, stdout: 'PASS sum.test.js', stderr: '', duration_ms: 1500, stopped: null };
  diffText = bigDiff(1000);
  cut = false;
  mergeAnswer = { status: 200, body: { success: true, data: { workspace: { ...ws, status: 'merged' }, commit: 'e'.repeat(40), fastForward: true, checkoutUpdated: true } } };
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    calls.push({ url, method });
    if (url === '/api/projects/shop/workspaces/ws_1' && method === 'GET') return json(200, { success: true, data: details ? (details.length > 1 ? details.shift() : details[0]) : detail });
    if (url.startsWith('/api/projects/shop/workspaces/ws_1/diff')) return json(200, { success: true, data: { diff: diffText, cut, bytes: diffText.length } });
    if (url === '/api/projects/shop/workspaces/ws_1/merge') {
      await mergeGate;
      return json(mergeAnswer.status, mergeAnswer.body);
    }
    if (url.startsWith('/api/conversations?')) {
      return json(200, {
        success: true,
        data: {
          items: [
            { id: 'c1', agentId: 'dev', title: 'Fix the sum', createdAt: ws.createdAt, updatedAt: ws.createdAt, status: 'idle', messageCount: 2, workspaceId: 'ws_1' },
            { id: 'c2', agentId: 'pm', title: 'Elsewhere', createdAt: ws.createdAt, updatedAt: ws.createdAt, status: 'idle', messageCount: 2 },
          ],
        },
      });
    }
    if (url === '/api/conversations/c1') {
      return json(200, {
        success: true,
        data: {
          id: 'c1',
          agentId: 'dev',
          title: 'Fix the sum',
          workspaceId: 'ws_1',
          messages: [
            {
              id: 'm1',
              role: 'assistant',
              content: '',
              timestamp: ws.createdAt,
              functionCalls: [
                { id: 't1', name: 'edit_file', arguments: { file_path: '{project-root}/src/sum.js' }, result: { ok: true } },
                { id: 't2', name: 'run_command', arguments: { command }, result: commandResult },
              ],
            },
          ],
        },
      });
    }
    if (url.startsWith('/api/runs')) return json(200, { success: true, data: { items: [] } });
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

it("shows the workspace's commits, files, setup, conversations and commands; a file's diff is paged", async () => {
  const onOpen = jest.fn();
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} onOpenConversation={onOpen} />);
  const page = await screen.findByTestId('workspace-page');
  expect(page).toHaveTextContent('Branch bmad/fix-sum from main at ccccccc');
  expect(page).toHaveTextContent('1 ahead, 0 behind main');
  expect(page).toHaveTextContent('made by Ada Lovelace');
  expect(screen.getByTestId('workspace-commits')).toHaveTextContent('ddddddd Fix sum of negatives — Ada Lovelace');
  expect(screen.getByTestId('workspace-files')).toHaveTextContent('src/sum.js modified +1000 −1');
  expect(screen.getByTestId('workspace-setup')).toHaveTextContent('Setup succeeded (exit code 0) · 4.2 s');
  // Only the workspace's own conversation, and the command from its stored tool calls.
  await userEvent.click(await screen.findByRole('button', { name: 'Fix the sum' }));
  expect(onOpen).toHaveBeenCalledWith('c1');
  expect(screen.queryByText('Elsewhere')).toBeNull();
  const entry = await screen.findByTestId('command-entry');
  expect(entry).toHaveTextContent('npm test exit code 0 · 1.5 s');
  await userEvent.click(within(entry).getByText('npm test'));
  expect(within(entry).getByText('PASS sum.test.js')).toBeVisible();

  await userEvent.click(screen.getByTestId('workspace-file'));
  const file = await screen.findByTestId('diff-file');
  expect(calls.some((c) => c.url === '/api/projects/shop/workspaces/ws_1/diff?path=src%2Fsum.js')).toBe(true);
  // 1 hunk line + 1 removed + 1000 added: 400 shown, then 800, then all.
  const shown = () => file.querySelectorAll('.diff-line').length;
  expect(shown()).toBe(400);
  expect(file.querySelectorAll('.diff-del')).toHaveLength(1);
  expect(file.querySelector('.diff-del')).toHaveTextContent('removed: module.exports = (a, b) => a - b;');
  await userEvent.click(screen.getByTestId('diff-show-more'));
  expect(shown()).toBe(800);
  await userEvent.click(screen.getByTestId('diff-show-more'));
  expect(shown()).toBe(1002);
  expect(screen.queryByTestId('diff-show-more')).toBeNull();
  expect(screen.queryByTestId('diff-cut')).toBeNull();
});

it('says when the server cut the diff at 1 MB', async () => {
  cut = true;
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  await userEvent.click(await screen.findByTestId('workspace-all-diff'));
  expect(await screen.findByTestId('diff-cut')).toHaveTextContent('cut at 1 MB');
  expect(calls.some((c) => c.url === '/api/projects/shop/workspaces/ws_1/diff')).toBe(true);
});

it('merges only after the confirmation; Escape cancels it', async () => {
  const onChanged = jest.fn();
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} onChanged={onChanged} />);
  await userEvent.click(await screen.findByTestId('workspace-merge'));
  expect(screen.getByTestId('confirm-dialog')).toHaveTextContent('Merge bmad/fix-sum?');
  await userEvent.keyboard('{Escape}');
  expect(screen.queryByTestId('confirm-dialog')).toBeNull();
  expect(calls.some((c) => c.method === 'POST')).toBe(false);

  await userEvent.click(screen.getByTestId('workspace-merge'));
  await userEvent.click(screen.getByTestId('confirm-button'));
  expect(await screen.findByTestId('workspace-notice')).toHaveTextContent('Merged into main at eeeeeee (fast-forward); the project folder has the changes.');
  expect(calls.filter((c) => c.method === 'POST').map((c) => c.url)).toEqual(['/api/projects/shop/workspaces/ws_1/merge']);
  expect(onChanged).toHaveBeenCalled();
});

it('shows a merge conflict with its paths, and a dirty base in words', async () => {
  mergeAnswer = { status: 409, body: { success: false, code: 'E_MERGE_CONFLICT', error: 'The merge conflicts.', paths: ['src/sum.js', 'README.md'] } };
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  await userEvent.click(await screen.findByTestId('workspace-merge'));
  await userEvent.click(screen.getByTestId('confirm-button'));
  const err = await screen.findByTestId('workspace-action-error');
  expect(err).toHaveTextContent('The merge into main conflicts; nothing was changed.');
  expect(within(screen.getByTestId('conflict-paths')).getAllByRole('listitem').map((li) => li.textContent)).toEqual(['src/sum.js', 'README.md']);

  mergeAnswer = { status: 409, body: { success: false, code: 'E_BASE_DIRTY', error: 'dirty' } };
  await userEvent.click(screen.getByTestId('workspace-merge'));
  await userEvent.click(screen.getByTestId('confirm-button'));
  await waitFor(() => expect(screen.getByTestId('workspace-action-error')).toHaveTextContent('The project folder has uncommitted changes, so nothing was merged.'));
  expect(screen.queryByTestId('conflict-paths')).toBeNull();
});

it("shows a running setup's output live with the time since it started, and holds Merge and Discard until it ends", async () => {
  const startedAt = new Date(Date.now() - 65_000).toISOString();
  const running = (output: string) => ({ ...ws, ahead: 0, commits: [], files: [], setup: { status: 'running', startedAt, output } });
  details = [running('step 1\n'), running('step 1\nstep 2\n'), { ...ws, setup: { status: 'ok', exitCode: 0, output: 'step 1\nstep 2\nstep 3\n', durationMs: 68_000, startedAt, at: new Date().toISOString() } }];
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  const setup = await screen.findByTestId('workspace-setup');
  // Open while it runs: the output so far, and the clock from its start.
  expect(setup).toHaveAttribute('open');
  expect(screen.getByTestId('setup-output')).toHaveTextContent('step 1');
  expect(setup).toHaveTextContent(/Setup running for 1:0[5-9] — its output so far/);
  const merge = screen.getByTestId('workspace-merge');
  expect(merge).toBeDisabled();
  expect(screen.getByTestId('workspace-discard')).toBeDisabled();
  expect(merge).toHaveAccessibleDescription('Merge and Discard wait until the setup line ends (its output is below).');
  // Read again about every second: the next line comes, then the end.
  await waitFor(() => expect(screen.getByTestId('setup-output')).toHaveTextContent('step 2'), { timeout: 4000 });
  await waitFor(() => expect(screen.getByTestId('workspace-setup')).toHaveTextContent('Setup succeeded (exit code 0) · 1 min 8 s'), { timeout: 4000 });
  expect(screen.getByTestId('setup-output')).toHaveTextContent('step 3');
  expect(screen.getByTestId('workspace-merge')).toBeEnabled();
  expect(screen.getByTestId('workspace-discard')).toBeEnabled();
  expect(screen.queryByTestId('workspace-wait')).toBeNull();
  // It stops asking once the setup ended.
  const reads = calls.filter((c) => c.url === '/api/projects/shop/workspaces/ws_1').length;
  await new Promise((r) => setTimeout(r, 1500));
  expect(calls.filter((c) => c.url === '/api/projects/shop/workspaces/ws_1').length).toBe(reads);
});

it('takes the start of a running setup from its outcome when the server sends no startedAt', async () => {
  detail = { ...ws, setup: { status: 'running', at: new Date(Date.now() - 3_000).toISOString() } };
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  expect(await screen.findByTestId('setup-elapsed')).toHaveTextContent(/^0:0[3-6]$/);
  expect(screen.getByTestId('setup-output')).toHaveTextContent('(no output yet)');
});

it('says where a merged workspace went, never how far ahead it was', async () => {
  detail = { ...ws, status: 'merged', ahead: 1, behind: 0, mergedCommit: 'e'.repeat(40), mergedInto: 'main', mergedAt: new Date().toISOString(), mergedBy: 'Grace Hopper' };
  const { unmount } = render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  const page = await screen.findByTestId('workspace-page');
  expect(screen.getByTestId('workspace-state')).toHaveTextContent(/^Merged into main at eeeeeee .+ by Grace Hopper$/);
  expect(page).not.toHaveTextContent('ahead');
  expect(screen.queryByTestId('workspace-merge')).toBeNull();
  unmount();
  // From a server without the merge's details: the base and the commit it has.
  detail = { ...ws, status: 'merged', ahead: 1, behind: 0, mergedCommit: 'e'.repeat(40) };
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  expect(await screen.findByTestId('workspace-state')).toHaveTextContent(/^Merged into main at eeeeeee$/);
});

it('shows that a merge is working while it runs, then its outcome', async () => {
  let open!: () => void;
  mergeGate = new Promise<void>((r) => (open = r));
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  await userEvent.click(await screen.findByTestId('workspace-merge'));
  await userEvent.click(screen.getByTestId('confirm-button'));
  expect(await screen.findByTestId('confirm-busy')).toHaveTextContent('Merging bmad/fix-sum into main…');
  expect(screen.getByTestId('confirm-button')).toBeDisabled();
  expect(screen.getByTestId('workspace-merge')).toBeDisabled();
  expect(screen.getByTestId('workspace-merge')).toHaveTextContent('Merging…');
  expect(screen.getByTestId('workspace-discard')).toBeDisabled();
  open();
  expect(await screen.findByTestId('workspace-notice')).toHaveTextContent('Merged into main at eeeeeee (fast-forward)');
  expect(screen.queryByTestId('confirm-dialog')).toBeNull();
  expect(screen.getByTestId('workspace-notice')).toHaveFocus();
});

it('names a stale git lock and what to do about it, not uncommitted changes', async () => {
  mergeAnswer = { status: 409, body: { success: false, code: 'E_GIT_LOCKED', error: 'A git lock file is left in the project repository.', lock: '.git/index.lock' } };
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  await userEvent.click(await screen.findByTestId('workspace-merge'));
  await userEvent.click(screen.getByTestId('confirm-button'));
  const err = await screen.findByTestId('workspace-action-error');
  expect(err).toHaveTextContent('Git’s lock file .git/index.lock is in the project repository, so nothing was merged');
  expect(err).toHaveTextContent('When no git runs on the project, delete .git/index.lock, then merge again.');
  expect(err).not.toHaveTextContent('uncommitted');
});

it('lists commands as they ran (spaces kept) with their output in order', async () => {
  command = "sed -n 's/^  1-1/X/p' notes.txt";
  commandResult = {
    command,
    exit_code: 0,
    stdout: 'a\nc\n',
    stderr: 'b\n',
    duration_ms: 20,
    transcript: [
      { stream: 'stdout', text: 'a\n' },
      { stream: 'stderr', text: 'b\n' },
      { stream: 'stdout', text: 'c\n' },
    ],
  };
  render(<WorkspacePanel projectId="shop" workspaceId="ws_1" onBack={() => undefined} />);
  const entry = await screen.findByTestId('command-entry');
  expect(within(entry).getByTestId('command-entry-line').textContent).toBe(command);
  await userEvent.click(within(entry).getByTestId('command-entry-line'));
  const out = within(entry).getByTestId('command-output');
  expect([...out.querySelectorAll('[data-stream]')].map((e) => e.getAttribute('data-stream'))).toEqual(['stdout', 'stderr', 'stdout']);
  expect(entry).not.toHaveTextContent('Errors');
});

import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ProjectBuild } from './ProjectBuild';

type Call = { url: string; method: string; body?: unknown };
let calls: Call[];
let build: { enabled: boolean; baseBranch: string | null; setup: string | null; env: Record<string, string>; test: string | null; appendOnly: string[] };
let taken: Set<string>;
let putRefusal: { status: number; body: unknown } | null;
/** The list route's items in turn (the last one repeats), when a test sets them. */
let lists: unknown[][] | null;
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });

beforeEach(() => {
  calls = [];
  build = { enabled: false, baseBranch: null, setup: null, env: {}, test: null, appendOnly: [] };
  taken = new Set(['fix-login']);
  putRefusal = null;
  lists = null;
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    const body = init.body ? JSON.parse(String(init.body)) : undefined;
    calls.push({ url, method, body });
    if (url === '/api/projects/shop/build' && method === 'GET') return json(200, { success: true, data: build });
    if (url === '/api/projects/shop/build' && method === 'PUT') {
      if (putRefusal) return json(putRefusal.status, putRefusal.body);
      build = { ...build, ...body };
      return json(200, { success: true, data: build });
    }
    if (url === '/api/projects/shop/workspaces' && method === 'GET') {
      if (!build.enabled) return json(409, { success: false, code: 'E_BUILD_DISABLED', error: 'Build is off.' });
      if (lists) return json(200, { success: true, data: lists.length > 1 ? lists.shift() : lists[0] });
      return json(200, {
        success: true,
        data: [{ id: 'ws_1', name: 'fix-login', branch: 'bmad/fix-login', base: 'main', baseCommit: 'a'.repeat(40), status: 'open', createdBy: { id: 'u1', name: 'Ada' }, ahead: 2, behind: 1 }],
      });
    }
    if (url === '/api/projects/shop/workspaces' && method === 'POST') {
      if (taken.has(body.name)) return json(409, { success: false, code: 'E_CONFLICT', error: 'taken' });
      return json(201, { success: true, data: { id: 'ws_2', name: body.name, branch: `bmad/${body.name}`, base: 'main', baseCommit: 'b'.repeat(40), status: 'open', createdBy: 'Ada' } });
    }
    if (url.startsWith('/api/projects/shop/workspaces/ws_2')) return json(200, { success: true, data: { id: 'ws_2', name: 'new-one', branch: 'bmad/new-one', base: 'main', baseCommit: 'b'.repeat(40), status: 'open', createdBy: 'Ada', head: 'b'.repeat(40), ahead: 0, behind: 0, files: [], commits: [] } });
    if (url.startsWith('/api/conversations')) return json(200, { success: true, data: { items: [] } });
    if (url.startsWith('/api/runs')) return json(200, { success: true, data: { items: [] } });
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

const repo = { branch: 'main', head: '0123456789abcdef', clean: false };

it('shows the repository and the settings read-only, then an owner enables build with a base branch, a setup line and variables', async () => {
  render(<ProjectBuild projectId="shop" repository={repo} />);
  expect(screen.getByTestId('build-repository')).toHaveTextContent('Git repository: branch main at 0123456, with uncommitted changes (dirty).');
  expect(await screen.findByTestId('build-state')).toHaveTextContent('Build is off');
  // Off: no workspace list is asked for.
  expect(calls.some((c) => c.url.endsWith('/workspaces'))).toBe(false);

  await userEvent.click(screen.getByTestId('build-edit'));
  await userEvent.click(screen.getByTestId('build-enabled'));
  await userEvent.type(screen.getByTestId('build-base'), 'develop');
  await userEvent.type(screen.getByTestId('build-setup'), 'npm ci');
  await userEvent.click(screen.getByRole('button', { name: /Add a variable/ }));
  await userEvent.type(screen.getByLabelText('Name of variable 1'), 'NODE_ENV');
  await userEvent.type(screen.getByLabelText('Value of variable 1'), 'test');
  await userEvent.type(screen.getByTestId('build-test'), 'npm test');
  await userEvent.type(screen.getByTestId('build-append-only'), 'docs/decisions.md{enter}{enter} notes/log.md ');
  await userEvent.click(screen.getByTestId('build-save'));

  await waitFor(() => expect(screen.getByTestId('build-state')).toHaveTextContent('Build is enabled'));
  expect(calls.find((c) => c.method === 'PUT')?.body).toEqual({
    enabled: true,
    baseBranch: 'develop',
    setup: 'npm ci',
    env: { NODE_ENV: 'test' },
    test: 'npm test',
    appendOnly: ['docs/decisions.md', 'notes/log.md'],
  });
  expect(screen.getByTestId('build-test-shown')).toHaveTextContent('npm test');
  expect(screen.getByTestId('build-append-only-shown')).toHaveTextContent('docs/decisions.mdnotes/log.md');
  expect(screen.getByTestId('build-settings')).toHaveTextContent('develop');
  expect(screen.getByTestId('build-settings')).toHaveTextContent('NODE_ENV=test');
  // Enabled: the workspaces come, with status, ahead/behind and who made them.
  const item = await screen.findByTestId('workspace-item');
  expect(item).toHaveTextContent('fix-login');
  expect(item).toHaveTextContent('open');
  expect(item).toHaveTextContent('2 ahead, 1 behind main');
  expect(item).toHaveTextContent('made by Ada');
});

it('says why a save was refused: a field named by the server, or someone who is not the owner', async () => {
  build.enabled = true;
  render(<ProjectBuild projectId="shop" repository={repo} />);
  await userEvent.click(await screen.findByTestId('build-edit'));
  putRefusal = { status: 400, body: { success: false, code: 'E_VALIDATION', error: 'Invalid baseBranch: not a branch name', field: 'baseBranch' } };
  await userEvent.type(screen.getByTestId('build-base'), 'a..b');
  await userEvent.click(screen.getByTestId('build-save'));
  expect(await screen.findByText('Invalid baseBranch: not a branch name', { selector: '.field-error' })).toBeTruthy();
  expect(screen.getByTestId('build-base')).toHaveAttribute('aria-invalid', 'true');

  putRefusal = { status: 403, body: { success: false, code: 'E_FORBIDDEN', error: 'Forbidden' } };
  await userEvent.click(screen.getByTestId('build-save'));
  expect(await screen.findByRole('alert')).toHaveTextContent('Only the project’s owner or an admin can change the build settings.');
});

it('shows settings read-only to someone who may not change them, and says plainly when the folder is not a repository', async () => {
  render(<ProjectBuild projectId="shop" repository={null} canEdit={false} />);
  expect(screen.getByTestId('build-repository')).toHaveTextContent('not a git repository');
  await screen.findByTestId('build-state');
  expect(screen.queryByTestId('build-edit')).toBeNull();
  expect(screen.getByText('Only the project’s owner or an admin can change these.')).toBeTruthy();
});

it('makes a workspace: the name rule is explained, a wrong name and a taken one are said in words, Escape closes', async () => {
  build.enabled = true;
  render(<ProjectBuild projectId="shop" repository={repo} />);
  await userEvent.click(await screen.findByTestId('new-workspace'));
  let dialog = screen.getByTestId('new-workspace-dialog');
  expect(dialog).toHaveTextContent('Letters, digits, “.”, “_” and “-” only; it becomes the branch bmad/<name>.');
  expect(screen.getByTestId('workspace-name')).toHaveFocus();
  await userEvent.keyboard('{Escape}');
  expect(screen.queryByTestId('new-workspace-dialog')).toBeNull();

  await userEvent.click(screen.getByTestId('new-workspace'));
  dialog = screen.getByTestId('new-workspace-dialog');
  await userEvent.type(screen.getByTestId('workspace-name'), 'has space');
  await userEvent.click(screen.getByTestId('workspace-create'));
  expect(within(dialog).getByRole('alert')).toHaveTextContent('“has space” cannot be used');
  expect(calls.some((c) => c.method === 'POST')).toBe(false);

  await userEvent.clear(screen.getByTestId('workspace-name'));
  await userEvent.type(screen.getByTestId('workspace-name'), 'fix-login');
  await userEvent.click(screen.getByTestId('workspace-create'));
  await waitFor(() => expect(within(dialog).getByRole('alert')).toHaveTextContent('The name “fix-login” is taken'));

  await userEvent.clear(screen.getByTestId('workspace-name'));
  await userEvent.type(screen.getByTestId('workspace-name'), 'new-one');
  await userEvent.click(screen.getByTestId('workspace-create'));
  // The new workspace's page opens.
  expect(await screen.findByTestId('workspace-page')).toHaveTextContent('Workspace new-one');
  expect(calls.filter((c) => c.method === 'POST').map((c) => c.body)).toEqual([{ name: 'fix-login' }, { name: 'new-one' }]);
});

it('lists each workspace with its ahead/behind, a merged one with where it went, and a running setup by its state only', async () => {
  build.enabled = true;
  const item = (over: Record<string, unknown>) => ({ base: 'main', baseCommit: 'a'.repeat(40), status: 'open', createdBy: 'Ada', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', setup: null, ...over });
  const running = item({ id: 'ws_3', name: 'deps', branch: 'bmad/deps', ahead: 0, behind: 0, setup: { status: 'running', startedAt: new Date().toISOString() } });
  const rest = [
    item({ id: 'ws_1', name: 'fix-login', branch: 'bmad/fix-login', ahead: 3, behind: 2, setup: { status: 'ok', exitCode: 0, durationMs: 1200, at: '2026-01-01T00:00:00Z' } }),
    item({ id: 'ws_2', name: 'done-one', branch: 'bmad/done-one', status: 'merged', ahead: 0, behind: 0, mergedCommit: 'f'.repeat(40), mergedInto: 'main', mergedAt: new Date().toISOString(), mergedBy: 'Grace' }),
    item({ id: 'ws_4', name: 'old', branch: 'bmad/old', ahead: null, behind: null }),
  ];
  lists = [[running, ...rest], [{ ...running, setup: { status: 'failed', exitCode: 1, durationMs: 900 } }, ...rest]];
  render(<ProjectBuild projectId="shop" repository={repo} />);
  await waitFor(() => expect(screen.getAllByTestId('workspace-item')).toHaveLength(4));
  const [deps, open, merged, unknown] = screen.getAllByTestId('workspace-item');
  expect(within(deps!).getByTestId('workspace-item-setup')).toHaveTextContent('setup running');
  expect(open).toHaveTextContent('3 ahead, 2 behind main');
  expect(within(open!).queryByTestId('workspace-item-setup')).toBeNull();
  expect(within(merged!).getByTestId('workspace-item-state')).toHaveTextContent(/^Merged into main at fffffff .+ by Grace$/);
  expect(merged).not.toHaveTextContent('ahead');
  expect(unknown).not.toHaveTextContent('ahead');
  // While a setup runs the list is read again, and shows how it ended.
  await waitFor(() => expect(within(screen.getAllByTestId('workspace-item')[0]!).getByTestId('workspace-item-setup')).toHaveTextContent('setup failed (exit code 1)'), { timeout: 5000 });
});

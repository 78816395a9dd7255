import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { StartInWorkspaceDialog } from './StartInWorkspaceDialog';

const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });
const item = (over: Record<string, unknown>) => ({ base: 'main', baseCommit: 'a'.repeat(40), status: 'open', createdBy: 'Ada', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', setup: null, ahead: 0, behind: 0, ...over });

let lists: unknown[][];
let created: Record<string, unknown>;
let posts: number;

beforeEach(() => {
  posts = 0;
  created = item({ id: 'ws_9', name: 'fresh', branch: 'bmad/fresh', setup: { status: 'running', startedAt: new Date().toISOString() } });
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    if (url === '/api/projects/shop/workspaces' && method === 'GET') return json(200, { success: true, data: lists.length > 1 ? lists.shift() : lists[0] });
    if (url === '/api/projects/shop/workspaces' && method === 'POST') {
      posts++;
      return json(201, { success: true, data: created });
    }
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

it('chooses a workspace whose setup ended first, and holds Start with a reason while the chosen one’s setup runs', async () => {
  const busy = item({ id: 'ws_1', name: 'deps', branch: 'bmad/deps', setup: { status: 'running', startedAt: new Date().toISOString() } });
  const ready = item({ id: 'ws_2', name: 'ready', branch: 'bmad/ready', setup: { status: 'ok', exitCode: 0 } });
  lists = [[busy, ready], [busy, ready], [{ ...busy, setup: { status: 'ok', exitCode: 0 } }, ready]];
  const onChosen = jest.fn();
  render(<StartInWorkspaceDialog projectId="shop" agentName="Amelia" onCancel={() => undefined} onChosen={onChosen} />);
  expect(await screen.findByRole('radio', { name: /ready/ })).toBeChecked();
  expect(screen.getByRole('radio', { name: /deps/ })).toHaveAccessibleName(/deps .*bmad\/deps.* — setup running/);
  expect(screen.getByTestId('start-in-workspace-go')).toBeEnabled();

  await userEvent.click(screen.getByRole('radio', { name: /deps/ }));
  const go = screen.getByTestId('start-in-workspace-go');
  expect(go).toBeDisabled();
  expect(screen.getByTestId('start-in-workspace-wait')).toHaveTextContent('deps’s setup line is still running: the agent can start once it ends.');
  expect(go).toHaveAccessibleDescription(/still running/);
  // The list is read again until it ends; then Start goes to that workspace.
  await waitFor(() => expect(screen.getByTestId('start-in-workspace-go')).toBeEnabled(), { timeout: 8000 });
  expect(screen.queryByTestId('start-in-workspace-wait')).toBeNull();
  await userEvent.click(screen.getByTestId('start-in-workspace-go'));
  expect(onChosen).toHaveBeenCalledWith(expect.objectContaining({ id: 'ws_1' }));
});

it('keeps a new workspace chosen while its setup runs instead of starting the agent at once', async () => {
  lists = [[], [created]];
  const onChosen = jest.fn();
  render(<StartInWorkspaceDialog projectId="shop" agentName="Amelia" onCancel={() => undefined} onChosen={onChosen} />);
  await userEvent.type(await screen.findByTestId('start-workspace-name'), 'fresh');
  await userEvent.click(screen.getByTestId('start-in-workspace-go'));
  expect(await screen.findByTestId('start-in-workspace-wait')).toHaveTextContent('fresh’s setup line is still running');
  expect(screen.getByRole('radio', { name: /fresh/ })).toBeChecked();
  expect(posts).toBe(1);
  expect(onChosen).not.toHaveBeenCalled();
});

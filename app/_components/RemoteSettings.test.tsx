import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { RemoteSettings } from './RemoteSettings';

type Call = { url: string; method: string; body?: any };
let calls: Call[];
let remote: Record<string, unknown> | null;
const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });
const base = { branch: 'main', local: 'a'.repeat(40), remote: 'b'.repeat(40), ahead: 0, behind: 2, state: 'behind' };

beforeEach(() => {
  calls = [];
  remote = { url: 'https://git.example.com/team/shop.git', forge: 'gitea', apiUrl: null, mode: 'pull-request', username: null, tokenSet: true, webhookSecretSet: false, lastFetch: { at: new Date().toISOString(), ok: true, branch: 'main' }, statusBranch: null, base };
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    const body = init.body ? JSON.parse(String(init.body)) : undefined;
    calls.push({ url, method, body });
    if (url === '/api/projects/shop/remote' && method === 'GET') return json(200, { success: true, data: remote });
    if (url === '/api/projects/shop/remote' && method === 'PUT') {
      remote = body.url === null ? null : { ...remote, ...body, tokenSet: body.token === null ? false : body.token ? true : remote?.tokenSet, token: undefined };
      return json(200, { success: true, data: remote });
    }
    if (url === '/api/projects/shop/remote/fetch') {
      remote = { ...remote, base: { ...base, behind: 0, state: 'up-to-date' } };
      return json(200, { success: true, data: { branch: 'main', remoteHead: 'b'.repeat(40), local: 'fast-forwarded', base: { ...base, behind: 0, state: 'up-to-date' } } });
    }
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

it('shows the remote, how far the base is behind, and fetches', async () => {
  render(<RemoteSettings projectId="shop" canEdit={false} />);
  expect(await screen.findByTestId('remote-url-shown')).toHaveTextContent('https://git.example.com/team/shop.git');
  expect(screen.getByTestId('remote-settings')).toHaveTextContent('Gitea / Forgejo');
  expect(screen.getByTestId('remote-settings')).toHaveTextContent('token set');
  expect(screen.getByTestId('remote-base')).toHaveTextContent('2 commits behind the remote’s main');
  expect(screen.queryByTestId('remote-edit')).toBeNull();
  await userEvent.click(screen.getByTestId('remote-fetch'));
  await waitFor(() => expect(screen.getByTestId('remote-fetch-note')).toHaveTextContent('Fetched: the base is up to date with the remote’s main.'));
  expect(screen.getByTestId('remote-base')).toHaveTextContent('up to date');
});

it('lets an owner change it: the token is write-only (left empty: kept; typed: sent once)', async () => {
  render(<RemoteSettings projectId="shop" canEdit />);
  await userEvent.click(await screen.findByTestId('remote-edit'));
  expect(screen.getByTestId('remote-token')).toHaveValue('');
  await userEvent.click(screen.getByTestId('remote-mode-push'));
  await userEvent.click(screen.getByTestId('remote-save'));
  await waitFor(() => expect(screen.getByTestId('remote-settings')).toHaveTextContent('merges are pushed'));
  expect(calls.find((c) => c.method === 'PUT')?.body).toEqual({ url: 'https://git.example.com/team/shop.git', forge: 'gitea', apiUrl: null, mode: 'push' });
  await userEvent.click(screen.getByTestId('remote-edit'));
  await userEvent.type(screen.getByTestId('remote-token'), 'tok_new');
  await userEvent.click(screen.getByTestId('remote-save'));
  await waitFor(() => expect(calls.filter((c) => c.method === 'PUT')).toHaveLength(2));
  expect(calls.filter((c) => c.method === 'PUT')[1]!.body.token).toBe('tok_new');
  await waitFor(() => expect(screen.getByTestId('remote-settings')).not.toHaveTextContent('tok_new'));
});

it('offers an owner to set up a remote when there is none', async () => {
  remote = null;
  render(<RemoteSettings projectId="shop" canEdit />);
  await userEvent.click(await screen.findByTestId('remote-edit'));
  await userEvent.type(screen.getByTestId('remote-url'), 'https://github.com/team/shop.git');
  await userEvent.click(screen.getByTestId('remote-save'));
  await waitFor(() => expect(calls.find((c) => c.method === 'PUT')?.body).toEqual({ url: 'https://github.com/team/shop.git', apiUrl: null, mode: 'pull-request' }));
});

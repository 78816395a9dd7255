import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { NewProjectDialog } from './NewProjectDialog';

const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });
let posts: any[];
let polls: number;
let plan: ('running' | 'ready' | 'bare' | 'failed')[];

beforeEach(() => {
  posts = [];
  polls = 0;
  plan = ['running', 'running', 'ready'];
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    if (url === '/api/installer') return json(200, { success: true, data: [] });
    if (url === '/api/projects' && method === 'POST') {
      const body = JSON.parse(String(init.body));
      posts.push(body);
      if (body.git?.token === 'wrong') return json(422, { success: false, code: 'E_REMOTE_AUTH', error: '127.0.0.1 refused the credentials while reading the repository.' });
      return json(202, { success: true, data: { id: 'shop', clone: { status: 'running', url: body.git.url, branch: null, phase: 'connecting', percent: null, message: null, installed: null, startedAt: '', updatedAt: '' } } });
    }
    if (url === '/api/projects/shop') {
      const step = plan[Math.min(polls++, plan.length - 1)];
      const clone = { url: 'x', branch: 'main', message: null, startedAt: '', updatedAt: '' };
      if (step === 'running') return json(200, { success: true, data: { id: 'shop', clone: { ...clone, status: 'running', phase: 'receiving objects', percent: 40 + polls, installed: null } } });
      if (step === 'failed') return json(200, { success: true, data: { id: 'shop', clone: { ...clone, status: 'failed', phase: null, percent: null, installed: null, message: 'fatal: early EOF' } } });
      if (step === 'bare') return json(200, { success: true, data: { id: 'shop', clone: { ...clone, status: 'ready', phase: 'done', percent: 100, installed: false } } });
      return json(200, { success: true, data: { id: 'shop', name: 'Shop', agents: [], clone: { ...clone, status: 'ready', phase: 'done', percent: 100, installed: true } } });
    }
    return json(404, { success: false, error: 'not found', code: 'E_NOT_FOUND' });
  });
});

async function startClone(token = 'tok_1') {
  await userEvent.click(screen.getByTestId('source-git'));
  await userEvent.type(screen.getByTestId('git-url'), 'https://git.example.com/team/shop.git');
  await userEvent.type(screen.getByTestId('git-token'), token);
  await userEvent.click(screen.getByTestId('git-clone'));
}

it('clones a repository: git’s progress while it runs, then the project', async () => {
  const onCreated = jest.fn();
  render(<NewProjectDialog onCreated={onCreated} onCancel={() => undefined} />);
  await startClone();
  await waitFor(() => expect(screen.getByTestId('clone-progress')).toHaveTextContent(/Receiving objects: 4\d%/));
  await waitFor(() => expect(onCreated).toHaveBeenCalledWith(expect.objectContaining({ id: 'shop', name: 'Shop' })), { timeout: 5000 });
  expect(posts[0]).toEqual({ git: { url: 'https://git.example.com/team/shop.git', token: 'tok_1' } });
});

it('a refused token is shown at the token field; a failed clone says git’s words', async () => {
  render(<NewProjectDialog onCreated={() => undefined} onCancel={() => undefined} />);
  await startClone('wrong');
  expect(await screen.findByTestId('git-token-error')).toHaveTextContent('refused the credentials');
  plan = ['running', 'failed'];
  await userEvent.clear(screen.getByTestId('git-token'));
  await userEvent.type(screen.getByTestId('git-token'), 'tok_2');
  await userEvent.click(screen.getByTestId('git-clone'));
  expect(await screen.findByTestId('git-error', {}, { timeout: 5000 })).toHaveTextContent('The clone failed: fatal: early EOF');
});

it('a repository without a BMAD install goes on to the installer, into the clone', async () => {
  plan = ['bare'];
  render(<NewProjectDialog onCreated={() => undefined} onCancel={() => undefined} />);
  await startClone();
  expect(await screen.findByTestId('install-lead', {}, { timeout: 5000 })).toHaveTextContent('cloned as “shop” but holds no BMAD install');
  expect(screen.getByRole('button', { name: 'Install BMAD' })).toBeTruthy();
});

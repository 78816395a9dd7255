import { configure, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { AuthGate } from './AuthGate';
import { Settings } from './Settings';
import { AccountMenu } from './AccountMenu';

// A loaded machine renders slower than the default second.
configure({ asyncUtilTimeout: 10_000 });

const json = (status: number, body: unknown) => ({
  ok: status < 400,
  status,
  statusText: '',
  headers: new Headers({ 'content-type': 'application/json' }),
  json: async () => body,
  text: async () => JSON.stringify(body),
});
const ok = (data: unknown) => json(200, { success: true, data });

const person = (id: string, name: string, role: 'admin' | 'member', status: 'active' | 'deactivated' = 'active') => ({ id, name, email: `${id}@example.com`, role, status, createdAt: '2026-01-01T00:00:00.000Z' });
const project = (id: string, name: string) => ({ id, name, bmad: { version: '6.12.0', folder: '_bmad', modules: [] }, agentCount: 1, outputFolder: '/_bmad-output', writable: [], problems: [] });

let me: ReturnType<typeof person> & { kind: string; accounts: boolean };
let canManage: boolean;
let calls: { url: string; method: string; body?: unknown }[];

beforeEach(() => {
  calls = [];
  canManage = false;
  me = { ...person('ed', 'Ed', 'member'), kind: 'session', accounts: true };
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    calls.push({ url, method, ...(init?.body ? { body: JSON.parse(String(init.body)) } : {}) });
    if (url === '/api/auth/setup') return ok({ auth: true, needsSetup: false, sso: null, signUp: false });
    if (url === '/api/users/me') return ok(me);
    // Two copies of one install: one BMAD project_name, two folders.
    if (url === '/api/projects') return ok([project('v612-b', 'v612'), project('v612-a', 'v612'), project('shop', 'shop')]);
    if (url.endsWith('/members') && method === 'GET') {
      return ok({ canManage, members: [{ ...person('own', 'Olga', 'member'), projectRole: 'owner', access: 'member' }, { ...person('ed', 'Ed', 'member'), projectRole: 'editor', access: 'member' }, { ...person('root', 'Root', 'admin'), projectRole: 'owner', access: 'admin' }] });
    }
    if (url === '/api/tokens' && method === 'GET') return ok([{ id: 't1', name: 'ci-deploy', start: 'bmad_ab', createdAt: '2026-01-01T00:00:00.000Z', expiresAt: null, lastUsedAt: null, projectIds: ['v612-a'] }]);
    if (url === '/api/users' && method === 'GET') return ok([person('root', 'Root', 'admin'), person('mo', 'Mo', 'member'), person('di', 'Di', 'member', 'deactivated')]);
    if (method !== 'GET') return ok({});
    return json(404, { success: false, error: 'no', code: 'E_NOT_FOUND' });
  });
});

const renderSettings = () =>
  render(
    <AuthGate>
      <Settings />
      <AccountMenu />
    </AuthGate>,
  );

it('names projects by folder with their BMAD name beside it, in the members and the token pickers and the token list', async () => {
  renderSettings();
  const members = await screen.findByTestId('members');
  await waitFor(() => expect(within(members).getAllByRole('option').map((o) => o.textContent)).toEqual(['shop', 'v612-a (v612)', 'v612-b (v612)']));
  const tokens = screen.getByTestId('tokens');
  expect(within(tokens).getAllByRole('option').map((o) => o.textContent)).toContain('only v612-a (v612)');
  expect((await within(tokens).findByTestId('token-item')).textContent).toContain('only v612-a (v612)');
});

it('shows an editor everyone with access, admins marked, and no member controls', async () => {
  renderSettings();
  const members = await screen.findByTestId('members');
  await waitFor(() => expect(within(members).getAllByTestId('member-item')).toHaveLength(3));
  const rows = within(members).getAllByTestId('member-item');
  expect(rows[2]!.textContent).toMatch(/Root.*admin/);
  expect(within(members).queryByRole('button', { name: 'Add member' })).toBeNull();
  expect(within(members).queryByRole('button', { name: /^Remove/ })).toBeNull();
  expect(within(members).queryByLabelText(/^Role of/)).toBeNull();
  expect(within(members).getByTestId('members-read-only').textContent).toMatch(/owners of shop and admins/);
  // Not an admin: no People section; their own password form is there.
  expect(screen.queryByTestId('people')).toBeNull();
  expect(screen.getByTestId('own-password')).toBeTruthy();
});

it('shows the member controls to those who may use them (not on an admin’s row)', async () => {
  canManage = true;
  renderSettings();
  const members = await screen.findByTestId('members');
  await within(members).findByRole('button', { name: 'Add member' });
  expect(within(members).getAllByRole('button', { name: /^Remove/ }).map((b) => b.getAttribute('aria-label'))).toEqual(['Remove Olga', 'Remove Ed']);
  expect(within(members).getAllByLabelText(/^Role of/)).toHaveLength(2);
});

it('asks before revoking a token, naming it', async () => {
  renderSettings();
  const tokens = await screen.findByTestId('tokens');
  await userEvent.click(await within(tokens).findByRole('button', { name: 'Revoke token ci-deploy' }));
  const dialog = screen.getByRole('alertdialog');
  expect(dialog.textContent).toMatch(/Revoke token “ci-deploy”\?/);
  await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
  expect(calls.filter((c) => c.method === 'DELETE')).toEqual([]);
  await userEvent.click(within(tokens).getByRole('button', { name: 'Revoke token ci-deploy' }));
  await userEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Revoke token' }));
  await waitFor(() => expect(calls.filter((c) => c.method === 'DELETE').map((c) => c.url)).toEqual(['/api/tokens/t1']));
});

it('lets an admin deactivate (after asking), reactivate, delete and set a password', async () => {
  me = { ...person('root', 'Root', 'admin'), kind: 'session', accounts: true };
  renderSettings();
  const people = await screen.findByTestId('people');
  await within(people).findByRole('button', { name: 'Deactivate Mo' });
  // Their own row has no controls; a deactivated person is marked and can come back.
  expect(within(people).queryByRole('button', { name: 'Deactivate Root' })).toBeNull();
  expect(within(people).getAllByTestId('person-item')[2]!.textContent).toMatch(/Di \(deactivated\)/);

  await userEvent.click(within(people).getByRole('button', { name: 'Deactivate Mo' }));
  expect(screen.getByRole('alertdialog').textContent).toMatch(/Deactivate Mo\?.*signed out everywhere/);
  await userEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Deactivate' }));
  await waitFor(() => expect(calls.find((c) => c.method === 'PATCH')).toEqual({ url: '/api/users/mo', method: 'PATCH', body: { active: false } }));

  await userEvent.click(within(people).getByRole('button', { name: 'Reactivate Di' }));
  await waitFor(() => expect(calls.filter((c) => c.method === 'PATCH').map((c) => c.body)).toContainEqual({ active: true }));

  await userEvent.click(within(people).getByRole('button', { name: 'Set password for Mo' }));
  const dialog = screen.getByRole('alertdialog');
  await userEvent.type(within(dialog).getByLabelText('New password'), 'mo-new-password');
  await userEvent.click(within(dialog).getByRole('button', { name: 'Set password' }));
  await waitFor(() => expect(calls.find((c) => c.method === 'PUT')).toEqual({ url: '/api/users/mo/password', method: 'PUT', body: { password: 'mo-new-password' } }));

  await userEvent.click(within(people).getByRole('button', { name: 'Delete Mo' }));
  expect(screen.getByRole('alertdialog').textContent).toMatch(/Delete Mo\?.*“\(removed\)”/);
  await userEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Delete person' }));
  await waitFor(() => expect(calls.filter((c) => c.method === 'DELETE').map((c) => c.url)).toEqual(['/api/users/mo']));
});

it('changes one’s own password with the current one, checking the two new ones match', async () => {
  renderSettings();
  const form = await screen.findByTestId('own-password');
  await userEvent.type(within(form).getByLabelText('Current password'), 'old-password-1');
  await userEvent.type(within(form).getByLabelText('New password'), 'new-password-1');
  await userEvent.type(within(form).getByLabelText('New password again'), 'new-password-2');
  await userEvent.click(within(form).getByRole('button', { name: 'Change password' }));
  expect((await within(form).findByRole('alert')).textContent).toMatch(/differ/);
  await userEvent.clear(within(form).getByLabelText('New password again'));
  await userEvent.type(within(form).getByLabelText('New password again'), 'new-password-1');
  await userEvent.click(within(form).getByRole('button', { name: 'Change password' }));
  await within(form).findByText('Password changed.');
  expect(calls.find((c) => c.method === 'PUT')).toEqual({ url: '/api/users/me/password', method: 'PUT', body: { currentPassword: 'old-password-1', newPassword: 'new-password-1' } });
});

it('labels the way to the account page "Account"', async () => {
  renderSettings();
  expect((await screen.findByRole('link', { name: 'Account' })).getAttribute('href')).toBe('/settings');
});

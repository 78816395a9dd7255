import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { AuthGate, useMe } from './AuthGate';

const json = (status: number, body: unknown) => ({ ok: status < 400, status, statusText: '', headers: { get: () => 'application/json' }, json: async () => body });
const ok = (data: unknown) => json(200, { success: true, data });

let info: Record<string, unknown>;
let me: Record<string, unknown> | null;
let calls: { url: string; method: string; body?: unknown }[];

beforeEach(() => {
  calls = [];
  info = { auth: true, needsSetup: false, sso: null, signUp: false };
  me = null;
  (globalThis as { fetch?: unknown }).fetch = jest.fn(async (url: string, init?: RequestInit) => {
    calls.push({ url, method: init?.method ?? 'GET', ...(init?.body ? { body: JSON.parse(String(init.body)) } : {}) });
    if (url === '/api/auth/setup' && init?.method === 'POST') {
      me = { id: 'u1', kind: 'session', name: 'Root', email: 'root@example.com', role: 'admin', accounts: true };
      info = { ...info, needsSetup: false };
      return json(201, { success: true, data: me });
    }
    if (url === '/api/auth/setup') return ok(info);
    if (url === '/api/users/me') return me ? ok(me) : json(401, { success: false, error: 'Sign in first', code: 'E_UNAUTHENTICATED' });
    if (url === '/api/auth/sign-in/email') {
      const body = JSON.parse(String(init?.body));
      if (body.password !== 'right-password') return json(401, { message: 'Invalid email or password', code: 'INVALID_EMAIL_OR_PASSWORD' });
      me = { id: 'u2', kind: 'session', name: 'Ada', email: body.email, role: 'member', accounts: true };
      return json(200, { token: 't', user: me });
    }
    return json(404, { success: false, error: 'no', code: 'E_NOT_FOUND' });
  });
});

function Who() {
  const { me: person } = useMe();
  return <p>inside as {person ? person.name : 'the single user'}</p>;
}

it('shows the app as it is with accounts off', async () => {
  info = { auth: false, needsSetup: false, sso: null, signUp: false };
  render(<AuthGate><Who /></AuthGate>);
  expect(await screen.findByText('inside as the single user')).toBeTruthy();
  expect(calls.map((c) => c.url)).toEqual(['/api/auth/setup']);
});

it('asks the first visitor to create the admin, then lets them in', async () => {
  info = { ...info, needsSetup: true };
  render(<AuthGate><Who /></AuthGate>);
  await screen.findByRole('heading', { name: 'Create the admin account' });
  await userEvent.type(screen.getByLabelText('Your name'), 'Root');
  await userEvent.type(screen.getByLabelText('Email'), 'root@example.com');
  await userEvent.type(screen.getByLabelText('Password'), 'short');
  await userEvent.click(screen.getByRole('button', { name: 'Create admin account' }));
  expect((await screen.findByRole('alert')).textContent).toMatch(/at least 8/);
  await userEvent.type(screen.getByLabelText('Password'), '-but-now-long');
  await userEvent.click(screen.getByRole('button', { name: 'Create admin account' }));
  expect(await screen.findByText('inside as Root')).toBeTruthy();
  expect(calls.find((c) => c.method === 'POST')).toMatchObject({ url: '/api/auth/setup', body: { name: 'Root', email: 'root@example.com' } });
});

it('signs in, says so when the password is wrong, and offers single sign-on when configured', async () => {
  info = { ...info, sso: { providerId: 'oidc' } };
  render(<AuthGate><Who /></AuthGate>);
  await screen.findByRole('heading', { name: 'Sign in to BMAD Orchestrator' });
  expect(screen.getByRole('button', { name: 'Sign in with single sign-on' })).toBeTruthy();
  expect(screen.queryByRole('button', { name: 'Create an account' })).toBeNull();
  await userEvent.type(screen.getByLabelText('Email'), 'ada@example.com');
  await userEvent.type(screen.getByLabelText('Password'), 'wrong');
  await userEvent.click(screen.getByRole('button', { name: 'Sign in' }));
  expect((await screen.findByRole('alert')).textContent).toMatch(/do not match/);
  await userEvent.clear(screen.getByLabelText('Password'));
  await userEvent.type(screen.getByLabelText('Password'), 'right-password');
  await userEvent.click(screen.getByRole('button', { name: 'Sign in' }));
  await waitFor(() => expect(screen.getByText('inside as Ada')).toBeTruthy());
});

import { ApiError, readApiError } from './api';

/** What the sign-in page knows before anyone signs in (GET /api/auth/setup). */
export interface AuthInfo {
  auth: boolean;
  needsSetup: boolean;
  sso: { providerId: string } | null;
  signUp: boolean;
}

export interface Me {
  id: string;
  kind: 'local' | 'session' | 'token';
  email?: string;
  name: string;
  role: 'admin' | 'member';
  accounts: boolean;
}

export interface Person {
  id: string;
  email: string;
  name: string;
  role: 'admin' | 'member';
  /** `deactivated`: an admin turned the account off (no sign-in, no tokens). */
  status: 'active' | 'deactivated';
  createdAt: string;
}

/** Someone with access to a project; `access: 'admin'`: an admin who is not a member (acts as owner). */
/** `email` only for those who may manage the members. */
export interface Member extends Omit<Person, 'email'> {
  email?: string;
  projectRole: 'owner' | 'editor' | 'viewer';
  access: 'member' | 'admin';
}

/** A project's people and whether the caller may add, change or remove them. */
export interface Members {
  members: Member[];
  canManage: boolean;
}

/** How a person is named where their work is shown: `Ann`, `Ann (deactivated)`, `Ann (removed)`. */
export function personLabel(p: { name: string; status?: 'active' | 'deactivated' | 'removed' }): string {
  return p.status && p.status !== 'active' ? `${p.name} (${p.status})` : p.name;
}

export interface Token {
  id: string;
  name: string | null;
  start: string | null;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  projectIds?: string[];
}

async function call<T>(url: string, init: RequestInit = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, headers: { Accept: 'application/json', ...(init.body ? { 'Content-Type': 'application/json' } : {}), ...init.headers } });
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    throw new ApiError('Cannot reach the server.', 'E_NETWORK', 0);
  }
  if (!res.ok) throw await readApiError(res);
  const body = (await res.json()) as { success?: boolean; data?: T };
  return body.data as T;
}

/** Better Auth's own routes answer `{ message, code }` on failure, not the app's envelope. */
async function authCall(url: string, body: unknown): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(body) });
  } catch {
    throw new ApiError('Cannot reach the server.', 'E_NETWORK', 0);
  }
  if (res.ok) return res;
  const data = (await res.json().catch(() => ({}))) as { message?: string; error?: string; code?: string };
  if (res.status === 429) throw new ApiError(data.error ?? 'Too many attempts; wait a minute and try again.', 'E_RATE_LIMITED', 429);
  if (res.status === 401) throw new ApiError('That email and password do not match an account.', 'E_UNAUTHENTICATED', 401);
  throw new ApiError(data.message ?? data.error ?? `Sign-in failed (${res.status}).`, data.code ?? 'E_HTTP', res.status);
}

const enc = encodeURIComponent;

export const accountsApi = {
  info: () => call<AuthInfo>('/api/auth/setup'),
  /** null when nobody is signed in. */
  me: async (): Promise<Me | null> => {
    try {
      return await call<Me>('/api/users/me');
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return null;
      throw e;
    }
  },
  signIn: async (email: string, password: string) => {
    await authCall('/api/auth/sign-in/email', { email, password });
  },
  /** Starts single sign-on: the browser goes to the identity provider and comes back signed in. */
  signInWithSso: async (providerId: string) => {
    const res = await authCall('/api/auth/sign-in/social', { provider: providerId, callbackURL: '/', errorCallbackURL: '/?signin=failed' });
    const data = (await res.json()) as { url?: string };
    if (data.url) window.location.assign(data.url);
  },
  /** Self sign-up (only when the server allows it): a member account, signed in. */
  signUp: async (input: { email: string; name: string; password: string }) => {
    await authCall('/api/auth/sign-up/email', input);
  },
  signOut: async () => {
    await authCall('/api/auth/sign-out', {});
  },
  createAdmin: (input: { email: string; name: string; password: string }) => call<Person>('/api/auth/setup', { method: 'POST', body: JSON.stringify(input) }),
  people: () => call<Person[]>('/api/users'),
  createPerson: (input: { email: string; name: string; password: string; role: 'admin' | 'member' }) => call<Person>('/api/users', { method: 'POST', body: JSON.stringify(input) }),
  setRole: (id: string, role: 'admin' | 'member') => call<Person>(`/api/users/${enc(id)}`, { method: 'PATCH', body: JSON.stringify({ role }) }),
  setActive: (id: string, active: boolean) => call<Person>(`/api/users/${enc(id)}`, { method: 'PATCH', body: JSON.stringify({ active }) }),
  removePerson: (id: string) => call<unknown>(`/api/users/${enc(id)}`, { method: 'DELETE' }),
  setPassword: (id: string, password: string) => call<unknown>(`/api/users/${enc(id)}/password`, { method: 'PUT', body: JSON.stringify({ password }) }),
  changeOwnPassword: (currentPassword: string, newPassword: string) => call<unknown>('/api/users/me/password', { method: 'PUT', body: JSON.stringify({ currentPassword, newPassword }) }),
  tokens: () => call<Token[]>('/api/tokens'),
  createToken: (input: { name: string; expiresAt?: string; projectIds?: string[] }) => call<Token & { token: string }>('/api/tokens', { method: 'POST', body: JSON.stringify(input) }),
  revokeToken: (id: string) => call<unknown>(`/api/tokens/${enc(id)}`, { method: 'DELETE' }),
  members: (projectId: string) => call<Members>(`/api/projects/${enc(projectId)}/members`),
  setMember: (projectId: string, email: string, role: Member['projectRole']) =>
    call<Members>(`/api/projects/${enc(projectId)}/members`, { method: 'PUT', body: JSON.stringify({ email, role }) }),
  removeMember: (projectId: string, email: string) => call<Members>(`/api/projects/${enc(projectId)}/members`, { method: 'DELETE', body: JSON.stringify({ email }) }),
  share: (conversationId: string, shared: boolean) => call<unknown>(`/api/conversations/${enc(conversationId)}`, { method: 'PATCH', body: JSON.stringify({ shared }) }),
};

import { roleAllows, type Caller, type ProjectRole, type Role } from '../core/access';
import { clientAddressed, OIDC_PROVIDER_ID } from '../store/auth';
import { AppError } from '../core/errors';
import { getRuntime } from '../engine/runtime';
import { accountsOf, projectOf, requireAdmin, requireSignedInAdmin, type BodyOf } from './access';

const personNotFound = (id: string) => new AppError('E_NOT_FOUND', `No person with id "${id.slice(0, 80)}".`);

/** Who the request is: the signed-in person, a token's owner, or `local` with accounts off. */
export function me(caller: Caller) {
  return {
    id: caller.id,
    kind: caller.kind,
    ...(caller.email ? { email: caller.email } : {}),
    name: caller.name ?? '',
    role: caller.role,
    accounts: getRuntime().accounts !== null,
    ...(caller.projectIds ? { projectIds: caller.projectIds } : {}),
  };
}

/** What the sign-in page needs before anyone is signed in. */
export async function setupInfo() {
  const { accounts } = getRuntime();
  if (!accounts) return { auth: false, needsSetup: false, sso: null, signUp: false };
  return {
    auth: true,
    needsSetup: await accounts.needsSetup(),
    sso: accounts.settings.oidc ? { providerId: OIDC_PROVIDER_ID } : null,
    signUp: accounts.settings.allowSignup,
  };
}

/**
 * The first visitor creates the admin and is signed in (the session's cookies come back); once
 * there is one, E_CONFLICT. Two at once: exactly one wins (Accounts.createFirstAdmin).
 */
export async function createFirstAdmin(request: Request, body: BodyOf<{ email: string; name: string; password: string }>) {
  const accounts = accountsOf();
  const input = await body();
  const person = await accounts.createFirstAdmin(input);
  const signedIn = await accounts.auth.api.signInEmail({ body: { email: person.email, password: input.password }, request, headers: request.headers, asResponse: true });
  return { person, cookies: signedIn.headers.getSetCookie() };
}

/**
 * Better Auth's own routes (sign-in, sign-out, session, SSO callbacks, ...), once its tables are
 * ready; the request carries the client's address only as a trusted proxy gave it.
 */
export async function authRequest(request: Request): Promise<Response> {
  const accounts = accountsOf();
  await accounts.ready();
  return accounts.auth.handler(clientAddressed(request));
}

/** Everyone with an account (admins only). */
export async function listPeople(caller: Caller) {
  requireAdmin(caller);
  return accountsOf().listPeople();
}

/** An admin creates a person (self sign-up is closed unless ALLOW_SIGNUP=true). */
export async function createPerson(caller: Caller, body: BodyOf<{ email: string; name: string; password: string; role: Role }>) {
  requireAdmin(caller);
  const input = await body();
  // A new admin with a password of the token holder's choosing is an admin account for them.
  if (input.role === 'admin' && caller.kind === 'token') throw new AppError('E_FORBIDDEN', 'Sign in as an admin to make another admin; an API token cannot.');
  return accountsOf().createPerson(input);
}

/**
 * A signed-in admin changes a person's role, or deactivates (`active: false`) or reactivates them,
 * both in one transaction. Never their own (a server keeps the admin who acts), nor the last
 * active admin's. Deactivating cancels the person's queued and running runs.
 */
export async function updatePerson(caller: Caller, id: string, body: BodyOf<{ role?: Role; active?: boolean }>) {
  requireSignedInAdmin(caller);
  const patch = await body();
  if (id === caller.id) throw new AppError('E_CONFLICT', patch.role !== undefined ? 'You cannot change your own role.' : 'You cannot deactivate yourself; another admin can.');
  // Role and state together or not at all.
  const person = await accountsOf().update(caller.id, id, { ...(patch.role !== undefined ? { role: patch.role } : {}), ...(patch.active !== undefined ? { active: patch.active } : {}) });
  if (!person) throw personNotFound(id);
  if (patch.active === false) await endWorkOf(id);
  return person;
}

/**
 * Someone who may no longer act stops acting at once: their runs are cancelled and every turn
 * running in a conversation of theirs is asked to stop, on whichever instance runs it.
 */
async function endWorkOf(id: string): Promise<void> {
  const { runs, store } = getRuntime();
  await runs.cancelByOwner(id);
  let cursor: string | undefined;
  do {
    const page = await store.list({ ownedOrSharedFor: id, limit: 200, ...(cursor ? { cursor } : {}) });
    for (const c of page.items) if (c.ownerId === id && c.status === 'running') await store.requestStop(c.id).catch(() => false);
    cursor = page.nextCursor;
  } while (cursor);
}

/** A signed-in admin deletes a person: account, sessions, tokens and memberships, and cancels their runs; their conversations stay. */
export async function removePerson(caller: Caller, id: string): Promise<{ id: string; removed: true }> {
  requireSignedInAdmin(caller);
  if (!(await accountsOf().removePerson(caller.id, id))) throw personNotFound(id);
  await endWorkOf(id);
  return { id, removed: true };
}

/** A signed-in admin sets a person's new password; the person's open sessions end. Their own goes through changeOwnPassword. */
export async function setPersonPassword(caller: Caller, id: string, body: BodyOf<{ password: string }>): Promise<{ id: string; passwordSet: true }> {
  requireSignedInAdmin(caller);
  const { password } = await body();
  if (id === caller.id) throw new AppError('E_CONFLICT', 'Change your own password with your current one (PUT /api/users/me/password).');
  if (!(await accountsOf().setPassword(id, password))) throw personNotFound(id);
  return { id, passwordSet: true };
}

/**
 * The signed-in person changes their password, giving the current one; answers the session's
 * renewed cookies. Not with an API token: a token that leaked must not be able to take the account.
 */
export async function changeOwnPassword(caller: Caller, headers: Headers, body: BodyOf<{ currentPassword: string; newPassword: string }>): Promise<string[]> {
  const accounts = accountsOf();
  if (caller.kind !== 'session') throw new AppError('E_FORBIDDEN', 'Sign in to change your password; an API token cannot.');
  const { currentPassword, newPassword } = await body();
  // The account's sign-in attempts count here too: a session left open is no way to guess the password.
  return (await accounts.changeOwnPassword(headers, currentPassword, newPassword, caller.email ?? '')).getSetCookie();
}

/** The caller's API tokens, without their secrets. */
export async function listTokens(caller: Caller) {
  return accountsOf().listTokens(caller.id);
}

/**
 * A personal API token: the secret is in this answer only (stored hashed). It acts as its owner,
 * and only on `projectIds` when given; a token limited to projects makes only tokens limited to
 * some of them, and no token reaches further than its owner.
 */
export async function createToken(caller: Caller, body: BodyOf<{ name: string; expiresAt?: string; projectIds?: string[] }>) {
  const accounts = accountsOf();
  const input = await body();
  if (caller.projectIds && (!input.projectIds || input.projectIds.some((p) => !caller.projectIds!.includes(p)))) {
    throw new AppError('E_FORBIDDEN', 'This token is limited to some projects: the new one must be limited to some of them too.');
  }
  for (const id of input.projectIds ?? []) await projectOf(caller, id);
  const expiresAt = input.expiresAt ? new Date(input.expiresAt) : undefined;
  return accounts.createToken(caller.id, { name: input.name, ...(expiresAt ? { expiresAt } : {}), ...(input.projectIds ? { projectIds: input.projectIds } : {}) });
}

/** Revokes one of the caller's tokens at once; someone else's token is E_NOT_FOUND. */
export async function revokeToken(caller: Caller, id: string): Promise<{ id: string; revoked: true }> {
  if (!(await accountsOf().revokeToken(caller.id, id))) throw new AppError('E_NOT_FOUND', `No token with id "${id.slice(0, 80)}".`);
  return { id, revoked: true };
}

/**
 * Everyone with access to a project (members, then admins who are not members) and whether the
 * caller may manage them, so a screen offers only what will work.
 */
async function membersView(projectId: string, caller: Caller) {
  const role = await getRuntime().access.projectRole(caller, projectId);
  const canManage = !!role && roleAllows(role, 'own');
  const members = await accountsOf().members(projectId);
  // Addresses are for those who manage the members (by email); everyone else, and a token
  // limited to projects, sees names only.
  if (canManage && !caller.projectIds) return { members, canManage };
  return { members: members.map(({ email: _email, ...rest }) => rest), canManage };
}

/** The project's people and their roles (anyone who sees the project). */
export async function listMembers(caller: Caller, projectId: string) {
  const project = await projectOf(caller, projectId, 'read');
  return membersView(project.id, caller);
}

/** Adds a person to the project or changes their role (its owners and admins). */
export async function putMember(caller: Caller, projectId: string, body: BodyOf<{ email: string; role: ProjectRole }>) {
  const project = await projectOf(caller, projectId, 'own');
  const { email, role } = await body();
  const accounts = accountsOf();
  const person = await accounts.personByEmail(email);
  if (!person) throw new AppError('E_NOT_FOUND', `No person with email ${email}; an admin creates people on the People page.`, { field: 'email' });
  await accounts.setMember(project.id, person.id, role);
  return membersView(project.id, caller);
}

/** Removes a person from the project (its owners and admins); the last owner stays. */
export async function removeMember(caller: Caller, projectId: string, body: BodyOf<{ email: string }>) {
  const project = await projectOf(caller, projectId, 'own');
  const { email } = await body();
  const accounts = accountsOf();
  const person = await accounts.personByEmail(email);
  if (!person || !(await accounts.removeMember(project.id, person.id))) {
    throw new AppError('E_NOT_FOUND', `${email} is not a member of this project.`, { field: 'email' });
  }
  return membersView(project.id, caller);
}

import { sql, type Kysely } from 'kysely';
import { defaultKeyHasher } from '@better-auth/api-key';
import { AppError, isAppError } from '../../core/errors';
import type { Caller, ProjectRole, Role } from '../../core/access';
import { accountAttempt, createBetterAuth, type AuthDatabase, type BetterAuth } from './better-auth';
import type { AuthSettings } from './settings';

/** `deactivated`: cannot sign in, no sessions or tokens; an admin may reactivate them. */
export type PersonStatus = 'active' | 'deactivated';

export interface Person {
  id: string;
  email: string;
  name: string;
  role: Role;
  status: PersonStatus;
  createdAt: string;
}

/**
 * Someone with access to a project: a member with their role, or an admin who is not a member
 * (`access: 'admin'`, acting as an owner everywhere).
 */
export interface Member extends Person {
  projectRole: ProjectRole;
  access: 'member' | 'admin';
}

/** Who a conversation or message belongs to, for display; `removed`: the person was deleted. */
export interface PersonSummary {
  id: string;
  name: string;
  status: PersonStatus | 'removed';
}

/** Why a request's credentials were refused, when it is worth telling (else just "sign in"). */
export type Refusal = 'token-revoked' | 'token-expired' | 'deactivated' | 'removed';

export type Identified = { caller: Caller } | { caller: null; refusal?: Refusal };

export interface TokenView {
  id: string;
  name: string | null;
  /** The first characters, so a person can tell their tokens apart; never the secret. */
  start: string | null;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  projectIds?: string[];
}

export interface NewToken extends TokenView {
  /** The secret, shown this once. */
  token: string;
}

// A session advisory lock of its own (the app's migrations take another): keys are per database.
const ACCOUNTS_MIGRATION_LOCK_KEY = 7_420_002;
// Held while an admin is deactivated, demoted or deleted: two admins doing it to each other at once
// must not leave the server without one.
const ADMINS_LOCK_KEY = 7_420_003;

const PROJECT_ROLES: readonly ProjectRole[] = ['owner', 'editor', 'viewer'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Db = Kysely<any>;

const iso = (v: unknown): string | null => (v == null ? null : new Date(v as string).toISOString());
const roleOf = (v: unknown): Role => (v === 'admin' ? 'admin' : 'member');

function personOf(u: { id: string; email: string; name?: string | null; role?: unknown; createdAt?: unknown; deactivatedAt?: unknown }): Person {
  return { id: u.id, email: u.email, name: u.name ?? '', role: roleOf(u.role), status: u.deactivatedAt ? 'deactivated' : 'active', createdAt: iso(u.createdAt) ?? '' };
}

const PERSON_COLUMNS = ['id', 'email', 'name', 'role', 'createdAt', 'deactivatedAt'] as const;

function bearerOf(request: Request): string | null {
  const header = request.headers.get('authorization');
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : '';
}

function metadataOf(v: unknown): Record<string, unknown> | null {
  if (!v) return null;
  if (typeof v === 'object') return v as Record<string, unknown>;
  try {
    const parsed = JSON.parse(String(v));
    return parsed && typeof parsed === 'object' ? parsed : null;
  } catch {
    return null;
  }
}

function projectIdsOf(metadata: unknown): string[] | undefined {
  const ids = metadataOf(metadata)?.projectIds;
  return Array.isArray(ids) ? ids.filter((x): x is string => typeof x === 'string') : undefined;
}

/**
 * People, sessions, API tokens and project memberships, on one database. Better Auth owns its
 * tables (user, session, account, verification, apikey); this adds `project_member` and
 * `first_admin` (one row at most: whoever inserts it is the first admin).
 */
export class Accounts {
  readonly auth: BetterAuth;
  private readonly db: Db;
  private readonly type: AuthDatabase['type'];
  private readied?: Promise<void>;

  constructor(
    database: AuthDatabase,
    readonly settings: AuthSettings,
    secret: string,
    private readonly closeDatabase: () => Promise<void> = async () => undefined,
  ) {
    this.db = database.db;
    this.type = database.type;
    this.auth = createBetterAuth(database, settings, secret);
  }

  /** Migrations (Better Auth's and ours), then the admin of ADMIN_EMAIL on an empty database. Once. */
  ready(): Promise<void> {
    this.readied ??= this.prepare().catch((e) => {
      this.readied = undefined;
      throw e;
    });
    return this.readied;
  }

  private async prepare(): Promise<void> {
    if (this.type === 'postgres') {
      // Instances starting together on one database queue here: two concurrent CREATE TABLEs of
      // one name can both fail on Postgres (a duplicate key in pg_type), not only "already exists".
      await this.db.connection().execute(async (conn) => {
        await sql`SELECT pg_advisory_lock(${ACCOUNTS_MIGRATION_LOCK_KEY})`.execute(conn);
        try {
          await this.migrate();
        } finally {
          await sql`SELECT pg_advisory_unlock(${ACCOUNTS_MIGRATION_LOCK_KEY})`.execute(conn);
        }
      });
    } else {
      await this.migrate();
    }
    const { adminEmail, adminPassword } = this.settings;
    if (adminEmail && adminPassword) {
      try {
        await this.claimFirstAdmin({ email: adminEmail, name: adminEmail.split('@')[0]!, password: adminPassword });
      } catch (e) {
        if (!(isAppError(e) && e.code === 'E_CONFLICT')) throw e;
      }
    }
  }

  private async migrate(): Promise<void> {
    const ctx = await this.auth.$context;
    for (let attempt = 0; ; attempt++) {
      try {
        await ctx.runMigrations();
        break;
      } catch (e) {
        // Another process opening the same file migrated it a moment ago: look again.
        if (attempt >= 3 || !/already exists|duplicate column/i.test(String((e as Error)?.message))) throw e;
      }
    }
    await this.db.schema
      .createTable('project_member')
      .ifNotExists()
      .addColumn('project_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('project_member_pk', ['project_id', 'user_id'])
      .execute();
    await this.db.schema.createIndex('project_member_user').ifNotExists().on('project_member').column('user_id').execute();
    // One row per token ever made (its key's hash, never the key): a refused token can then be told
    // apart as revoked or expired, though the API-key plugin deletes such rows.
    await this.db.schema
      .createTable('token_ledger')
      .ifNotExists()
      .addColumn('key_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text')
      .addColumn('ended_at', 'text')
      .addColumn('ended_reason', 'text')
      .execute();
    await this.db.schema.createIndex('token_ledger_user').ifNotExists().on('token_ledger').column('user_id').execute();
    // A deleted person's name, so their conversations still say whose they were.
    await this.db.schema
      .createTable('removed_person')
      .ifNotExists()
      .addColumn('user_id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('removed_at', 'text', (c) => c.notNull())
      .execute();
    await this.db.schema
      .createTable('first_admin')
      .ifNotExists()
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('user_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
  }

  async close(): Promise<void> {
    await this.closeDatabase();
  }

  // ---- the caller of a request ------------------------------------------------------------

  /**
   * A bearer token, else the session cookie; null when the request has neither (or a bad one).
   * A token is checked by Better Auth's API-key plugin (hashed lookup, expiry, enabled).
   */
  async callerOf(request: Request): Promise<Caller | null> {
    return (await this.identify(request)).caller;
  }

  /** The caller, or why a token or session that came was refused (revoked, expired, deactivated). */
  async identify(request: Request): Promise<Identified> {
    await this.ready();
    const bearer = bearerOf(request);
    if (bearer !== null) {
      if (!bearer) return { caller: null };
      const verified = await this.auth.api.verifyApiKey({ body: { key: bearer } }).catch(() => null);
      if (!verified?.valid || !verified.key) return { caller: null, ...(await this.tokenRefusal(bearer, verified?.error?.code)) };
      const ctx = await this.auth.$context;
      const user = await ctx.internalAdapter.findUserById(verified.key.referenceId);
      if (!user) return { caller: null };
      const person = personOf(user as never);
      if (person.status !== 'active') return { caller: null, refusal: 'deactivated' };
      // Ended by us (the ledger) but still valid to the plugin: only a race with a revoke can do it.
      const ended = await this.tokenRefusal(bearer, undefined);
      if (ended.refusal === 'token-revoked') return { caller: null, ...ended };
      const projectIds = projectIdsOf(verified.key.metadata);
      return { caller: { kind: 'token', id: person.id, email: person.email, name: person.name, role: person.role, tokenId: verified.key.id, ...(projectIds ? { projectIds } : {}) } };
    }
    const session = await this.auth.api.getSession({ headers: request.headers }).catch(() => null);
    if (!session?.user) return { caller: null };
    const person = personOf(session.user as never);
    // Sessions end when a person is deactivated; this covers one created in that very moment.
    if (person.status !== 'active') return { caller: null, refusal: 'deactivated' };
    return { caller: { kind: 'session', id: person.id, email: person.email, name: person.name, role: person.role } };
  }

  private async tokenRefusal(key: string, pluginCode: unknown): Promise<{ refusal?: Refusal }> {
    const hash = await defaultKeyHasher(key);
    const row = await this.db.selectFrom('token_ledger').select(['expires_at', 'ended_reason']).where('key_hash', '=', hash).executeTakeFirst();
    if (row?.ended_reason === 'deactivated' || row?.ended_reason === 'removed') return { refusal: row.ended_reason };
    if (row?.ended_reason) return { refusal: 'token-revoked' };
    if (row?.expires_at && Date.parse(row.expires_at as string) <= Date.now()) return { refusal: 'token-expired' };
    // Tokens made before the ledger: the plugin's word, said once (it deletes an expired key).
    if (pluginCode === 'KEY_EXPIRED') return { refusal: 'token-expired' };
    if (pluginCode === 'KEY_DISABLED') return { refusal: 'token-revoked' };
    return {};
  }

  // ---- people ------------------------------------------------------------------------------

  async needsSetup(): Promise<boolean> {
    await this.ready();
    if (await this.db.selectFrom('first_admin').select('id').executeTakeFirst()) return false;
    // An admin who came another way (single sign-on's admin group) closes the first run too.
    return !(await this.db.selectFrom('user').select('id').where('role', '=', 'admin').executeTakeFirst());
  }

  /**
   * The first admin: exactly one, however many ask at once. The claim is one conditional INSERT
   * of the single `first_admin` row (primary key 1) while no admin exists; whoever's INSERT adds
   * it creates the admin, everyone else gets E_CONFLICT. (Members who signed up or came by single
   * sign-on before do not close it: someone must still become the admin.)
   */
  async createFirstAdmin(input: { email: string; name: string; password: string }): Promise<Person> {
    await this.ready();
    return this.claimFirstAdmin(input);
  }

  /** createFirstAdmin on a prepared database (also called while preparing it, for ADMIN_EMAIL). */
  private async claimFirstAdmin(input: { email: string; name: string; password: string }): Promise<Person> {
    const now = new Date().toISOString();
    const claimed = await sql`INSERT INTO first_admin (id, created_at) SELECT 1, ${now}
      WHERE NOT EXISTS (SELECT 1 FROM "user" WHERE role = 'admin') ON CONFLICT (id) DO NOTHING`.execute(this.db);
    if (!Number(claimed.numAffectedRows ?? 0)) throw new AppError('E_CONFLICT', 'This server already has its admin; sign in instead.');
    try {
      const person = await this.createPerson({ ...input, role: 'admin' });
      await this.db.updateTable('first_admin').set({ user_id: person.id }).where('id', '=', 1).execute();
      return person;
    } catch (e) {
      await this.db.deleteFrom('first_admin').where('id', '=', 1).execute();
      throw e;
    }
  }

  /** A person with a password (hashed by Better Auth), created by an admin or the first run. */
  async createPerson(input: { email: string; name: string; password: string; role: Role }): Promise<Person> {
    const ctx = await this.auth.$context;
    const email = input.email.trim().toLowerCase();
    if (await ctx.internalAdapter.findUserByEmail(email)) throw new AppError('E_CONFLICT', `A person with email ${email} exists already.`, { field: 'email' });
    const { minPasswordLength, maxPasswordLength } = ctx.password.config;
    if (input.password.length < minPasswordLength || input.password.length > maxPasswordLength) {
      throw new AppError('E_VALIDATION', `Invalid password: it must have ${minPasswordLength} to ${maxPasswordLength} characters.`, { field: 'password' });
    }
    const hash = await ctx.password.hash(input.password);
    const user = await ctx.internalAdapter.createUser({ email, name: input.name, emailVerified: true, role: input.role } as never, { method: 'admin' });
    await ctx.internalAdapter.linkAccount({ userId: user.id, providerId: 'credential', accountId: user.id, password: hash });
    return personOf(user as never);
  }

  /**
   * Who an id is, for showing whose a conversation is: the name and whether they are still here
   * (`removed` after an admin deleted them); null for an id no one ever had.
   */
  async personSummary(id: string): Promise<PersonSummary | null> {
    await this.ready();
    const row = await this.db.selectFrom('user').select(['id', 'name', 'deactivatedAt']).where('id', '=', id).executeTakeFirst();
    if (row) return { id: row.id, name: row.name ?? '', status: row.deactivatedAt ? 'deactivated' : 'active' };
    const removed = await this.db.selectFrom('removed_person').select(['user_id', 'name']).where('user_id', '=', id).executeTakeFirst();
    return removed ? { id: removed.user_id, name: removed.name, status: 'removed' } : null;
  }

  /** personSummary of many ids at once (a conversation list), keyed by id; unknown ids are left out. */
  async personSummaries(ids: readonly string[]): Promise<Map<string, PersonSummary>> {
    await this.ready();
    const out = new Map<string, PersonSummary>();
    const wanted = [...new Set(ids)];
    for (let i = 0; i < wanted.length; i += 500) {
      const chunk = wanted.slice(i, i + 500);
      const rows = await this.db.selectFrom('user').select(['id', 'name', 'deactivatedAt']).where('id', 'in', chunk).execute();
      for (const r of rows) out.set(r.id, { id: r.id, name: r.name ?? '', status: r.deactivatedAt ? 'deactivated' : 'active' });
      const missing = chunk.filter((id) => !out.has(id));
      if (!missing.length) continue;
      const removed = await this.db.selectFrom('removed_person').select(['user_id', 'name']).where('user_id', 'in', missing).execute();
      for (const r of removed) out.set(r.user_id, { id: r.user_id, name: r.name, status: 'removed' });
    }
    return out;
  }

  /**
   * Deactivates or reactivates a person. Deactivated, they cannot sign in, their sessions and
   * tokens end at once (the next request is a 401) and do not come back on reactivation; their
   * conversations and memberships stay. Nobody deactivates themselves, nor the last active admin.
   */
  async setActive(actorId: string, userId: string, active: boolean): Promise<Person | null> {
    await this.ready();
    if (!active && actorId === userId) throw new AppError('E_CONFLICT', 'You cannot deactivate yourself; another admin can.');
    const found = await this.guardAdmins(userId, async (tx) => {
      const value = active ? null : this.dateValue(new Date());
      await tx.updateTable('user').set({ deactivatedAt: value, updatedAt: this.dateValue(new Date()) }).where('id', '=', userId).execute();
    }, active ? 'none' : 'deactivate');
    if (!found) return null;
    if (!active) await this.endAccess(userId, 'deactivated');
    return this.personById(userId);
  }

  /**
   * Deletes a person: their account, sessions, tokens and memberships go; their conversations
   * stay, shown as theirs with "(removed)" (their name is kept for that).
   */
  async removePerson(actorId: string, userId: string): Promise<boolean> {
    await this.ready();
    if (actorId === userId) throw new AppError('E_CONFLICT', 'You cannot delete yourself; another admin can.');
    const person = await this.personById(userId);
    if (!person) return false;
    await this.guardAdmins(userId, async (tx) => {
      await tx
        .insertInto('removed_person')
        .values({ user_id: userId, name: person.name || person.email, removed_at: new Date().toISOString() })
        .onConflict((oc) => oc.column('user_id').doUpdateSet({ name: person.name || person.email }))
        .execute();
      await tx.deleteFrom('project_member').where('user_id', '=', userId).execute();
    }, 'remove');
    await this.endAccess(userId, 'removed');
    const ctx = await this.auth.$context;
    // Better Auth's own deletion: the user row with its sessions and linked accounts.
    await ctx.internalAdapter.deleteUser(userId);
    return true;
  }

  /** An admin sets a person's password (hashed by Better Auth); their open sessions end. */
  async setPassword(userId: string, password: string): Promise<boolean> {
    await this.ready();
    const ctx = await this.auth.$context;
    const user = await ctx.internalAdapter.findUserById(userId);
    if (!user) return false;
    this.checkPassword(ctx.password.config, password, 'password');
    const hash = await ctx.password.hash(password);
    const accounts = await ctx.internalAdapter.findAccounts(userId);
    // Someone who came by single sign-on has no password yet: this gives them one.
    if (accounts.some((a) => a.providerId === 'credential')) await ctx.internalAdapter.updatePassword(userId, hash);
    else await ctx.internalAdapter.linkAccount({ userId, providerId: 'credential', accountId: userId, password: hash });
    await ctx.internalAdapter.deleteUserSessions(userId);
    return true;
  }

  /**
   * The signed-in person changes their own password (Better Auth's changePassword: the current
   * one is checked; their other sessions end). Returns Better Auth's Set-Cookie headers (the
   * session it renews), for the response.
   */
  async changeOwnPassword(headers: Headers, currentPassword: string, newPassword: string, email: string): Promise<Headers> {
    await this.ready();
    const ctx = await this.auth.$context;
    this.checkPassword(ctx.password.config, newPassword, 'newPassword');
    // The current password is guessed here as at sign-in (a session left open): the same counter.
    const attempt = await accountAttempt(this.db, email.trim().toLowerCase().slice(0, 254));
    if (!attempt.allowed) throw new AppError('E_RATE_LIMITED', `Too many password attempts on this account; try again in ${attempt.retryAfter} s.`, { retryAfter: attempt.retryAfter });
    try {
      const res = await this.auth.api.changePassword({ body: { currentPassword, newPassword, revokeOtherSessions: true }, headers, returnHeaders: true });
      return res.headers;
    } catch (e) {
      const code = (e as { body?: { code?: string } })?.body?.code;
      if (code === 'INVALID_PASSWORD') throw new AppError('E_VALIDATION', 'The current password is not right.', { field: 'currentPassword' });
      if (code === 'CREDENTIAL_ACCOUNT_NOT_FOUND') throw new AppError('E_CONFLICT', 'You sign in by single sign-on and have no password here; an admin can set one.');
      throw e;
    }
  }

  private checkPassword(config: { minPasswordLength: number; maxPasswordLength: number }, password: string, field: string): void {
    if (password.length < config.minPasswordLength || password.length > config.maxPasswordLength) {
      throw new AppError('E_VALIDATION', `Invalid password: it must have ${config.minPasswordLength} to ${config.maxPasswordLength} characters.`, { field });
    }
  }

  /** A date as Better Auth stores it on this database (ISO text on SQLite, a timestamp on Postgres). */
  private dateValue(d: Date): unknown {
    return this.type === 'postgres' ? d : d.toISOString();
  }

  /**
   * Runs `change` in a transaction that keeps an active admin: when `userId` is an active admin
   * and the change would take that away, another active admin must remain. False: no such person.
   */
  private async guardAdmins(userId: string, change: (tx: Db) => Promise<void>, kind: 'deactivate' | 'remove' | 'demote' | 'none'): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      if (this.type === 'postgres') await sql`SELECT pg_advisory_xact_lock(${ADMINS_LOCK_KEY})`.execute(tx);
      const target = await tx.selectFrom('user').select(['id', 'role', 'deactivatedAt']).where('id', '=', userId).executeTakeFirst();
      if (!target) return false;
      if (kind !== 'none' && target.role === 'admin' && !target.deactivatedAt) {
        const others = await tx.selectFrom('user').select('id').where('role', '=', 'admin').where('deactivatedAt', 'is', null).where('id', '<>', userId).limit(1).execute();
        if (!others.length) throw new AppError('E_CONFLICT', 'This is the last active admin: make someone else admin first.');
      }
      await change(tx);
      return true;
    });
  }

  /** Ends every session and token of a person at once (each token's end is remembered, with why). */
  private async endAccess(userId: string, reason: 'deactivated' | 'removed'): Promise<void> {
    const ctx = await this.auth.$context;
    await ctx.internalAdapter.deleteUserSessions(userId);
    const now = new Date().toISOString();
    await this.db.updateTable('token_ledger').set({ ended_at: now, ended_reason: reason }).where('user_id', '=', userId).where('ended_at', 'is', null).execute();
    await ctx.adapter.deleteMany({ model: 'apikey', where: [{ field: 'referenceId', value: userId }] });
  }

  async listPeople(): Promise<Person[]> {
    await this.ready();
    const rows = await this.db.selectFrom('user').select([...PERSON_COLUMNS]).orderBy('createdAt').limit(10_000).execute();
    return rows.map((r) => personOf(r as never));
  }

  async personById(id: string): Promise<Person | null> {
    await this.ready();
    const row = await this.db.selectFrom('user').select([...PERSON_COLUMNS]).where('id', '=', id).executeTakeFirst();
    return row ? personOf(row as never) : null;
  }

  async personByEmail(email: string): Promise<Person | null> {
    await this.ready();
    const row = await this.db.selectFrom('user').select([...PERSON_COLUMNS]).where('email', '=', email.trim().toLowerCase()).executeTakeFirst();
    return row ? personOf(row as never) : null;
  }

  /**
   * A role and an active state at once, in one transaction under the admins' rule: both are
   * written or, when the rule refuses, neither (never a role changed behind an error).
   */
  async update(actorId: string, userId: string, change: { role?: Role; active?: boolean }): Promise<Person | null> {
    await this.ready();
    if (change.active === false && actorId === userId) throw new AppError('E_CONFLICT', 'You cannot deactivate yourself; another admin can.');
    const kind = change.active === false ? 'deactivate' : change.role === 'member' ? 'demote' : 'none';
    const found = await this.guardAdmins(userId, async (tx) => {
      const now = this.dateValue(new Date());
      await tx
        .updateTable('user')
        .set({ ...(change.role !== undefined ? { role: change.role } : {}), ...(change.active !== undefined ? { deactivatedAt: change.active ? null : now } : {}), updatedAt: now })
        .where('id', '=', userId)
        .execute();
    }, kind);
    if (!found) return null;
    if (change.active === false) await this.endAccess(userId, 'deactivated');
    return this.personById(userId);
  }

  async setRole(userId: string, role: Role): Promise<Person | null> {
    await this.ready();
    const found = await this.guardAdmins(userId, async (tx) => {
      await tx.updateTable('user').set({ role }).where('id', '=', userId).execute();
    }, role === 'admin' ? 'none' : 'demote');
    return found ? this.personById(userId) : null;
  }

  // ---- project memberships -----------------------------------------------------------------

  async projectRoleOf(projectId: string, userId: string): Promise<ProjectRole | null> {
    await this.ready();
    const row = await this.db.selectFrom('project_member').select('role').where('project_id', '=', projectId).where('user_id', '=', userId).executeTakeFirst();
    const role = row?.role as ProjectRole | undefined;
    return role && PROJECT_ROLES.includes(role) ? role : null;
  }

  /** Everyone with access to the project: its members, then the admins who are not members. */
  async members(projectId: string): Promise<Member[]> {
    await this.ready();
    const rows = await this.db
      .selectFrom('project_member as m')
      .innerJoin('user as u', 'u.id', 'm.user_id')
      .select(['u.id', 'u.email', 'u.name', 'u.role', 'u.createdAt', 'u.deactivatedAt', 'm.role as projectRole'])
      .where('m.project_id', '=', projectId)
      .orderBy('m.created_at')
      .execute();
    const members: Member[] = rows.map((r) => ({ ...personOf(r as never), projectRole: r.projectRole as ProjectRole, access: 'member' }));
    const listed = new Set(members.map((m) => m.id));
    const admins = await this.db.selectFrom('user').select([...PERSON_COLUMNS]).where('role', '=', 'admin').orderBy('createdAt').limit(1000).execute();
    for (const a of admins) if (!listed.has(a.id)) members.push({ ...personOf(a as never), projectRole: 'owner', access: 'admin' });
    return members;
  }

  /**
   * Adds or changes a member. The last owner can be neither demoted nor removed: a project
   * nobody owns could only be managed by an admin.
   */
  async setMember(projectId: string, userId: string, role: ProjectRole): Promise<void> {
    await this.ready();
    await this.db.transaction().execute(async (tx) => {
      if (role !== 'owner') await this.keepAnOwner(tx, projectId, userId);
      await tx
        .insertInto('project_member')
        .values({ project_id: projectId, user_id: userId, role, created_at: new Date().toISOString() })
        .onConflict((oc) => oc.columns(['project_id', 'user_id']).doUpdateSet({ role }))
        .execute();
    });
  }

  async removeMember(projectId: string, userId: string): Promise<boolean> {
    await this.ready();
    return this.db.transaction().execute(async (tx) => {
      await this.keepAnOwner(tx, projectId, userId);
      const r = await tx.deleteFrom('project_member').where('project_id', '=', projectId).where('user_id', '=', userId).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    });
  }

  private async keepAnOwner(tx: Db, projectId: string, leaving: string): Promise<void> {
    const owners = await tx.selectFrom('project_member').select('user_id').where('project_id', '=', projectId).where('role', '=', 'owner').execute();
    if (owners.length === 1 && owners[0]!.user_id === leaving) {
      throw new AppError('E_CONFLICT', 'A project keeps at least one owner: make someone else owner first.');
    }
  }

  // ---- API tokens --------------------------------------------------------------------------

  async createToken(userId: string, input: { name: string; expiresAt?: Date; projectIds?: string[] }): Promise<NewToken> {
    await this.ready();
    const expiresIn = input.expiresAt ? Math.ceil((input.expiresAt.getTime() - Date.now()) / 1000) : undefined;
    if (expiresIn !== undefined && expiresIn < 1) throw new AppError('E_VALIDATION', 'Invalid expiresAt: it must be in the future.', { field: 'expiresAt' });
    const created = await this.auth.api
      .createApiKey({
        body: { name: input.name, userId, ...(expiresIn ? { expiresIn } : {}), ...(input.projectIds ? { metadata: { projectIds: input.projectIds } } : {}) },
      })
      .catch((e: { statusCode?: number; body?: { message?: string } }) => {
        // The plugin's own refusals (an expiry too far off, a name too long) are the caller's to fix.
        if (e?.statusCode === 400) throw new AppError('E_VALIDATION', `Invalid token: ${e.body?.message ?? 'refused'}.`, { field: expiresIn ? 'expiresAt' : 'name' });
        throw e;
      });
    await this.db
      .insertInto('token_ledger')
      .values({ key_hash: await defaultKeyHasher(created.key), user_id: userId, expires_at: iso(created.expiresAt) })
      .onConflict((oc) => oc.column('key_hash').doNothing())
      .execute();
    return { ...this.tokenView(created), token: created.key };
  }

  async listTokens(userId: string): Promise<TokenView[]> {
    await this.ready();
    const ctx = await this.auth.$context;
    const rows = await ctx.adapter.findMany<Record<string, unknown>>({ model: 'apikey', where: [{ field: 'referenceId', value: userId }], sortBy: { field: 'createdAt', direction: 'desc' }, limit: 1000 });
    return rows.map((r) => this.tokenView(r));
  }

  /** Revokes one of the person's tokens at once (its row is gone: the next request with it is a 401). */
  async revokeToken(userId: string, tokenId: string): Promise<boolean> {
    await this.ready();
    const ctx = await this.auth.$context;
    const row = await ctx.adapter.findOne<Record<string, unknown>>({ model: 'apikey', where: [{ field: 'id', value: tokenId }] });
    if (!row || row.referenceId !== userId) return false;
    // Remembered first: a request with it in between is refused as revoked, not let through.
    await this.db.updateTable('token_ledger').set({ ended_at: new Date().toISOString(), ended_reason: 'revoked' }).where('key_hash', '=', String(row.key)).execute();
    await ctx.adapter.delete({ model: 'apikey', where: [{ field: 'id', value: tokenId }] });
    return true;
  }

  private tokenView(r: Record<string, unknown>): TokenView {
    const projectIds = projectIdsOf(r.metadata);
    return {
      id: String(r.id),
      name: (r.name as string | null) ?? null,
      start: (r.start as string | null) ?? null,
      createdAt: iso(r.createdAt) ?? '',
      expiresAt: iso(r.expiresAt),
      lastUsedAt: iso(r.lastRequest),
      ...(projectIds ? { projectIds } : {}),
    };
  }
}

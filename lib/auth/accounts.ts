import { sql, type Kysely } from 'kysely';
import { AppError, isAppError } from '../errors';
import type { Caller, ProjectRole, Role } from '../access';
import { createBetterAuth, type AuthDatabase, type BetterAuth } from './better-auth';
import type { AuthSettings } from './settings';

export interface Person {
  id: string;
  email: string;
  name: string;
  role: Role;
  createdAt: string;
}

export interface Member extends Person {
  projectRole: ProjectRole;
}

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

const PROJECT_ROLES: readonly ProjectRole[] = ['owner', 'editor', 'viewer'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Db = Kysely<any>;

const iso = (v: unknown): string | null => (v == null ? null : new Date(v as string).toISOString());
const roleOf = (v: unknown): Role => (v === 'admin' ? 'admin' : 'member');

function personOf(u: { id: string; email: string; name?: string | null; role?: unknown; createdAt?: unknown }): Person {
  return { id: u.id, email: u.email, name: u.name ?? '', role: roleOf(u.role), createdAt: iso(u.createdAt) ?? '' };
}

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
    await this.ready();
    const bearer = bearerOf(request);
    if (bearer !== null) {
      if (!bearer) return null;
      const verified = await this.auth.api.verifyApiKey({ body: { key: bearer } }).catch(() => null);
      if (!verified?.valid || !verified.key) return null;
      const ctx = await this.auth.$context;
      const user = await ctx.internalAdapter.findUserById(verified.key.referenceId);
      if (!user) return null;
      const projectIds = projectIdsOf(verified.key.metadata);
      const person = personOf(user as never);
      return { kind: 'token', id: person.id, email: person.email, name: person.name, role: person.role, tokenId: verified.key.id, ...(projectIds ? { projectIds } : {}) };
    }
    const session = await this.auth.api.getSession({ headers: request.headers }).catch(() => null);
    if (!session?.user) return null;
    const person = personOf(session.user as never);
    return { kind: 'session', id: person.id, email: person.email, name: person.name, role: person.role };
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

  async listPeople(): Promise<Person[]> {
    await this.ready();
    const rows = await this.db.selectFrom('user').select(['id', 'email', 'name', 'role', 'createdAt']).orderBy('createdAt').limit(10_000).execute();
    return rows.map((r) => personOf(r as never));
  }

  async personById(id: string): Promise<Person | null> {
    await this.ready();
    const row = await this.db.selectFrom('user').select(['id', 'email', 'name', 'role', 'createdAt']).where('id', '=', id).executeTakeFirst();
    return row ? personOf(row as never) : null;
  }

  async personByEmail(email: string): Promise<Person | null> {
    await this.ready();
    const row = await this.db.selectFrom('user').select(['id', 'email', 'name', 'role', 'createdAt']).where('email', '=', email.trim().toLowerCase()).executeTakeFirst();
    return row ? personOf(row as never) : null;
  }

  async setRole(userId: string, role: Role): Promise<Person | null> {
    await this.ready();
    await this.db.updateTable('user').set({ role }).where('id', '=', userId).execute();
    const row = await this.db.selectFrom('user').select(['id', 'email', 'name', 'role', 'createdAt']).where('id', '=', userId).executeTakeFirst();
    return row ? personOf(row as never) : null;
  }

  // ---- project memberships -----------------------------------------------------------------

  async projectRoleOf(projectId: string, userId: string): Promise<ProjectRole | null> {
    await this.ready();
    const row = await this.db.selectFrom('project_member').select('role').where('project_id', '=', projectId).where('user_id', '=', userId).executeTakeFirst();
    const role = row?.role as ProjectRole | undefined;
    return role && PROJECT_ROLES.includes(role) ? role : null;
  }

  async members(projectId: string): Promise<Member[]> {
    await this.ready();
    const rows = await this.db
      .selectFrom('project_member as m')
      .innerJoin('user as u', 'u.id', 'm.user_id')
      .select(['u.id', 'u.email', 'u.name', 'u.role', 'u.createdAt', 'm.role as projectRole'])
      .where('m.project_id', '=', projectId)
      .orderBy('m.created_at')
      .execute();
    return rows.map((r) => ({ ...personOf(r as never), projectRole: r.projectRole as ProjectRole }));
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

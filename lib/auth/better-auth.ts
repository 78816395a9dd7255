import { betterAuth, type BetterAuthOptions } from 'better-auth';
import { APIError } from 'better-auth/api';
import { genericOAuth } from 'better-auth/plugins';
import { apiKey } from '@better-auth/api-key';
import type { Kysely } from 'kysely';
import type { AuthSettings } from './settings';

/** Better Auth's provider id of the single sign-on; accounts link on it and the subject. */
export const OIDC_PROVIDER_ID = 'oidc';

/** Sign-in and sign-up attempts (failed or not) per address and minute before a 429. */
export const SIGN_IN_ATTEMPTS_PER_MINUTE = 5;

export interface AuthDatabase {
  db: Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  type: 'sqlite' | 'postgres';
}

/**
 * The origins the request itself came to: its Host, on either scheme (behind a proxy that ends
 * TLS the server sees http while the browser says https). Another site never shares the Host.
 */
function requestOrigins(request?: Request): string[] {
  if (!request) return [];
  const host = request.headers.get('x-forwarded-host') ?? request.headers.get('host') ?? new URL(request.url).host;
  return [`http://${host}`, `https://${host}`];
}

function optionsFor(database: AuthDatabase, settings: AuthSettings, secret: string) {
  const oidc = settings.oidc;
  /**
   * Subjects the provider just put in OIDC_ADMIN_GROUP (a sign-in's profile, then its session).
   * In memory, and rightly so: both steps run in the one callback request, on one instance; the
   * promotion itself is written to the shared database.
   */
  const ssoAdmins = new Set<string>();
  return {
    appName: 'BMAD Orchestrator',
    secret,
    basePath: '/api/auth',
    database: { db: database.db, type: database.type, transaction: true },
    // No baseURL: Better Auth takes it from each request (the server works on whatever HOST:PORT
    // it is started on). Not its dynamic `allowedHosts: ['*']`, which would also trust every
    // origin; the trusted origin is the request's own.
    trustedOrigins: (request?: Request) => requestOrigins(request),
    telemetry: { enabled: false },
    logger: {
      level: 'warn',
      // A wrong or revoked token is an ordinary 401, not an error of the server.
      log: (level: string, message: string) => {
        if (/validate API key|Base URL is not set/i.test(message)) return;
        // Its schema check knows Postgres's `bigint` but not the same type's catalog name `int8`
        // (the rate limit table's lastRequest): a false alarm on every start.
        if (/Expected number but got int8/.test(message)) return;
        process.stderr.write(`[auth] ${level}: ${message}\n`);
      },
    },
    advanced: {
      // Its schema check runs before the migrations (Accounts.ready): it could only report tables to come.
      database: { validateSchema: false },
      // Origin checks in every environment (Better Auth skips them under NODE_ENV=test).
      disableOriginCheck: false,
    },
    user: {
      additionalFields: {
        // `admin` or `member`; never taken from a sign-up body.
        role: { type: 'string', required: false, defaultValue: 'member', input: false },
        // Set while an admin has deactivated the person (Accounts.setActive): no new session.
        deactivatedAt: { type: 'date', required: false, input: false },
      },
    },
    emailAndPassword: { enabled: true, disableSignUp: !settings.allowSignup, minPasswordLength: 8, maxPasswordLength: 256 },
    session: { expiresIn: 60 * 60 * 24 * 14, updateAge: 60 * 60 * 24 },
    account: {
      // Better Auth links an SSO identity to an existing local person only when the provider says
      // the email is verified (and the local row is verified too); otherwise sign-in is refused.
      accountLinking: { enabled: true, trustedProviders: [] },
    },
    rateLimit: {
      enabled: true,
      // Counted in the database every instance shares (its `rateLimit` table, made by
      // Better Auth's migrations): in memory, two instances behind a balancer would each allow
      // the limit. Only requests to Better Auth's own routes (/api/auth/*) are counted; the app's
      // calls into `auth.api` (the session or token of every API request) are not.
      storage: 'database',
      window: 60,
      max: 300,
      customRules: {
        '/sign-in/email': { window: 60, max: SIGN_IN_ATTEMPTS_PER_MINUTE },
        '/sign-up/email': { window: 60, max: SIGN_IN_ATTEMPTS_PER_MINUTE },
      },
    },
    databaseHooks: {
      session: {
        create: {
          // Every way in (password, single sign-on) makes a session: a deactivated person gets none.
          before: async (session: { userId: string }, ctx: { context: { internalAdapter: { findUserById(id: string): Promise<Record<string, unknown> | null> } } } | null) => {
            if (!ctx) return;
            const user = await ctx.context.internalAdapter.findUserById(session.userId);
            if (user?.deactivatedAt) throw new APIError('FORBIDDEN', { message: 'This account is deactivated; ask an admin to reactivate it.', code: 'ACCOUNT_DEACTIVATED' });
          },
          // OIDC_ADMIN_GROUP → admin: the person signing in by SSO is promoted (never demoted here:
          // an admin who also signs in by SSO stays one when the group is missing).
          after: async (session: { userId: string }, ctx: { context: { internalAdapter: { findAccounts(userId: string): Promise<Array<{ providerId: string; accountId: string }>>; updateUser(id: string, data: Record<string, unknown>): Promise<unknown> } } } | null) => {
            if (!oidc?.adminGroup || !ssoAdmins.size || !ctx) return;
            const accounts = await ctx.context.internalAdapter.findAccounts(session.userId);
            const sso = accounts.find((a) => a.providerId === OIDC_PROVIDER_ID && ssoAdmins.has(a.accountId));
            if (!sso) return;
            ssoAdmins.delete(sso.accountId);
            await ctx.context.internalAdapter.updateUser(session.userId, { role: 'admin' });
          },
        },
      },
    },
    plugins: [
      apiKey({
        // Stored as a hash (the plugin's default); shown once by POST /api/tokens.
        defaultPrefix: 'bmad_',
        enableMetadata: true,
        // Expiry is any future moment (minimum 0 days) up to five years.
        keyExpiration: { minExpiresIn: 0, maxExpiresIn: 365 * 5 },
        // The plugin's default counts 10 uses a day; a token for CI is used far more.
        rateLimit: { enabled: false },
      }),
      ...(oidc
        ? [
            genericOAuth({
              config: [
                {
                  providerId: OIDC_PROVIDER_ID,
                  discoveryUrl: `${oidc.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
                  clientId: oidc.clientId,
                  clientSecret: oidc.clientSecret,
                  scopes: ['openid', 'email', 'profile', ...(oidc.adminGroup ? ['groups'] : [])],
                  pkce: true,
                  requireIdTokenVerification: true,
                  // Better Auth takes no `input: false` field (the role) from a provider profile, so the
                  // group decision waits here, keyed by subject, for the session this sign-in creates.
                  mapProfileToUser: (profile: Record<string, unknown>) => {
                    const groups = Array.isArray(profile.groups) ? profile.groups : [];
                    if (profile.sub == null) return {};
                    // Decided afresh on each sign-in: one that failed after this step must not
                    // promote a later one whose profile no longer has the group.
                    if (oidc.adminGroup && groups.includes(oidc.adminGroup)) ssoAdmins.add(String(profile.sub));
                    else ssoAdmins.delete(String(profile.sub));
                    return {};
                  },
                },
              ],
            }),
          ]
        : []),
    ],
  } satisfies BetterAuthOptions;
}

/**
 * The one place Better Auth is configured, on the database it is given (the conversations'
 * SQLite file today; Postgres later, on the same tables).
 */
export function createBetterAuth(database: AuthDatabase, settings: AuthSettings, secret: string) {
  return betterAuth(optionsFor(database, settings, secret));
}

export type BetterAuth = ReturnType<typeof createBetterAuth>;

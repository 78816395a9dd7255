import { betterAuth, type BetterAuthOptions } from 'better-auth';
import { APIError, createAuthMiddleware } from 'better-auth/api';
import { genericOAuth } from 'better-auth/plugins';
import { apiKey } from '@better-auth/api-key';
import { sql, type Kysely } from 'kysely';
import { allowedHostRules, forwardedClient, isAllowedHost, parseTrustProxy, type HostRule } from '../../core/config/network';
import type { AuthSettings } from './settings';

/** Better Auth's provider id of the single sign-on; accounts link on it and the subject. */
export const OIDC_PROVIDER_ID = 'oidc';

/** Sign-in and sign-up attempts (failed or not) per address and minute before a 429. */
export const SIGN_IN_ATTEMPTS_PER_MINUTE = 5;
/** Sign-in attempts per account (the email signed in to) and minute, whoever sends them. */
export const SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE = 5;
/**
 * Behind a trusted proxy each address has its own attempts; this is the account's ceiling over all
 * of them, so many addresses (or a client that reaches the server beside the proxy and writes its
 * own X-Forwarded-For) cannot guess without end. Higher than one address's: a few wrong guesses
 * from elsewhere do not lock a colleague out at once.
 */
export const SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE_BEHIND_PROXY = 20;
/** All sign-in and sign-up attempts per minute whose client no trusted proxy names. */
export const SIGN_IN_ATTEMPTS_PER_MINUTE_UNKNOWN_CLIENTS = 30;

/**
 * The header Better Auth reads the client's address from (for its rate limit and sessions). Set
 * only by clientAddressed() from X-Forwarded-For as TRUST_PROXY allows; what a client sends under
 * this name is dropped. Without a trusted address Better Auth counts everyone in one bucket.
 */
export const CLIENT_ADDRESS_HEADER = 'x-bmad-client-address';

/** The request as Better Auth's handler gets it: with the client's address only a trusted proxy gave. */
export function clientAddressed(request: Request, env: Record<string, string | undefined> = process.env): Request {
  const trust = parseTrustProxy(env.TRUST_PROXY);
  const address = forwardedClient(request.headers.get('x-forwarded-for'), 'hops' in trust ? trust.hops : 0);
  if (!address && !request.headers.has(CLIENT_ADDRESS_HEADER)) return request;
  const headers = new Headers(request.headers);
  if (address) headers.set(CLIENT_ADDRESS_HEADER, address);
  else headers.delete(CLIENT_ADDRESS_HEADER);
  return new Request(request, { headers, ...(request.body ? { duplex: 'half' } : {}) } as RequestInit);
}

export interface AuthDatabase {
  db: Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  type: 'sqlite' | 'postgres';
}

/**
 * The origins a request may come from: its Host on either scheme (behind a proxy that ends TLS the
 * server sees http while the browser says https), only when that Host is one of the server's names
 * (loopback or ALLOWED_HOSTS). A page whose name resolves here sends its own name in both Host and
 * Origin, and is trusted for nothing.
 */
function requestOrigins(allowed: HostRule[], request?: Request): string[] {
  if (!request) return [];
  const host = request.headers.get('x-forwarded-host') ?? request.headers.get('host');
  if (!host || !isAllowedHost(host, allowed)) return [];
  return [`http://${host}`, `https://${host}`];
}

/**
 * One more attempt on an account's sign-in, counted in the shared `rateLimit` table beside Better
 * Auth's own rows (in one statement, so instances and concurrent requests count alike); false
 * when the account had its attempts this minute. Better Auth keys its limit by address and path
 * only, and an address is what a client without a proxy in front makes up at will.
 */
export async function accountAttempt(db: Kysely<any>, email: string, max = SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE): Promise<{ allowed: boolean; retryAfter: number }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const now = Date.now();
  const windowStart = now - 60_000;
  const key = `account:${email}|/sign-in/email`;
  const row = await sql<{ count: number | string; lastRequest: number | string }>`
    INSERT INTO "rateLimit" ("id", "key", "count", "lastRequest") VALUES (${crypto.randomUUID()}, ${key}, 1, ${now})
    ON CONFLICT ("key") DO UPDATE SET
      "count" = CASE WHEN "rateLimit"."lastRequest" <= ${windowStart} THEN 1 ELSE "rateLimit"."count" + 1 END,
      "lastRequest" = CASE WHEN "rateLimit"."lastRequest" <= ${windowStart} THEN ${now} ELSE "rateLimit"."lastRequest" END
    RETURNING "count", "lastRequest"`.execute(db);
  const { count, lastRequest } = row.rows[0]!;
  return { allowed: Number(count) <= max, retryAfter: Math.max(1, Math.ceil((Number(lastRequest) + 60_000 - now) / 1000)) };
}

function optionsFor(database: AuthDatabase, settings: AuthSettings, secret: string) {
  const oidc = settings.oidc;
  /**
   * Subjects the provider just put in OIDC_ADMIN_GROUP (a sign-in's profile, then its session).
   * In memory, and rightly so: both steps run in the one callback request, on one instance; the
   * promotion itself is written to the shared database.
   */
  const ssoAdmins = new Set<string>();
  // With an address a trusted proxy gave, each client has its own attempts; without one, everyone
  // shares a single bucket: a ceiling on guessing, not a per-person limit (that is the account's).
  const signInRule = (request: Request) => ({ window: 60, max: request.headers.get(CLIENT_ADDRESS_HEADER) ? SIGN_IN_ATTEMPTS_PER_MINUTE : SIGN_IN_ATTEMPTS_PER_MINUTE_UNKNOWN_CLIENTS });
  return {
    appName: 'BMAD Orchestrator',
    secret,
    basePath: '/api/auth',
    database: { db: database.db, type: database.type, transaction: true },
    // No baseURL: Better Auth takes it from each request (the server works on whatever HOST:PORT
    // it is started on), whose Host proxy.ts has checked. Not its dynamic `allowedHosts: ['*']`,
    // which would also trust every origin.
    trustedOrigins: (request?: Request) => requestOrigins(allowedHostRules(), request),
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
      // Never X-Forwarded-For itself, which anyone can send when no proxy is in front.
      ipAddress: { ipAddressHeaders: [CLIENT_ADDRESS_HEADER] },
    },
    hooks: {
      before: createAuthMiddleware(async (ctx) => {
        // Every attempt counts on the account. Where a trusted proxy names the client, clients are
        // also counted apart by address (Better Auth's rule), and the account's ceiling is higher.
        if (ctx.path !== '/sign-in/email') return;
        const email = typeof ctx.body?.email === 'string' ? ctx.body.email.trim().toLowerCase() : '';
        if (!email) return;
        const max = ctx.headers?.get(CLIENT_ADDRESS_HEADER) ? SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE_BEHIND_PROXY : SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_MINUTE;
        const attempt = await accountAttempt(database.db, email.slice(0, 254), max);
        if (!attempt.allowed) throw new APIError('TOO_MANY_REQUESTS', { message: 'Too many sign-in attempts on this account.' }, { 'x-retry-after': String(attempt.retryAfter) });
      }),
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
        '/sign-in/email': signInRule,
        '/sign-up/email': signInRule,
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

/**
 * The account settings of the environment. Accounts are on unless AUTH=off, which keeps the
 * single-user mode and is accepted only when the server listens on loopback.
 */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** A `groups` claim value that makes the person an admin. */
  adminGroup?: string;
}

export interface AuthSettings {
  enabled: boolean;
  allowSignup: boolean;
  /** Created as the admin on an empty database, when both are set. */
  adminEmail?: string;
  adminPassword?: string;
  /** BETTER_AUTH_SECRET or AUTH_SECRET; absent: generated once and kept in DATA_DIR. */
  secret?: string;
  oidc?: OidcSettings;
}

type Env = Record<string, string | undefined>;

const set = (v: string | undefined) => (v && v.trim() ? v.trim() : undefined);

export function authSettings(env: Env = process.env): AuthSettings {
  const issuer = set(env.OIDC_ISSUER);
  const clientId = set(env.OIDC_CLIENT_ID);
  const clientSecret = set(env.OIDC_CLIENT_SECRET);
  const adminGroup = set(env.OIDC_ADMIN_GROUP);
  return {
    enabled: (env.AUTH ?? '').trim().toLowerCase() !== 'off',
    allowSignup: (env.ALLOW_SIGNUP ?? '').trim().toLowerCase() === 'true',
    ...(set(env.ADMIN_EMAIL) ? { adminEmail: set(env.ADMIN_EMAIL)!.toLowerCase() } : {}),
    ...(set(env.ADMIN_PASSWORD) ? { adminPassword: env.ADMIN_PASSWORD } : {}),
    ...(set(env.BETTER_AUTH_SECRET ?? env.AUTH_SECRET) ? { secret: set(env.BETTER_AUTH_SECRET ?? env.AUTH_SECRET) } : {}),
    ...(issuer && clientId && clientSecret ? { oidc: { issuer, clientId, clientSecret, ...(adminGroup ? { adminGroup } : {}) } } : {}),
  };
}

/** HOST unset, localhost, 127.x or ::1: only this machine reaches the server. */
export function isLoopbackHost(host: string | undefined): boolean {
  const h = (host ?? '').trim().replace(/^\[|\]$/g, '');
  return h === '' || h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The address the server was told to listen on: `-H`/`--hostname` on Next's command line wins over
 * HOST (scripts/start.mjs passes HOST as -H; `next start -H 0.0.0.0` sets no variable).
 */
export function listenHost(env: Env = process.env, argv: string[] = process.argv): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-H' || a === '--hostname') return argv[i + 1];
    const m = /^(?:-H|--hostname)=(.*)$/.exec(a);
    if (m) return m[1];
  }
  return set(env.HOST);
}

/** Null when the settings may serve; else why not (AUTH=off away from loopback names HOST). */
export function authStartupProblem(env: Env = process.env, argv: string[] = process.argv): string | null {
  if (authSettings(env).enabled) return null;
  const host = listenHost(env, argv);
  if (isLoopbackHost(host)) return null;
  return `AUTH=off is accepted only on loopback, but HOST is ${host}: anyone who reaches ${host} would read every conversation and run agents. Unset AUTH (accounts on) or listen on 127.0.0.1.`;
}

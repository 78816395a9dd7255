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

import { isLoopbackAddress, parseAllowedHosts, parseTrustProxy } from '../../core/config/network';

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
export const isLoopbackHost = isLoopbackAddress;

/**
 * The address the server was told to listen on: `-H`/`--hostname` on Next's command line wins
 * (scripts/start.mjs passes HOST as -H). `next start` or `next dev` run without -H listen on every
 * interface whatever HOST says (Next does not read it); elsewhere (tests, tools) HOST is the answer.
 */
export function listenHost(env: Env = process.env, argv: string[] = process.argv): string | undefined {
  // The last one, as Next reads it (`npm start -- -H 0.0.0.0` comes after start.mjs's own -H).
  let given: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-H' || a === '--hostname') given = argv[i + 1];
    const m = /^(?:-H|--hostname)=(.*)$/.exec(a);
    if (m) given = m[1];
  }
  if (given !== undefined) return given;
  if (/(?:^|[\\/])next$/.test(argv[1] ?? '') && (argv[2] === 'start' || argv[2] === 'dev')) return '0.0.0.0';
  return set(env.HOST);
}

/** Null when the settings may serve; else why not (AUTH=off away from loopback names HOST). */
export function authStartupProblem(env: Env = process.env, argv: string[] = process.argv): string | null {
  if (authSettings(env).enabled) return null;
  const host = listenHost(env, argv);
  if (isLoopbackHost(host)) return null;
  return `AUTH=off is accepted only on loopback, but HOST is ${host}: anyone who reaches ${host} would read every conversation and run agents. Unset AUTH (accounts on) or listen on 127.0.0.1.`;
}

/**
 * Null when ALLOWED_HOSTS and TRUST_PROXY may serve; else why not. A server reached beyond loopback
 * answers only the names it is told (a page whose name resolves to it must not read it): listening
 * there without ALLOWED_HOSTS would refuse everyone but localhost, so it is refused at start.
 */
export function networkStartupProblem(env: Env = process.env, argv: string[] = process.argv): string | null {
  const allowed = parseAllowedHosts(env.ALLOWED_HOSTS);
  if ('error' in allowed) return allowed.error;
  const trust = parseTrustProxy(env.TRUST_PROXY);
  if ('error' in trust) return trust.error;
  const host = listenHost(env, argv);
  if (isLoopbackHost(host) || allowed.hosts.length) return null;
  return `HOST is ${host}, beyond loopback, but ALLOWED_HOSTS is not set: name the host names people reach this server by (ALLOWED_HOSTS=orchestrator.example.com); requests naming any other host are refused.`;
}

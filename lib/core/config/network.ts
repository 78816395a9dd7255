/**
 * Who may address the server, and whom it believes about the client's address.
 *
 * ALLOWED_HOSTS: the names people reach the server by, comma-separated. An entry is a host name or
 * an IP address (IPv6 in brackets), any port; a leading dot (`.example.com`) also admits every
 * subdomain, as Vite's `server.allowedHosts` does. No ports, schemes, paths or `*`: the attack
 * (DNS rebinding) is a foreign *name*, and a catch-all would admit it. `localhost`, `127.0.0.1`
 * and `[::1]` are always admitted.
 *
 * TRUST_PROXY: how many reverse proxies stand in front (a positive integer; unset, 0 or false:
 * none). Each appends the address it was reached from to X-Forwarded-For, so the client is the
 * N-th address from the right; whatever stands left of it the client wrote itself.
 *
 * Plain functions over strings, without imports: proxy.ts runs them on every request.
 */

export interface HostRule {
  /** Lower-case host name, or IP address (IPv6 without brackets). */
  name: string;
  /** `.example.com`: the name and every name under it. */
  subdomains: boolean;
}

const LOOPBACK_NAMES: HostRule[] = ['localhost', '127.0.0.1', '::1'].map((name) => ({ name, subdomains: false }));

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

function validName(name: string): boolean {
  if (name.includes(':')) return /^[0-9a-f:.]+$/.test(name) && name.length <= 45; // IPv6 (brackets already removed)
  return name.length <= 253 && name.split('.').every((l) => LABEL.test(l));
}

let cached: { value: string | undefined; rules: HostRule[] } | undefined;

/**
 * The server's ALLOWED_HOSTS as rules, parsed once per value (the proxy, the origin check and
 * Better Auth's trusted origins all ask on every request). A malformed list admits only
 * loopback here: the server's start check (lib/engine/runtime/startup.ts) refuses it before anyone asks.
 */
export function allowedHostRules(env: Record<string, string | undefined> = process.env): HostRule[] {
  const value = env.ALLOWED_HOSTS;
  if (cached && cached.value === value) return cached.rules;
  const parsed = parseAllowedHosts(value);
  cached = { value, rules: 'hosts' in parsed ? parsed.hosts : [] };
  return cached.rules;
}

/**
 * A listen address only this machine reaches: unset, localhost, 127.x or ::1. (Not a Host rule:
 * LOOPBACK_NAMES are the names a request may give; this is where the server listens.)
 */
export function isLoopbackAddress(host: string | undefined): boolean {
  const h = (host ?? '').trim().replace(/^\[|\]$/g, '');
  return h === '' || h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** The entries of ALLOWED_HOSTS, or why one is not a name. */
export function parseAllowedHosts(value: string | undefined): { hosts: HostRule[] } | { error: string } {
  const hosts: HostRule[] = [];
  for (const raw of (value ?? '').split(',')) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    const subdomains = entry.startsWith('.');
    let name = subdomains ? entry.slice(1) : entry;
    const bracketed = /^\[([^\]]*)\]$/.exec(name);
    if (bracketed) name = bracketed[1]!;
    if (!validName(name) || (subdomains && name.includes(':')) || (!bracketed && name.includes(':'))) {
      return { error: `ALLOWED_HOSTS entry "${raw.trim()}" is not a host name: give names only (orchestrator.example.com, .example.com for its subdomains, [fd00::5] for IPv6), without scheme, port, path or *.` };
    }
    hosts.push({ name, subdomains });
  }
  return { hosts };
}

/** The name in a Host header (or an Origin's host), lower case, without port or IPv6 brackets; null when malformed. */
export function hostName(host: string | null | undefined): string | null {
  const h = (host ?? '').trim().toLowerCase();
  if (!h) return null;
  const v6 = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h);
  if (v6) return v6[1]!;
  const m = /^([^:[\]\s/@]+?)\.?(?::\d{1,5})?$/.exec(h);
  return m && validName(m[1]!) ? m[1]! : null;
}

/** Whether a Host header names this server: a loopback name or an ALLOWED_HOSTS entry. */
export function isAllowedHost(host: string | null | undefined, allowed: HostRule[]): boolean {
  const name = hostName(host);
  if (!name) return false;
  return [...LOOPBACK_NAMES, ...allowed].some((r) => name === r.name || (r.subdomains && name.endsWith(`.${r.name}`)));
}

/** TRUST_PROXY as a number of hops (0: none), or why it is not one. */
export function parseTrustProxy(value: string | undefined): { hops: number } | { error: string } {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === '0' || v === 'false') return { hops: 0 };
  if (/^[1-9]\d?$/.test(v)) return { hops: Number(v) };
  return { error: `TRUST_PROXY must be the number of reverse proxies in front of the server (1 for one nginx), or unset; not "${value}".` };
}

/**
 * The client's address by X-Forwarded-For, counted from the right past `hops` proxies; null when
 * no proxy is trusted or the header is shorter than the chain (then nobody vouches for it).
 */
export function forwardedClient(xForwardedFor: string | null | undefined, hops: number): string | null {
  if (hops < 1 || !xForwardedFor) return null;
  const chain = xForwardedFor.split(',').map((a) => a.trim()).filter(Boolean);
  const address = chain[chain.length - hops];
  return address && /^[0-9a-fA-F:.]+$/.test(address) ? address : null;
}

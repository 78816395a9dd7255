import dns from 'node:dns';
import net from 'node:net';
import { AppError } from '../../core/errors';

/**
 * The rule for a remote repository's URL, one place for every way in (a project cloned from a
 * URL, a project's remote settings, every fetch and push): what git on the host may be pointed at.
 *
 * - `https://host[:port]/path`, `ssh://[user@]host[:port]/path` and scp-style `[user@]host:path`;
 *   plain `http://` only for a `host:port` GIT_REMOTE_HOSTS lists (the tests' own git server);
 * - never `file://`, a local path, `ext::` or any `<transport>::` form, `git://`, a value starting
 *   with `-` (an option to git), a URL holding credentials (`user:password@`: the token is given
 *   apart and kept sealed), a query or a fragment;
 * - a host that resolves to a loopback, private, link-local (cloud metadata), unspecified,
 *   multicast or reserved address is refused unless GIT_REMOTE_HOSTS lists its `host:port`. This
 *   is checked again right before every git call, and the address checked is the one git
 *   connects to (pinned for http(s) with `http.curloptResolve`, for ssh with `HostName`), so a
 *   name that resolves elsewhere a second later (DNS rebinding) cannot take git there.
 */
export interface RemoteUrl {
  scheme: 'https' | 'http' | 'ssh';
  /** Lower-case; an IPv6 literal without brackets. */
  host: string;
  port: number;
  /** `host:port` as GIT_REMOTE_HOSTS lists it (an IPv6 literal in brackets). */
  hostPort: string;
  /** The repository's path on the host, without a leading slash (`team/app.git`). */
  path: string;
  /** The URL git is given (credentials never in it). */
  url: string;
  /** The ssh user (`git` of `git@host:path`); never set for http(s). */
  user?: string;
}

const refuse = (reason: string) => new AppError('E_REMOTE_URL', `The remote URL is refused: ${reason}.`, { field: 'url' });

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/;
const SCP = /^(?:([A-Za-z0-9_~][A-Za-z0-9._~-]{0,63})@)?([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]+\]):(.+)$/s;

function checkHost(raw: string): string {
  const host = raw.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (net.isIP(host)) return host;
  if (!HOSTNAME.test(host)) throw refuse(`"${raw.slice(0, 80)}" is not a host name`);
  return host.replace(/\.$/, '');
}

const hostPortOf = (host: string, port: number) => `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;

/** Parses and checks a remote URL by the rule above (no name is resolved here: see checkRemoteHost). */
export function parseRemoteUrl(input: unknown, allowHosts: readonly string[] = [], opts: { pathOptional?: boolean } = {}): RemoteUrl {
  if (typeof input !== 'string') throw refuse('it must be a text');
  const value = input.trim();
  if (!value) throw refuse('it is empty');
  if (value.length > 2048) throw refuse('it is longer than 2048 characters');
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(value)) throw refuse('it holds spaces or control characters');
  if (value.startsWith('-')) throw refuse('it starts with "-" (git would read it as an option)');
  if (/^[A-Za-z0-9+.-]+::/.test(value)) throw refuse('a "<transport>::" address (such as ext::) runs a program; use https:// or ssh://');
  if (/^[A-Za-z]:[\\/]/.test(value) || /^[./~\\]/.test(value)) throw refuse('a local path is not a remote; use https:// or ssh://');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    const m = SCP.exec(value);
    if (!m) throw refuse('use https://host/path, ssh://host/path or user@host:path');
    const host = checkHost(m[2]!);
    const path = m[3]!.replace(/^\/+/, '');
    if (!path || path.startsWith('-')) throw refuse('the repository path is missing');
    return { scheme: 'ssh', host, port: 22, hostPort: hostPortOf(host, 22), path, url: value, ...(m[1] ? { user: m[1] } : {}) };
  }
  if (scheme === 'file') throw refuse('file:// reads the server\'s own disk; use https:// or ssh://');
  if (scheme !== 'https' && scheme !== 'http' && scheme !== 'ssh') throw refuse(`${scheme}:// is not allowed; use https:// or ssh://`);
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw refuse('it is not a URL');
  }
  if (u.password) throw refuse('it holds a password; give the token apart (it is stored sealed, never in a URL)');
  if (u.username && scheme !== 'ssh') throw refuse('it holds a user name; give the token apart (it is stored sealed, never in a URL)');
  if (u.search || u.hash || value.includes('?') || value.includes('#')) throw refuse('it has a query or a fragment');
  const host = checkHost(u.hostname);
  const port = u.port ? Number(u.port) : scheme === 'https' ? 443 : scheme === 'http' ? 80 : 22;
  const hostPort = hostPortOf(host, port);
  if (scheme === 'http' && !allowHosts.includes(hostPort)) throw refuse('plain http:// sends the token unencrypted; use https:// (http:// only for a host:port GIT_REMOTE_HOSTS lists)');
  const path = decodeURIComponent(u.pathname).replace(/^\/+/, '');
  if ((!path && !opts.pathOptional) || path.startsWith('-')) throw refuse('the repository path is missing');
  const user = u.username ? decodeURIComponent(u.username) : undefined;
  if (user !== undefined && !/^[A-Za-z0-9_~][A-Za-z0-9._~-]{0,63}$/.test(user)) throw refuse('the ssh user name is not a plain name');
  return { scheme, host, port, hostPort, path, url: `${scheme}://${user ? `${user}@` : ''}${u.host.toLowerCase()}${u.pathname}`, ...(user ? { user } : {}) };
}

/** Where an address points, for the rule: only `public` is reachable without GIT_REMOTE_HOSTS. */
export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

const V4: [string, number, AddressKind][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const V6: [string, number, AddressKind][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'private'],
  ['fc00::', 7, 'private'],
  ['ff00::', 8, 'multicast'],
  ['2001:db8::', 32, 'reserved'],
  ['100::', 64, 'reserved'],
];

const lists = new Map<AddressKind, net.BlockList>();
for (const [addr, prefix, kind] of [...V4.map((r) => [...r, 'ipv4'] as const), ...V6.map((r) => [...r, 'ipv6'] as const)]) {
  let list = lists.get(kind);
  if (!list) lists.set(kind, (list = new net.BlockList()));
  list.addSubnet(addr, prefix, addr.includes(':') ? 'ipv6' : 'ipv4');
}

/** IPv4 carried inside an IPv6 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::`, 6to4 `2002:`), or null. */
function embeddedV4(v6: string): string | null {
  const groups = expandV6(v6);
  if (!groups) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (n: number) => groups.slice(0, n).every((g) => g === 0);
  if (zeros(5) && groups[5] === 0xffff) return v4(groups[6]!, groups[7]!);
  if (zeros(6) && (groups[6] !== 0 || groups[7]! > 1)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  return null;
}

/** An IPv6 address as eight numbers (a trailing dotted IPv4 read as two). */
function expandV6(addr: string): number[] | null {
  let a = addr.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const p = dotted[1]!.split('.').map(Number);
    a = a.slice(0, -dotted[1]!.length) + `${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const [head, tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
  const fill = tail !== undefined ? 8 - h.length - t.length : 0;
  const all = [...h, ...Array(Math.max(0, fill)).fill('0'), ...t];
  if (all.length !== 8) return null;
  const nums = all.map((g) => parseInt(g, 16));
  return nums.every((n) => Number.isInteger(n) && n >= 0 && n <= 0xffff) ? nums : null;
}

export function addressKind(address: string): AddressKind {
  const family = net.isIP(address);
  if (family === 0) return 'reserved';
  if (family === 6) {
    const inner = embeddedV4(address);
    if (inner) return addressKind(inner);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const [kind, list] of lists) if (list.check(address, type)) return kind;
  return 'public';
}

export interface CheckedHost {
  /** The address git is to connect to (already checked). */
  address: string;
  family: 4 | 6;
  /** GIT_REMOTE_HOSTS lists the host:port. */
  listed: boolean;
}

export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: Lookup = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * Resolves the URL's host and checks every address it has: any address off the public internet
 * refuses it (400 E_REMOTE_URL, naming the host and the kind of address), unless GIT_REMOTE_HOSTS
 * lists its `host:port`. A name that does not resolve is E_REMOTE_UNREACHABLE. The address
 * returned is the one git is pinned to.
 */
export async function checkRemoteHost(remote: RemoteUrl, allowHosts: readonly string[], lookup: Lookup = systemLookup): Promise<CheckedHost> {
  const listed = allowHosts.includes(remote.hostPort);
  let addresses: { address: string; family: number }[];
  if (net.isIP(remote.host)) addresses = [{ address: remote.host, family: net.isIP(remote.host) }];
  else {
    try {
      addresses = await lookup(remote.host);
    } catch {
      throw new AppError('E_REMOTE_UNREACHABLE', `The remote's host ${remote.host} could not be resolved.`, { host: remote.host });
    }
  }
  if (!addresses.length) throw new AppError('E_REMOTE_UNREACHABLE', `The remote's host ${remote.host} could not be resolved.`, { host: remote.host });
  if (!listed) {
    for (const a of addresses) {
      const kind = addressKind(a.address);
      if (kind !== 'public') {
        throw refuse(`${remote.host} resolves to a ${kind} address (${a.address}); a server's own network is reached only through a host:port GIT_REMOTE_HOSTS lists (${remote.hostPort})`);
      }
    }
  }
  const first = addresses[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4, listed };
}

/** `https://host/team/app.git` → `team/app`: the repository's name on its forge. */
export function repositoryPathOf(remote: RemoteUrl): string {
  return remote.path.replace(/\/+$/, '').replace(/\.git$/, '');
}

/** The URL as people may see it: never credentials (there are none in an accepted URL), for messages and views. */
export function displayUrl(remote: RemoteUrl): string {
  return remote.url;
}

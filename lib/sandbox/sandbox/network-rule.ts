/**
 * Where a workspace's setup line may connect: the decision as data, with nothing that runs.
 *
 * The setup's network namespace reaches out through slirp4netns (user-mode NAT: every connection
 * is made again by a process on the host), so whatever the host can reach, the setup could — its
 * own services included. The namespace's routing table holds the refusals: `prohibit` routes for
 * loopback, private, carrier-grade NAT, link-local (cloud metadata), multicast and reserved
 * ranges, for the host's own addresses and the networks it is directly on; SETUP_ALLOW_HOSTS
 * entries get normal routes through slirp, and the kernel's longest-prefix match decides. slirp's
 * own link (10.0.2.0/24: the gateway is the host's loopback) is refused by policy rules that come
 * before every route, but for its DNS forwarder on port 53 (slirp sends whatever port is asked of
 * it to the host's resolver, even one on the host's loopback). No IPv6: slirp gets none.
 *
 * `decide` answers for one address with the same table the namespace gets, so what the tests
 * check is what the kernel is given.
 */

/** slirp4netns' fixed addresses (its defaults) and the device it makes in the namespace. */
export const SLIRP = {
  network: '10.0.2.0/24',
  gateway: '10.0.2.2',
  dns: '10.0.2.3',
  device: 'tap0',
  mtu: 65520,
} as const;

/** Ranges a setup never reaches; an allow entry with the same prefix replaces the refusal. */
const REFUSED: [string, string][] = [
  ['0.0.0.0/8', 'this network'],
  ['10.0.0.0/8', 'a private network'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata)'],
  ['172.16.0.0/12', 'a private network'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.168.0.0/16', 'a private network'],
  ['198.18.0.0/15', 'benchmarking'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved and broadcast'],
];

/** Never opened by an allow entry: meaningless (the sandbox's own), or the host through slirp. */
const NEVER: [string, string][] = [
  ['0.0.0.0/8', 'this network'],
  ['127.0.0.0/8', 'loopback'],
  [SLIRP.network, "slirp's link (its gateway is the host's loopback)"],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved and broadcast'],
];

export interface Cidr {
  /** The network address as an unsigned 32-bit number. */
  base: number;
  bits: number;
}

export interface NetRoute {
  /** `a.b.c.d/n`, its host bits zero. */
  cidr: string;
  action: 'refuse' | 'allow';
  /** Why, in words (the range's name, "this host", "SETUP_ALLOW_HOSTS: mirror.lan"). */
  why: string;
}

export interface NetRule {
  /** Longest prefix first; at most one route per prefix. */
  routes: NetRoute[];
  /** SETUP_ALLOW_HOSTS entries that open nothing, and why. */
  ignored: { entry: string; why: string }[];
}

/** One address of the host as os.networkInterfaces() lists it. */
export interface HostAddress {
  address: string;
  /** `a.b.c.d/n` (os.networkInterfaces' `cidr`); null when only the address is known. */
  cidr: string | null;
  family: 'IPv4' | 'IPv6' | string | number;
  internal?: boolean;
}

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function v4Number(text: string): number | null {
  const m = V4.exec(text);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  if (parts.some((p, i) => p > 255 || (m[i + 1].length > 1 && m[i + 1].startsWith('0')))) return null;
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail allowed), or null. */
function v6Groups(text: string): number[] | null {
  if (!/^[0-9a-f:.]+$/.test(text) || !text.includes(':')) return null;
  let body = text;
  const tail: number[] = [];
  const dot = /(?:^|:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(body);
  if (dot) {
    const n = v4Number(dot[1]);
    if (n === null) return null;
    tail.push(n >>> 16, n & 0xffff);
    body = body.slice(0, body.length - dot[1].length);
    if (body.endsWith(':') && !body.endsWith('::')) body = body.slice(0, -1);
  }
  const halves = body.split('::');
  if (halves.length > 2) return null;
  const part = (s: string) => (s === '' ? [] : s.split(':'));
  const head = part(halves[0]);
  const rest = halves.length === 2 ? part(halves[1]) : [];
  if ([...head, ...rest].some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  const known = head.length + rest.length + tail.length;
  if (halves.length === 1 ? known !== 8 : known > 7) return null;
  const zeros = new Array(8 - known).fill(0);
  return [...head.map((g) => parseInt(g, 16)), ...zeros, ...rest.map((g) => parseInt(g, 16)), ...tail];
}

/**
 * An IPv4 address from its dotted form or an IPv4-mapped IPv6 form (`::ffff:10.0.0.1`,
 * `::ffff:a00:1`, `0:0:0:0:0:ffff:10.0.0.1`, in brackets or not), as a number; null for
 * anything else (other IPv6 addresses, names).
 */
export function parseV4(text: string): number | null {
  const t = text.trim().replace(/^\[(.*)\]$/, '$1').toLowerCase();
  const plain = v4Number(t);
  if (plain !== null) return plain;
  const g = v6Groups(t);
  if (!g || g.slice(0, 5).some((x) => x !== 0) || g[5] !== 0xffff) return null;
  return ((g[6] << 16) | g[7]) >>> 0;
}

export function v4Text(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function mask(bits: number): number {
  return bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
}

/** `a.b.c.d/n`, an address (`/32`) or an IPv4-mapped form with `/96`..`/128`; host bits cleared. */
export function parseCidr(text: string): Cidr | null {
  const [addr, len, ...rest] = text.trim().split('/');
  if (rest.length) return null;
  const base = parseV4(addr);
  if (base === null) return null;
  let bits = 32;
  if (len !== undefined) {
    if (!/^\d{1,3}$/.test(len)) return null;
    bits = Number(len);
    // A mapped address counts its prefix over the whole IPv6 address.
    if (addr.includes(':')) bits -= 96;
    if (bits < 0 || bits > 32) return null;
  }
  return { base: (base & mask(bits)) >>> 0, bits };
}

export function cidrText(c: Cidr): string {
  return `${v4Text(c.base)}/${c.bits}`;
}

export function contains(outer: Cidr, address: number): boolean {
  return ((address & mask(outer.bits)) >>> 0) === outer.base;
}

function within(inner: Cidr, outer: Cidr): boolean {
  return inner.bits >= outer.bits && contains(outer, inner.base);
}

/** A host name as DNS allows it (letters, digits, hyphens; dots between labels). */
export function isHostName(text: string): boolean {
  return text.length <= 253 && /^(?=.*[a-z])([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.?$/i.test(text);
}

/** The names among SETUP_ALLOW_HOSTS entries: what has to be resolved before the rule is made. */
export function namesIn(entries: string[]): string[] {
  return entries.filter((e) => parseCidr(e) === null && isHostName(e.trim())).map((e) => e.trim().toLowerCase().replace(/\.$/, ''));
}

/**
 * The setup's routing table: the refused ranges, this host's addresses and directly connected
 * networks, and the allow entries (names as `resolved` has them: their IPv4 addresses, resolved
 * when the setup starts). An allow entry that names a refused prefix exactly replaces it; one
 * inside a refused range is a narrower route and wins; a narrower refusal inside an allowed
 * range still holds (allow `192.0.2.0/24` does not open this host's `192.0.2.2`: list it alone).
 */
export function setupRule(input: { hostAddresses: HostAddress[]; allow: string[]; resolved?: Record<string, string[]> }): NetRule {
  const routes = new Map<string, NetRoute>();
  const refuse = (c: Cidr, why: string) => {
    const key = cidrText(c);
    if (!routes.has(key)) routes.set(key, { cidr: key, action: 'refuse', why });
  };
  for (const [cidr, why] of REFUSED) refuse(parseCidr(cidr) as Cidr, why);
  for (const a of input.hostAddresses) {
    if (a.internal || !(a.family === 'IPv4' || a.family === 4)) continue;
    const address = parseV4(a.address);
    if (address === null) continue;
    refuse({ base: address, bits: 32 }, 'this host');
    const net = a.cidr ? parseCidr(a.cidr) : null;
    if (net && net.bits < 32) refuse(net, 'a network this host is on');
  }
  const ignored: NetRule['ignored'] = [];
  const never = NEVER.map(([c, why]) => ({ cidr: parseCidr(c) as Cidr, why }));
  const open = (c: Cidr, entry: string) => {
    if (c.bits === 0) return void ignored.push({ entry, why: 'a default route opens nothing (public addresses are open already)' });
    const blocked = never.find((n) => within(c, n.cidr));
    if (blocked) return void ignored.push({ entry, why: `${blocked.why} is never reachable` });
    const key = cidrText(c);
    routes.set(key, { cidr: key, action: 'allow', why: `SETUP_ALLOW_HOSTS: ${entry}` });
  };
  for (const raw of input.allow) {
    const entry = raw.trim();
    if (!entry) continue;
    const c = parseCidr(entry);
    if (c) {
      open(c, entry);
      continue;
    }
    if (entry.includes(':')) {
      ignored.push({ entry, why: 'setup has no IPv6' });
      continue;
    }
    if (!isHostName(entry)) {
      ignored.push({ entry, why: 'not a name, an address or a CIDR range' });
      continue;
    }
    const name = entry.toLowerCase().replace(/\.$/, '');
    const addresses = (input.resolved?.[name] ?? []).map(parseV4).filter((n): n is number => n !== null);
    if (!addresses.length) ignored.push({ entry, why: 'the name has no IPv4 address' });
    for (const n of addresses) open({ base: n, bits: 32 }, entry);
  }
  const sorted = [...routes.values()].sort((a, b) => Number(b.cidr.split('/')[1]) - Number(a.cidr.split('/')[1]) || (a.cidr < b.cidr ? -1 : 1));
  return { routes: sorted, ignored };
}

export interface Decision {
  allowed: boolean;
  why: string;
}

/**
 * Whether a connection from the setup to `address` (and `port`) gets out, as the namespace's
 * policy rules and routes decide it: slirp's link first (only its DNS on port 53), then the
 * longest matching route, then the default route (public addresses). IPv6 never.
 */
export function decide(rule: NetRule, address: string, port?: number): Decision {
  const n = parseV4(address);
  if (n === null) return { allowed: false, why: 'setup has no IPv6' };
  const link = parseCidr(SLIRP.network) as Cidr;
  if (contains(link, n)) {
    if (n === parseV4(SLIRP.dns) && port === 53) return { allowed: true, why: "slirp's DNS forwarder (port 53 only)" };
    return { allowed: false, why: "slirp's link (its gateway is the host's loopback)" };
  }
  for (const r of rule.routes) {
    if (contains(parseCidr(r.cidr) as Cidr, n)) return { allowed: r.action === 'allow', why: r.why };
  }
  return { allowed: true, why: 'a public address' };
}

/**
 * The rule as `ip -batch` lines for the namespace: policy rules for slirp's link, then a
 * `prohibit` route per refusal and a route through slirp's gateway per allowed range (`onlink`:
 * the gateway itself is refused by the rules, its link is there). Run after slirp4netns has
 * configured the device (the gateway route needs it).
 */
export function ipBatch(rule: NetRule): string {
  const lines = [
    `rule add pref 100 to ${SLIRP.dns}/32 ipproto udp dport 53 lookup main`,
    `rule add pref 101 to ${SLIRP.dns}/32 ipproto tcp dport 53 lookup main`,
    `rule add pref 102 to ${SLIRP.network} prohibit`,
  ];
  for (const r of rule.routes) {
    lines.push(r.action === 'refuse' ? `route add prohibit ${r.cidr}` : `route add ${r.cidr} via ${SLIRP.gateway} dev ${SLIRP.device} onlink`);
  }
  return `${lines.join('\n')}\n`;
}

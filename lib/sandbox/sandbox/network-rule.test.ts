import { decide, ipBatch, namesIn, parseCidr, parseV4, setupRule, v4Text, type HostAddress } from './network-rule';

// This machine's shape: eth0 192.0.2.2/24 (a documentation range, here a real interface), the
// npm registry at a public-looking 203.0.113.80, a Docker bridge; nothing is sent anywhere.
const HOST: HostAddress[] = [
  { address: '127.0.0.1', cidr: '127.0.0.1/8', family: 'IPv4', internal: true },
  { address: '::1', cidr: '::1/128', family: 'IPv6', internal: true },
  { address: '192.0.2.2', cidr: '192.0.2.2/24', family: 'IPv4' },
  { address: 'fd00::2', cidr: 'fd00::2/64', family: 'IPv6' },
  { address: '198.51.100.7', cidr: '198.51.100.7/32', family: 'IPv4' },
  { address: '172.17.0.1', cidr: '172.17.0.1/16', family: 4 },
];

const allowed = (rule: ReturnType<typeof setupRule>, address: string, port = 443) => decide(rule, address, port).allowed;

describe('parseV4', () => {
  it('reads dotted and IPv4-mapped IPv6 forms, and nothing else', () => {
    expect(v4Text(parseV4('10.1.2.3') as number)).toBe('10.1.2.3');
    for (const mapped of ['::ffff:127.0.0.1', '::FFFF:7f00:1', '[::ffff:127.0.0.1]', '0:0:0:0:0:ffff:127.0.0.1', '0000:0000:0000:0000:0000:ffff:7f00:0001']) {
      expect([mapped, v4Text(parseV4(mapped) as number)]).toEqual([mapped, '127.0.0.1']);
    }
    for (const other of ['::1', 'fe80::1', '::127.0.0.1', '::ffff:1:2:3', '1.2.3', '1.2.3.256', '01.2.3.4', 'localhost', '', '1.2.3.4.5', 'ffff::127.0.0.1']) {
      expect([other, parseV4(other)]).toEqual([other, null]);
    }
  });

  it('reads CIDR ranges with their host bits cleared, mapped prefixes counted over 128 bits', () => {
    expect(parseCidr('10.1.2.3/8')).toEqual({ base: parseV4('10.0.0.0'), bits: 8 });
    expect(parseCidr('::ffff:10.1.0.0/112')).toEqual({ base: parseV4('10.1.0.0'), bits: 16 });
    expect(parseCidr('10.0.0.1')).toEqual({ base: parseV4('10.0.0.1'), bits: 32 });
    for (const bad of ['10.0.0.0/33', '10.0.0.0/-1', '10.0.0.0/8/8', '::ffff:10.0.0.0/95', 'mirror.lan/24', '10.0.0.0/']) expect([bad, parseCidr(bad)]).toEqual([bad, null]);
  });
});

describe('the setup network rule', () => {
  const rule = setupRule({ hostAddresses: HOST, allow: [] });

  it('refuses loopback, private, CGNAT, link-local and the cloud metadata address', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '0.0.0.0', '10.0.0.1', '10.255.255.53', '172.16.0.1', '172.31.255.254', '192.168.1.1', '100.64.0.1', '100.127.255.254', '169.254.169.254', '169.254.0.1', '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1', '198.18.0.1', '192.0.0.1']) {
      expect([a, allowed(rule, a)]).toEqual([a, false]);
    }
    expect(decide(rule, '169.254.169.254', 80).why).toMatch(/link-local/);
  });

  it("refuses the host's own addresses and the networks it is directly on, but not documentation ranges as such", () => {
    expect(decide(rule, '192.0.2.2', 6379)).toEqual({ allowed: false, why: 'this host' });
    expect(decide(rule, '192.0.2.1', 80)).toEqual({ allowed: false, why: 'a network this host is on' });
    expect(decide(rule, '198.51.100.7', 5432)).toEqual({ allowed: false, why: 'this host' });
    expect(allowed(rule, '172.17.0.2')).toBe(false);
    // The registry here: 203.0.113.0/24 is a documentation range, the host is not on it.
    expect(decide(rule, '203.0.113.80', 443)).toEqual({ allowed: true, why: 'a public address' });
    expect(allowed(rule, '198.51.100.8')).toBe(true);
    expect(allowed(rule, '8.8.8.8')).toBe(true);
    expect(allowed(rule, '100.128.0.1')).toBe(true);
    expect(allowed(rule, '172.32.0.1')).toBe(true);
  });

  it('refuses IPv4-mapped forms of refused addresses and every IPv6 address', () => {
    for (const a of ['::ffff:127.0.0.1', '::ffff:7f00:1', '[::ffff:169.254.169.254]', '::ffff:c000:202', '::1', 'fd00::2', 'fe80::1', '2001:db8::1']) {
      expect([a, allowed(rule, a)]).toEqual([a, false]);
    }
    expect(allowed(rule, '::ffff:203.0.113.80')).toBe(true);
  });

  it("refuses slirp's gateway (the host's loopback) and its link, but for DNS on port 53", () => {
    expect(decide(rule, '10.0.2.2', 6379).allowed).toBe(false);
    expect(decide(rule, '10.0.2.2', 53).allowed).toBe(false);
    expect(decide(rule, '10.0.2.3', 53).allowed).toBe(true);
    expect(decide(rule, '10.0.2.3', 6379).allowed).toBe(false);
    expect(decide(rule, '10.0.2.3').allowed).toBe(false);
    expect(decide(rule, '10.0.2.77', 80).allowed).toBe(false);
  });

  it('opens what SETUP_ALLOW_HOSTS lists: addresses, CIDR ranges, mapped forms, names as resolved', () => {
    const open = setupRule({
      hostAddresses: HOST,
      allow: ['10.1.0.0/16', '192.168.7.7', '::ffff:172.20.0.5', 'mirror.lan', 'Registry.Internal.', '169.254.169.254'],
      resolved: { 'mirror.lan': ['10.9.9.9', '10.9.9.10'], 'registry.internal': ['192.168.50.1'] },
    });
    expect(open.ignored).toEqual([]);
    for (const a of ['10.1.0.1', '10.1.255.254', '192.168.7.7', '172.20.0.5', '10.9.9.9', '10.9.9.10', '192.168.50.1', '169.254.169.254']) {
      expect([a, allowed(open, a)]).toEqual([a, true]);
    }
    for (const a of ['10.2.0.1', '192.168.7.8', '172.20.0.6', '10.9.9.11', '169.254.169.253', '127.0.0.1', '192.0.2.2']) {
      expect([a, allowed(open, a)]).toEqual([a, false]);
    }
    expect(decide(open, '10.9.9.9', 4873).why).toBe('SETUP_ALLOW_HOSTS: mirror.lan');
  });

  it('names are only what they resolve to; namesIn lists what to resolve', () => {
    expect(namesIn(['10.0.0.0/8', 'mirror.lan', 'Registry.Internal.', '::1', 'bad name', '1.2.3.4'])).toEqual(['mirror.lan', 'registry.internal']);
    const unresolved = setupRule({ hostAddresses: HOST, allow: ['mirror.lan'] });
    expect(unresolved.ignored).toEqual([{ entry: 'mirror.lan', why: 'the name has no IPv4 address' }]);
    expect(allowed(unresolved, '10.9.9.9')).toBe(false);
    // A name that resolves to loopback opens nothing.
    const loop = setupRule({ hostAddresses: HOST, allow: ['evil.example'], resolved: { 'evil.example': ['127.0.0.1'] } });
    expect(loop.ignored[0]).toMatchObject({ entry: 'evil.example', why: expect.stringMatching(/loopback/) });
    expect(allowed(loop, '127.0.0.1')).toBe(false);
  });

  it('an allowed range keeps the narrower refusals inside it; the host opens only when listed alone', () => {
    const wide = setupRule({ hostAddresses: HOST, allow: ['192.0.2.0/24', '10.0.0.0/8'] });
    expect(allowed(wide, '192.0.2.9')).toBe(true);
    expect(allowed(wide, '192.0.2.2')).toBe(false);
    expect(allowed(wide, '10.200.0.1')).toBe(true);
    expect(decide(wide, '10.0.2.2', 80).allowed).toBe(false);
    const host = setupRule({ hostAddresses: HOST, allow: ['192.0.2.2'] });
    expect(allowed(host, '192.0.2.2')).toBe(true);
    expect(allowed(host, '192.0.2.1')).toBe(false);
  });

  it('never opens loopback, slirp, multicast or reserved ranges, nor anything with IPv6 or a default route', () => {
    const r = setupRule({ hostAddresses: HOST, allow: ['127.0.0.1', '10.0.2.2', '10.0.2.0/24', '10.0.2.0/25', '224.0.0.1', '0.0.0.0/0', '255.255.255.255', '::1', 'fd00::/8', 'not_a host!', '0.0.0.0'] });
    expect(r.ignored.map((i) => i.entry)).toEqual(['127.0.0.1', '10.0.2.2', '10.0.2.0/24', '10.0.2.0/25', '224.0.0.1', '0.0.0.0/0', '255.255.255.255', '::1', 'fd00::/8', 'not_a host!', '0.0.0.0']);
    expect(r.routes.filter((x) => x.action === 'allow')).toEqual([]);
    expect(allowed(r, '127.0.0.1')).toBe(false);
    expect(decide(r, '10.0.2.2', 80).allowed).toBe(false);
  });

  it('becomes ip commands: policy rules for the link, prohibit routes, allow routes through the gateway', () => {
    const open = setupRule({ hostAddresses: HOST, allow: ['10.1.0.0/16'] });
    const batch = ipBatch(open).trim().split('\n');
    expect(batch.slice(0, 3)).toEqual([
      'rule add pref 100 to 10.0.2.3/32 ipproto udp dport 53 lookup main',
      'rule add pref 101 to 10.0.2.3/32 ipproto tcp dport 53 lookup main',
      'rule add pref 102 to 10.0.2.0/24 prohibit',
    ]);
    expect(batch).toContain('route add prohibit 10.0.0.0/8');
    expect(batch).toContain('route add prohibit 169.254.0.0/16');
    expect(batch).toContain('route add prohibit 192.0.2.2/32');
    expect(batch).toContain('route add prohibit 192.0.2.0/24');
    expect(batch).toContain('route add 10.1.0.0/16 via 10.0.2.2 dev tap0 onlink');
    expect(batch).not.toContain('route add prohibit 203.0.113.0/24');
    // One route per prefix: an allow naming a refused prefix replaces it.
    const same = ipBatch(setupRule({ hostAddresses: HOST, allow: ['10.0.0.0/8'] }));
    expect(same).toContain('route add 10.0.0.0/8 via 10.0.2.2 dev tap0 onlink');
    expect(same).not.toContain('prohibit 10.0.0.0/8');
  });
});

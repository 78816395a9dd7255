import { allowedHostRules, forwardedClient, hostName, isAllowedHost, isLoopbackAddress, parseAllowedHosts, parseTrustProxy, type HostRule } from './network';

const rules = (value: string): HostRule[] => {
  const parsed = parseAllowedHosts(value);
  if ('error' in parsed) throw new Error(parsed.error);
  return parsed.hosts;
};

it('admits loopback names on any port, and nothing else without ALLOWED_HOSTS', () => {
  for (const host of ['localhost', 'localhost:3000', '127.0.0.1', '127.0.0.1:8080', '[::1]', '[::1]:3000', 'LOCALHOST:3000', 'localhost.']) expect(isAllowedHost(host, [])).toBe(true);
  for (const host of ['evil.example.com', 'evil.example.com:3000', 'localhost.evil.example.com', '127.0.0.1.nip.io', '0.0.0.0', '10.0.0.5:3000', '', null, undefined, 'localhost:abc', 'a b', 'user@localhost', '[::2]']) expect(isAllowedHost(host, [])).toBe(false);
});

it('admits the ALLOWED_HOSTS names on any port; a leading dot admits subdomains too', () => {
  const allowed = rules(' Orchestrator.example.com , .corp.example, 192.168.1.4, [fd00::5] ');
  for (const host of ['orchestrator.example.com', 'orchestrator.example.com:443', 'corp.example', 'team.corp.example:8443', 'a.b.corp.example', '192.168.1.4:3000', '[fd00::5]:3000']) expect(isAllowedHost(host, allowed)).toBe(true);
  for (const host of ['example.com', 'x.orchestrator.example.com', 'evilcorp.example', 'corp.example.evil.com', '192.168.1.5', '[fd00::6]']) expect(isAllowedHost(host, allowed)).toBe(false);
});

it('refuses entries that are not names: schemes, ports, paths, wildcards', () => {
  for (const entry of ['http://a.example.com', 'a.example.com:8443', 'a.example.com/x', '*', '*.example.com', 'a..example.com', 'fd00::5', '.[fd00::5]']) expect(parseAllowedHosts(entry)).toEqual({ error: expect.stringContaining('is not a host name') });
  expect(parseAllowedHosts('')).toEqual({ hosts: [] });
});

it('reads the name of a Host header', () => {
  expect(hostName('Example.COM:3000')).toBe('example.com');
  expect(hostName('[::1]:3000')).toBe('::1');
  expect(hostName('bad host')).toBeNull();
});

it('takes the client address the trusted proxies appended, never what the client wrote left of it', () => {
  expect(parseTrustProxy(undefined)).toEqual({ hops: 0 });
  expect(parseTrustProxy('false')).toEqual({ hops: 0 });
  expect(parseTrustProxy('2')).toEqual({ hops: 2 });
  expect(parseTrustProxy('true')).toEqual({ error: expect.stringContaining('TRUST_PROXY') });
  expect(forwardedClient('1.2.3.4, 10.0.0.9', 0)).toBeNull();
  expect(forwardedClient('1.2.3.4, 10.0.0.9', 1)).toBe('10.0.0.9');
  expect(forwardedClient('1.2.3.4, 10.0.0.9, 172.16.0.1', 2)).toBe('10.0.0.9');
  expect(forwardedClient('10.0.0.9', 2)).toBeNull();
  expect(forwardedClient('1.2.3.4, not-an-address', 1)).toBeNull();
});

describe('the one reading of ALLOWED_HOSTS', () => {
  it('parses the list once per value and reads it anew when the value changes', () => {
    const env: Record<string, string | undefined> = { ALLOWED_HOSTS: 'a.example.com' };
    const first = allowedHostRules(env);
    expect(first).toEqual([{ name: 'a.example.com', subdomains: false }]);
    expect(allowedHostRules({ ...env })).toBe(first);
    expect(allowedHostRules({ ALLOWED_HOSTS: '.b.example.com' })).toEqual([{ name: 'b.example.com', subdomains: true }]);
    // A malformed list admits only loopback here (the start check refuses it).
    expect(allowedHostRules({ ALLOWED_HOSTS: 'http://x' })).toEqual([]);
    expect(allowedHostRules({})).toEqual([]);
  });

  it('tells a loopback listen address from others', () => {
    for (const h of [undefined, '', 'localhost', '127.0.0.1', '127.1.2.3', '::1', '[::1]']) expect(isLoopbackAddress(h)).toBe(true);
    for (const h of ['0.0.0.0', '192.168.1.5', 'example.com', '::']) expect(isLoopbackAddress(h)).toBe(false);
  });
});

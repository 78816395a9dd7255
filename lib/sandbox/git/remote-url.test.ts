import { addressKind, checkRemoteHost, parseRemoteUrl, repositoryPathOf, type Lookup } from './remote-url';

/** The rule that decides where git on the host may go: no name is resolved here, no traffic sent. */
const refused = (url: unknown, allow: string[] = []) => {
  try {
    parseRemoteUrl(url, allow);
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return 'accepted';
};

describe('parseRemoteUrl', () => {
  it('accepts https, ssh:// and scp-style URLs, with their host, port and path', () => {
    expect(parseRemoteUrl('https://github.com/team/app.git')).toMatchObject({ scheme: 'https', host: 'github.com', port: 443, hostPort: 'github.com:443', path: 'team/app.git', url: 'https://github.com/team/app.git' });
    expect(parseRemoteUrl('https://GitLab.Example.com:8443/group/sub/app')).toMatchObject({ host: 'gitlab.example.com', port: 8443, hostPort: 'gitlab.example.com:8443', path: 'group/sub/app' });
    expect(parseRemoteUrl('ssh://git@git.example.com:2222/team/app.git')).toMatchObject({ scheme: 'ssh', host: 'git.example.com', port: 2222, user: 'git', path: 'team/app.git' });
    expect(parseRemoteUrl('git@github.com:team/app.git')).toMatchObject({ scheme: 'ssh', host: 'github.com', port: 22, user: 'git', path: 'team/app.git', url: 'git@github.com:team/app.git' });
    expect(parseRemoteUrl('https://[2001:db8::1]:8443/x.git')).toMatchObject({ host: '2001:db8::1', hostPort: '[2001:db8::1]:8443' });
    expect(repositoryPathOf(parseRemoteUrl('https://github.com/team/app.git'))).toBe('team/app');
  });

  it('refuses file://, local paths, ext:: and other transports, options, credentials and other schemes (400 E_REMOTE_URL)', () => {
    for (const url of [
      'file:///srv/repo.git',
      'FILE:///etc',
      '/srv/projects/other',
      './repo',
      '../repo',
      '~/repo',
      'C:\\repo',
      'ext::sh -c touch% /tmp/pwned',
      'fd::17',
      'transport::https://github.com/x',
      '-uhelp',
      '--upload-pack=touch /tmp/x',
      'https://user:secret@github.com/team/app.git',
      'https://token@github.com/team/app.git',
      'git://github.com/team/app.git',
      'ftp://example.com/x.git',
      'https://github.com/team/app.git?x=1',
      'https://github.com/team/app.git#main',
      'https://github.com',
      'https://-evil.example.com/x.git',
      'ssh://-oProxyCommand=touch@host/x',
      '-oProxyCommand=x@host:path',
      'host:-path',
      'https://exa mple.com/x',
      'https://example.com/x\ny',
      '',
      42,
      null,
      'x'.repeat(3000),
    ]) {
      expect([url, refused(url)]).toEqual([url, 'E_REMOTE_URL']);
    }
  });

  it('allows plain http:// only for a host:port GIT_REMOTE_HOSTS lists', () => {
    expect(refused('http://127.0.0.1:8080/team/app.git')).toBe('E_REMOTE_URL');
    expect(refused('http://127.0.0.1:8080/team/app.git', ['127.0.0.1:9090'])).toBe('E_REMOTE_URL');
    expect(refused('http://127.0.0.1:8080/team/app.git', ['127.0.0.1:8080'])).toBe('accepted');
    expect(refused('http://git.lan/team/app.git', ['git.lan:80'])).toBe('accepted');
  });
});

describe('addressKind', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd00::1', 'private'],
    ['fc12:3456::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a00:1', 'private'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:c0a8:101::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['140.82.112.3', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
  ])('%s is %s', (address, kind) => {
    expect(addressKind(address)).toBe(kind);
  });
});

describe('checkRemoteHost', () => {
  /** Names resolved by a table: the rule is tested without any lookup or connection. */
  const table =
    (t: Record<string, string[]>): Lookup =>
    async (host) => {
      const list = t[host];
      if (!list) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
      return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
  const lookup = table({
    'github.com': ['140.82.112.3'],
    'internal.corp': ['10.0.0.7'],
    'metadata.cloud': ['169.254.169.254'],
    'v6.local': ['fe80::1'],
    'mixed.example': ['140.82.112.3', '192.168.0.10'],
    'localhost': ['127.0.0.1', '::1'],
  });
  const code = (p: Promise<unknown>) => p.then(() => 'accepted', (e) => (e as { code: string }).code);

  it('pins a public host to the address it checked', async () => {
    expect(await checkRemoteHost(parseRemoteUrl('https://github.com/team/app.git'), [], lookup)).toEqual({ address: '140.82.112.3', family: 4, listed: false });
  });

  it('refuses private, link-local and loopback hosts, by name or address, unless GIT_REMOTE_HOSTS lists the host:port', async () => {
    for (const url of [
      'https://internal.corp/team/app.git',
      'https://metadata.cloud/latest/meta-data',
      'https://169.254.169.254/x.git',
      'https://10.0.0.7/x.git',
      'https://[fe80::1]/x.git',
      'https://v6.local/x.git',
      'https://localhost/x.git',
      'https://127.0.0.1:8443/x.git',
      'git@internal.corp:team/app.git',
      // One private address among public ones is enough to refuse: git could connect to either.
      'https://mixed.example/x.git',
    ]) {
      expect([url, await code(checkRemoteHost(parseRemoteUrl(url), [], lookup))]).toEqual([url, 'E_REMOTE_URL']);
    }
    expect(await code(checkRemoteHost(parseRemoteUrl('https://internal.corp/team/app.git'), ['internal.corp:443'], lookup))).toBe('accepted');
    expect(await code(checkRemoteHost(parseRemoteUrl('https://internal.corp:8443/team/app.git'), ['internal.corp:443'], lookup))).toBe('E_REMOTE_URL');
    expect(await checkRemoteHost(parseRemoteUrl('http://localhost:8080/x.git', ['localhost:8080']), ['localhost:8080'], lookup)).toMatchObject({ address: '127.0.0.1', listed: true });
  });

  it('says a name that does not resolve is unreachable', async () => {
    expect(await code(checkRemoteHost(parseRemoteUrl('https://nowhere.invalid/x.git'), [], lookup))).toBe('E_REMOTE_UNREACHABLE');
  });

  it('the refusal names the host and the kind of address, and how to allow it', async () => {
    const e = await checkRemoteHost(parseRemoteUrl('https://metadata.cloud/x.git'), [], lookup).catch((x: Error) => x);
    expect((e as Error).message).toContain('metadata.cloud resolves to a link-local address');
    expect((e as Error).message).toContain('GIT_REMOTE_HOSTS');
  });
});

describe('an API URL', () => {
  it('may have no path; the same rule otherwise', () => {
    expect(parseRemoteUrl('https://api.github.com', [], { pathOptional: true })).toMatchObject({ host: 'api.github.com', path: '' });
    expect(() => parseRemoteUrl('https://api.github.com', [])).toThrow('repository path is missing');
    expect(() => parseRemoteUrl('file:///etc', [], { pathOptional: true })).toThrow('file://');
  });
});

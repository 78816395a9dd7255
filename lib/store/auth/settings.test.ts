import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { authSettings, authStartupProblem, listenHost, networkStartupProblem, resolveSecret } from '.';

describe('account settings', () => {
  it('are on by default; AUTH=off turns them off', () => {
    expect(authSettings({})).toMatchObject({ enabled: true, allowSignup: false });
    expect(authSettings({ AUTH: 'off' }).enabled).toBe(false);
    expect(authSettings({ ALLOW_SIGNUP: 'true' }).allowSignup).toBe(true);
    expect(authSettings({ OIDC_ISSUER: 'http://idp', OIDC_CLIENT_ID: 'c' }).oidc).toBeUndefined();
    expect(authSettings({ OIDC_ISSUER: 'http://idp', OIDC_CLIENT_ID: 'c', OIDC_CLIENT_SECRET: 's', OIDC_ADMIN_GROUP: 'ops' }).oidc).toEqual({ issuer: 'http://idp', clientId: 'c', clientSecret: 's', adminGroup: 'ops' });
  });

  it('accept AUTH=off only on loopback, naming HOST otherwise (HOST or next -H alike)', () => {
    for (const host of [undefined, '127.0.0.1', '::1', 'localhost', '127.0.0.2']) expect(authStartupProblem({ AUTH: 'off', ...(host ? { HOST: host } : {}) }, ['node', 'tool'])).toBeNull();
    expect(authStartupProblem({ AUTH: 'off', HOST: '0.0.0.0' }, ['node', 'tool'])).toMatch(/HOST is 0\.0\.0\.0/);
    expect(authStartupProblem({ AUTH: 'off' }, ['node', 'next', 'start', '-H', '0.0.0.0'])).toMatch(/HOST is 0\.0\.0\.0/);
    expect(authStartupProblem({ AUTH: 'off' }, ['node', 'next', 'start', '--hostname=192.168.1.4'])).toMatch(/HOST is 192\.168\.1\.4/);
    expect(authStartupProblem({ AUTH: 'off', HOST: '127.0.0.1' }, ['node', 'next', 'start', '-H', '127.0.0.1'])).toBeNull();
    expect(authStartupProblem({ HOST: '0.0.0.0' }, ['node', 'next', 'start'])).toBeNull();
  });

  it('know that `next start` or `next dev` without -H listens on every interface, whatever HOST says', () => {
    expect(listenHost({ HOST: '127.0.0.1' }, ['/usr/bin/node', '/app/node_modules/.bin/next', 'start'])).toBe('0.0.0.0');
    expect(listenHost({}, ['/usr/bin/node', '/app/node_modules/next/dist/bin/next', 'dev'])).toBe('0.0.0.0');
    expect(listenHost({ HOST: '10.0.0.8' }, ['/usr/bin/node', '/app/node_modules/next/dist/bin/next', 'start', '-H', '127.0.0.1'])).toBe('127.0.0.1');
    expect(authStartupProblem({ AUTH: 'off', HOST: '127.0.0.1' }, ['node', 'next', 'start'])).toMatch(/HOST is 0\.0\.0\.0/);
    // npm start -- -H 0.0.0.0: Next takes the last -H.
    expect(listenHost({}, ['node', 'next', 'start', '-p', '3000', '-H', '127.0.0.1', '-H', '0.0.0.0'])).toBe('0.0.0.0');
  });

  it('need ALLOWED_HOSTS beyond loopback, and refuse a malformed ALLOWED_HOSTS or TRUST_PROXY anywhere', () => {
    expect(networkStartupProblem({}, ['node', 'next', 'start', '-H', '127.0.0.1'])).toBeNull();
    expect(networkStartupProblem({}, ['node', 'next', 'start', '-H', '0.0.0.0'])).toMatch(/HOST is 0\.0\.0\.0, beyond loopback, but ALLOWED_HOSTS is not set/);
    expect(networkStartupProblem({}, ['node', 'next', 'start'])).toMatch(/ALLOWED_HOSTS is not set/);
    expect(networkStartupProblem({ ALLOWED_HOSTS: 'orchestrator.example.com' }, ['node', 'next', 'start', '-H', '0.0.0.0'])).toBeNull();
    expect(networkStartupProblem({ ALLOWED_HOSTS: 'https://orchestrator.example.com' }, ['node', 'next', 'start', '-H', '127.0.0.1'])).toMatch(/ALLOWED_HOSTS entry "https:\/\/orchestrator.example.com" is not a host name/);
    expect(networkStartupProblem({ ALLOWED_HOSTS: 'a.example.com:8443' }, ['node', 'tool'])).toMatch(/not a host name/);
    expect(networkStartupProblem({ ALLOWED_HOSTS: '*' }, ['node', 'tool'])).toMatch(/not a host name/);
    expect(networkStartupProblem({ TRUST_PROXY: 'yes' }, ['node', 'tool'])).toMatch(/TRUST_PROXY must be the number of reverse proxies/);
    expect(networkStartupProblem({ TRUST_PROXY: '1' }, ['node', 'tool'])).toBeNull();
  });

  it('generate the secret once, keep it in DATA_DIR with mode 600, and prefer a configured one', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bmad-secret-'));
    try {
      const first = resolveSecret(undefined, dir);
      expect(first.length).toBeGreaterThanOrEqual(32);
      expect(fs.statSync(path.join(dir, 'auth-secret')).mode & 0o777).toBe(0o600);
      expect(resolveSecret(undefined, dir)).toBe(first);
      expect(resolveSecret('configured-secret-configured-secret', dir)).toBe('configured-secret-configured-secret');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { DEFAULT_COMMAND_SETTINGS, loadConfig, parseReadonlyPaths, parseSecretsKey } from '.';

describe('command settings', () => {
  it('default to 10 minutes, 2 GB, 256 processes and no toolchain folders', () => {
    expect(loadConfig({}, '/srv/app').commands).toEqual(DEFAULT_COMMAND_SETTINGS);
    expect(DEFAULT_COMMAND_SETTINGS).toMatchObject({ timeoutMs: 600_000, memoryMb: 2048, maxProcesses: 256 });
  });

  it('read COMMAND_* variables', () => {
    const c = loadConfig({ COMMAND_TIMEOUT_MS: '5000', COMMAND_MEMORY_MB: '512', COMMAND_MAX_FILE_MB: '10', COMMAND_READONLY_PATHS: '/opt/node, /opt/go:/opt/node/' }, '/srv/app').commands;
    expect(c).toEqual({ timeoutMs: 5000, memoryMb: 512, maxProcesses: 256, maxFileMb: 10, readonlyPaths: ['/opt/node', '/opt/go'], workspaceMaxMb: 2048, setupAllowHosts: [] });
  });

  it('take only absolute folders, never / itself', () => {
    expect(parseReadonlyPaths('relative,/,/usr/local/../opt/x,, ~/bin')).toEqual(['/usr/opt/x']);
    expect(parseReadonlyPaths(undefined)).toEqual([]);
  });
});

describe('workspace quota, setup hosts and remote settings', () => {
  it('read WORKSPACE_MAX_MB, SETUP_ALLOW_HOSTS, GIT_REMOTE_HOSTS and FORGE_POLL_SECONDS', () => {
    const c = loadConfig({ WORKSPACE_MAX_MB: '100', SETUP_ALLOW_HOSTS: 'mirror.lan, 10.1.0.0/16  10.1.0.0/16', GIT_REMOTE_HOSTS: '127.0.0.1:8080,Git.Local:443', FORGE_POLL_SECONDS: '0' }, '/srv/app');
    expect(c.commands.workspaceMaxMb).toBe(100);
    expect(c.commands.setupAllowHosts).toEqual(['mirror.lan', '10.1.0.0/16']);
    expect(c.remotes.allowHosts).toEqual(['127.0.0.1:8080', 'git.local:443']);
    expect(c.remotes.pollSeconds).toBe(0);
    expect(loadConfig({}, '/srv/app').remotes).toMatchObject({ secretsKey: null, secretsKeyInvalid: false, allowHosts: [], pollSeconds: 120 });
  });

  it('take SECRETS_KEY as 32 bytes of hex or base64, and say when it is neither', () => {
    const hex = 'ab'.repeat(32);
    expect(parseSecretsKey(hex).key?.toString('hex')).toBe(hex);
    const b64 = Buffer.alloc(32, 7).toString('base64');
    expect(parseSecretsKey(b64).key?.equals(Buffer.alloc(32, 7))).toBe(true);
    expect(parseSecretsKey('short')).toEqual({ key: null, invalid: true });
    expect(parseSecretsKey(Buffer.alloc(16).toString('base64'))).toEqual({ key: null, invalid: true });
    expect(parseSecretsKey(undefined)).toEqual({ key: null, invalid: false });
  });
});

import { DEFAULT_COMMAND_SETTINGS, loadConfig, parseReadonlyPaths } from '.';

describe('command settings', () => {
  it('default to 10 minutes, 2 GB, 256 processes and no toolchain folders', () => {
    expect(loadConfig({}, '/srv/app').commands).toEqual(DEFAULT_COMMAND_SETTINGS);
    expect(DEFAULT_COMMAND_SETTINGS).toMatchObject({ timeoutMs: 600_000, memoryMb: 2048, maxProcesses: 256 });
  });

  it('read COMMAND_* variables', () => {
    const c = loadConfig({ COMMAND_TIMEOUT_MS: '5000', COMMAND_MEMORY_MB: '512', COMMAND_MAX_FILE_MB: '10', COMMAND_READONLY_PATHS: '/opt/node, /opt/go:/opt/node/' }, '/srv/app').commands;
    expect(c).toEqual({ timeoutMs: 5000, memoryMb: 512, maxProcesses: 256, maxFileMb: 10, readonlyPaths: ['/opt/node', '/opt/go'] });
  });

  it('take only absolute folders, never / itself', () => {
    expect(parseReadonlyPaths('relative,/,/usr/local/../opt/x,, ~/bin')).toEqual(['/usr/opt/x']);
    expect(parseReadonlyPaths(undefined)).toEqual([]);
  });
});

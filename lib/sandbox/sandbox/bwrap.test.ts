import { bwrapArgs, SANDBOX_ENV } from './bwrap';

describe('bwrapArgs', () => {
  const args = bwrapArgs({
    mounts: [
      { kind: 'ro', host: '/srv/p', at: '/project' },
      { kind: 'rw', host: '/srv/p/_bmad-output', at: '/project/_bmad-output' },
      { kind: 'hide-dir', at: '/project/.git' },
      { kind: 'hide-file', at: '/project/.env' },
    ],
    cwd: '/project',
    env: SANDBOX_ENV,
    command: ['/usr/bin/python3', 'x.py', '--flag'],
    disableUserns: true,
  });
  const joined = args.join(' ');

  it('isolates: own user, pid, network, IPC and hostname namespaces, no capabilities, dies with the server', () => {
    for (const flag of ['--unshare-user', '--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session', '--disable-userns', '--clearenv']) {
      expect(args).toContain(flag);
    }
    expect(joined).toContain('--cap-drop ALL');
    expect(joined).toMatch(/--uid [1-9]\d* --gid [1-9]\d*/);
  });

  it('mounts only /usr of the system, a private /tmp, and the described folders in order', () => {
    expect(joined).toContain('--ro-bind /usr /usr');
    expect(joined).toContain('--tmpfs /tmp');
    expect(joined).not.toMatch(/--(ro-)?bind(-try)? \/etc /);
    expect(joined).not.toMatch(/--(ro-)?bind(-try)? \/(home|root|var|srv) /);
    const order = ['--ro-bind /srv/p /project', '--bind /srv/p/_bmad-output /project/_bmad-output', '--tmpfs /project/.git --remount-ro /project/.git', '--ro-bind /dev/null /project/.env'].map((m) => joined.indexOf(m));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it('starts in the project with a minimal environment, then the command after --', () => {
    expect(joined).toContain('--chdir /project');
    expect(joined).toContain('--setenv HOME /tmp');
    expect(joined).toContain('--setenv TMPDIR /tmp');
    expect(args.slice(args.indexOf('--'))).toEqual(['--', '/usr/bin/python3', 'x.py', '--flag']);
    expect(Object.keys(SANDBOX_ENV).sort()).toEqual(['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']);
  });
});

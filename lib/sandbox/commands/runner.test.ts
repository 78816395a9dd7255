import { execFileSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { DEFAULT_COMMAND_SETTINGS, type CommandSettings } from '../../core/config';
import { HeadTail } from '../sandbox';
import { runCommand, type CommandHost, type CommandRequest } from '.';
import { stoppedBy } from './runner';

/**
 * The command runner on real bubblewrap, bash and git: what a line sees, what it cannot reach,
 * and the limits on everything it starts.
 */
const HOST_READY = existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/python3') && existsSync('/usr/bin/git');
const sandboxed = HOST_READY || process.env.CI ? describe : describe.skip;

jest.setTimeout(60_000);

const host: CommandHost = { bwrap: '/usr/bin/bwrap', python: '/usr/bin/python3', disableUserns: true };
let base: string;
let checkout: string;
let tmp: string;
let settings: CommandSettings;

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-cmd-')));
  checkout = path.join(base, 'workspaces', 'one');
  tmp = path.join(base, 'tmp', 'one');
  await fs.mkdir(checkout, { recursive: true });
  await fs.writeFile(path.join(checkout, 'README.md'), '# one\n');
  settings = { ...DEFAULT_COMMAND_SETTINGS, timeoutMs: 20_000 };
});
afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

const run = (command: string, over: Partial<CommandRequest> = {}, s: Partial<CommandSettings> = {}) =>
  runCommand({ checkout, cwd: checkout, tmp, command, ...over }, { ...settings, ...s }, host);

/** Host processes whose command line contains the marker. */
async function processesWith(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const cmd = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.replace(/\0/g, ' ').includes(marker)) found.push(pid);
  }
  return found;
}

async function gone(marker: string): Promise<string[]> {
  for (let i = 0; i < 30 && (await processesWith(marker)).length; i++) await new Promise((r) => setTimeout(r, 100));
  return processesWith(marker);
}

describe('HeadTail', () => {
  it('keeps a bounded head and tail of any stream, marking the cut', () => {
    const ht = new HeadTail(10, 10);
    ht.push(Buffer.from('0123456789abc'));
    for (let i = 0; i < 10_000; i++) ht.push(Buffer.from('xxxxxxxxxxxxxxxxxxxx'));
    ht.push(Buffer.from('THE-END!!!'));
    expect(ht.total).toBe(13 + 200_000 + 10);
    expect(ht.text()).toBe(`0123456789\n[... ${(200_003).toLocaleString('en')} bytes cut ...]\nTHE-END!!!`);
    const small = new HeadTail(10, 10);
    small.push(Buffer.from('short'));
    small.push(Buffer.from(' and more'));
    expect(small.text()).toBe('short and more');
    expect(small.cut).toBe(0);
  });
});

describe('stoppedBy', () => {
  it('classifies what stderr says, in linear time on a long line the model wrote', () => {
    expect(stoppedBy({ timedOut: false, stderr: 'bash: fork: retry: Resource temporarily unavailable\n' }, false)).toBe('process_limit');
    expect(stoppedBy({ timedOut: false, stderr: 'BlockingIOError: [Errno 11] Resource temporarily unavailable in start_new_thread\n' }, false)).toBe('process_limit');
    expect(stoppedBy({ timedOut: false, stderr: 'fork\nResource temporarily unavailable\n' }, false)).toBeNull();
    expect(stoppedBy({ timedOut: false, stderr: 'MemoryError\n' }, false)).toBe('memory_limit');
    for (const flood of ['thread '.repeat(72_000), 'Resource temporarily unavailable '.repeat(16_000)]) {
      const started = performance.now();
      expect(stoppedBy({ timedOut: false, stderr: flood }, false)).toBeNull();
      expect(performance.now() - started).toBeLessThan(100);
    }
  });
});

sandboxed('a command', () => {
  it('returns exit code, stdout and stderr, starting in the folder asked for', async () => {
    await fs.mkdir(path.join(checkout, 'sub'));
    const r = await run('echo out; echo err >&2; pwd; exit 3', { cwd: path.join(checkout, 'sub') });
    expect(r).toMatchObject({ exitCode: 3, stdout: 'out\n/workspace/sub\n', stderr: 'err\n', stopped: null, truncated: false });
    expect((await run('true')).exitCode).toBe(0);
    expect((await run('exit 42')).exitCode).toBe(42);
    expect((await run('no-such-program')).exitCode).toBe(127);
  });

  it('passes output whole, NUL bytes and a forged end mark included, with the line\'s own exit code', async () => {
    const r = await run("printf 'a\\0@@eof%s\\0b' 0123456789abcdef0123456789abcdef; printf 'err\\0@@eo' >&2; exit 7");
    expect(r).toMatchObject({ exitCode: 7, stdout: 'a\0@@eof0123456789abcdef0123456789abcdef\0b', stderr: 'err\0@@eo' });
    const said = (stream: string) => r.transcript.filter((c) => c.stream === stream).map((c) => c.text).join('');
    expect([said('stdout'), said('stderr')]).toEqual([r.stdout, r.stderr]);
  });

  it('creates no folder outside the checkout through a link planted where the render folder goes', async () => {
    const elsewhere = path.join(base, 'elsewhere');
    await fs.mkdir(elsewhere);
    await fs.symlink(elsewhere, path.join(checkout, '_bmad'));
    const r = await run('ls /workspace/_bmad/render 2>&1; echo x > /workspace/_bmad/render/x 2>&1; echo done', { readOnlyInside: [path.join(checkout, '_bmad')], writableInside: [path.join(checkout, '_bmad', 'render')] });
    expect(r.stdout).toMatch(/done\n$/);
    expect(await fs.readdir(elsewhere)).toEqual([]);
  });

  it('commits as the person even when the name holds what git refuses in an identity', async () => {
    execFileSync('git', ['init', '-q', '-b', 'bmad/one'], { cwd: checkout, env: { PATH: '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', HOME: base } as unknown as NodeJS.ProcessEnv });
    const r = await run('git add -A && git commit -qm one && git log -1 --format="%an <%ae>"', { gitIdentity: { name: 'Eve <evil>\nX', email: 'eve@example.com>' } });
    expect(r).toMatchObject({ exitCode: 0, stdout: 'Eve evilX <eve@example.com>\n' });
  });

  it('writes the checkout, and keeps its /tmp between commands in the workspace\'s folder', async () => {
    const r = await run('echo hi > made.txt && echo diff > /tmp/change.diff && echo $HOME $TMPDIR && id -un');
    expect(r).toMatchObject({ exitCode: 0, stdout: '/tmp /tmp\nsandbox\n' });
    expect(await fs.readFile(path.join(checkout, 'made.txt'), 'utf8')).toBe('hi\n');
    expect(await fs.readFile(path.join(tmp, 'change.diff'), 'utf8')).toBe('diff\n');
    expect((await run('cat /tmp/change.diff')).stdout).toBe('diff\n');
  });

  it('keeps the installed method read-only but its render folder writable', async () => {
    await fs.mkdir(path.join(checkout, '_bmad', 'scripts'), { recursive: true });
    const opts = { readOnlyInside: [path.join(checkout, '_bmad')], writableInside: [path.join(checkout, '_bmad', 'render')] };
    const r = await run('echo x > _bmad/scripts/evil.py; echo snap > _bmad/render/skill.md; cat _bmad/render/skill.md', opts);
    expect(r.stderr).toMatch(/Read-only file system/);
    expect(r.stdout).toBe('snap\n');
    expect(existsSync(path.join(checkout, '_bmad', 'scripts', 'evil.py'))).toBe(false);
  });

  it('cuts a 30 MB flood to its head and tail, holding little memory meanwhile', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    gc();
    const before = process.memoryUsage();
    const r = await run('echo FIRST-LINE; head -c 30000000 /dev/zero | tr "\\0" x; echo; echo LAST-LINE');
    // Chunks already handed on are garbage; V8 frees their memory a little later, off the main thread.
    let after = process.memoryUsage();
    for (let i = 0; i < 20 && after.arrayBuffers - before.arrayBuffers >= 10_000_000; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      gc();
      after = process.memoryUsage();
    }
    expect(r.exitCode).toBe(0);
    expect(r.truncated).toBe(true);
    expect(r.outputBytes).toBe(30_000_000 + 'FIRST-LINE\n\nLAST-LINE\n'.length);
    expect(Buffer.byteLength(r.stdout) + Buffer.byteLength(r.stderr)).toBeLessThanOrEqual(1_000_000);
    expect(r.stdout.startsWith('FIRST-LINE\nxxx')).toBe(true);
    expect(r.stdout.endsWith('xxx\nLAST-LINE\n')).toBe(true);
    expect(r.stdout).toMatch(/\n\[\.\.\. [\d,]+ bytes cut \.\.\.\]\n/);
    // A buffer growing with the output would hold 30 MB; the kept head and tail are 0.5 MB.
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(10_000_000);
  });

  it('stops at the time limit and leaves no process, not even a disowned, double-forked or setsid one', async () => {
    const marker = `${Date.now() % 100000}`;
    const started = Date.now();
    const r = await run(`sleep 1${marker}1 & disown; (sleep 1${marker}2 &); setsid sleep 1${marker}3 & nohup sleep 1${marker}4 >/dev/null 2>&1 & echo started; sleep 1${marker}5`, { timeoutMs: 1_500 });
    expect(r).toMatchObject({ stopped: 'time_limit', exitCode: null, stdout: 'started\n' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await gone(`sleep 1${marker}`)).toEqual([]);
  });

  it('is ended with everything it started when the turn is stopped', async () => {
    const marker = `${(Date.now() % 100000) + 3}`;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 800);
    const r = await run(`setsid sleep 3${marker} & sleep 3${marker}`, { signal: controller.signal });
    expect(r).toMatchObject({ aborted: true, exitCode: null });
    expect(await gone(`sleep 3${marker}`)).toEqual([]);
  });

  it('leaves nothing running once the line itself has ended', async () => {
    const marker = `${(Date.now() % 100000) + 7}`;
    const r = await run(`setsid sleep 2${marker} & (sleep 2${marker} &) ; echo done`);
    expect(r).toMatchObject({ exitCode: 0, stdout: 'done\n', stopped: null });
    expect(await gone(`sleep 2${marker}`)).toEqual([]);
  });

  it('holds a fork storm at the process limit and leaves nothing behind', async () => {
    const started = Date.now();
    const r = await run('bomb() { bomb | bomb & }; bomb; sleep 3', { timeoutMs: 15_000 }, { maxProcesses: 64 });
    // Which limit a storm meets first depends on the host's load: forks refused (EAGAIN), or
    // refused for memory when its many shells fill the memory limit first; either way it is held.
    expect(['process_limit', 'memory_limit', 'time_limit']).toContain(r.stopped);
    expect(r.stderr).toMatch(/Resource temporarily unavailable|Cannot allocate memory/);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await gone('bomb() {')).toEqual([]);
  });

  it('stops at the memory limit', async () => {
    const r = await run('python3 -c "x = bytearray(1024 * 1024 * 1024); print(len(x))"', {}, { memoryMb: 256 });
    expect(r.stopped).toBe('memory_limit');
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe('');
  });

  it('leaves no set-user-ID file behind in what it could write', async () => {
    const r = await run('cp /bin/true suid && chmod 4755 suid && mkdir -p d && chmod 2755 d && cp /bin/true /tmp/suid2 && chmod u+s /tmp/suid2 && stat -c %a suid');
    expect(r).toMatchObject({ exitCode: 0, stdout: '4755\n' });
    expect((await fs.stat(path.join(checkout, 'suid'))).mode & 0o7777).toBe(0o755);
    expect((await fs.stat(path.join(checkout, 'd'))).mode & 0o7777).toBe(0o755);
    expect((await fs.stat(path.join(tmp, 'suid2'))).mode & 0o7777).toBe(0o755);
  });

  it('changes no host file through a link swapped in by a parallel command while set-id bits are cleared', async () => {
    // A root-owned (the server's) file outside the checkout, readable by its owner only.
    const outside = path.join(base, 'outside');
    await fs.mkdir(outside);
    const target = path.join(outside, 'secret');
    await fs.writeFile(target, 'secret', { mode: 0o600 });
    await fs.chmod(target, 0o600);
    // One command keeps a set-user-ID file and a link to the target swapping names
    // (renameat2 RENAME_EXCHANGE in a loop), setting the bit again and again; the other commands
    // end at once, so the set-id clearing after each of them runs while the names swap.
    const swapper = [
      'import ctypes, os, sys, time',
      'libc = ctypes.CDLL(None, use_errno=True)',
      "nr = {'x86_64': 316, 'aarch64': 276}[os.uname().machine]",
      "os.chdir('/workspace/race')",
      "fd = os.open('suid', os.O_RDONLY)",
      'end = time.time() + float(sys.argv[1])',
      'n = 0',
      'while time.time() < end:',
      '    try: os.fchmod(fd, 0o4755)',
      '    except OSError: pass',
      "    libc.syscall(nr, -100, b'suid', -100, b'lnk', 2)",
      '    n += 1',
      'print("swaps", n)',
    ].join('\n');
    await fs.writeFile(path.join(checkout, 'swap.py'), swapper);
    const swapping = run(`mkdir race && cp /bin/true race/suid && ln -s '${target}' race/lnk && python3 swap.py 6`, {}, { timeoutMs: 60_000 });
    let done = false;
    void swapping.then(() => (done = true));
    let quick = 0;
    while (!done) {
      await run('true');
      quick++;
      if (((await fs.stat(target)).mode & 0o7777) !== 0o600) break;
    }
    const r = await swapping;
    expect(r.stdout).toMatch(/^swaps [1-9]\d*\n$/);
    expect(quick).toBeGreaterThan(0);
    expect((await fs.stat(target)).mode & 0o7777).toBe(0o600);
    for (const name of ['suid', 'lnk']) {
      const st = await fs.lstat(path.join(checkout, 'race', name));
      if (!st.isSymbolicLink()) expect(st.mode & 0o6000).toBe(0);
    }
  }, 120_000);

  it('shows no host path in any process\'s command line or environment, nor in /proc\'s other views but mountinfo', async () => {
    const dataDir = path.join(base, 'data');
    await fs.mkdir(dataDir);
    const probe = [
      'for p in /proc/[0-9]*; do for f in cmdline environ status; do echo "$p/$f $(base64 -w0 < $p/$f 2>/dev/null)"; done; done',
      'for f in /proc/self/mounts /proc/self/cgroup /proc/self/stat /proc/1/stat /proc/self/maps; do echo "$f $(base64 -w0 < $f)"; done',
      'echo "mountinfo $(base64 -w0 < /proc/self/mountinfo)"',
      'echo "fds $(ls /proc/self/fd | tr "\\n" " " | base64 -w0)"',
      'readlink /proc/1/cwd /proc/1/root /proc/self/cwd | base64 -w0 | sed "s/^/links /"; echo',
    ].join('; ');
    const r = await run(probe, { env: { APP_MODE: 'test' } });
    expect(r.exitCode).toBe(0);
    const decoded = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [name, b64 = ''] = l.split(' ');
        return { name, text: Buffer.from(b64, 'base64').toString('utf8') };
      });
    const seen = decoded.map((d) => d.name);
    expect(seen).toContain('/proc/1/cmdline');
    expect(seen.filter((n) => n.endsWith('/environ')).length).toBeGreaterThan(1);
    expect(decoded.find((d) => d.name === '/proc/1/cmdline')?.text).toContain('/bin/bash');
    const hostPaths = [base, checkout, tmp, dataDir, process.cwd(), path.dirname(base)].filter((p) => p.length > 4);
    for (const d of decoded) {
      if (d.name === 'mountinfo') continue;
      for (const p of hostPaths) expect(`${d.name}: ${d.text}`).not.toContain(p);
    }
    // mountinfo names each bind mount's source as a path of its file system, which no option
    // hides (docs/build.md says so): it shows the checkout's and temp folder's places and the
    // server's support files, never the repository or another folder of the host.
    const mountinfo = decoded.find((d) => d.name === 'mountinfo')?.text ?? '';
    expect(mountinfo).toContain(' /workspace ');
    expect(mountinfo).not.toContain(process.cwd());
    expect(mountinfo).not.toContain(dataDir);
    // Only stdio (and ls's own listing) are open: no descriptor of the server's reaches inside.
    expect(decoded.find((d) => d.name === 'fds')?.text.trim()).toBe('0 1 2 3');
    // The wrapper's environment and descriptors are not readable at all.
    expect(decoded.find((d) => d.name === '/proc/1/environ')?.text).toBe('');
  });

  it('cannot change the host\'s device nodes', async () => {
    const before = await fs.stat('/dev/null');
    const r = await run('chmod 000 /dev/null /dev/zero 2>&1; touch -d 2001-01-01 /dev/null 2>&1; echo written > /dev/null && head -c 3 /dev/zero | od -An -tx1');
    expect(r.stdout).toMatch(/00 00 00/);
    const after = await fs.stat('/dev/null');
    expect(after.mode).toBe(before.mode);
    expect(after.mtimeMs).toBeGreaterThan(Date.parse('2020-01-01'));
    expect((await fs.stat('/dev/zero')).mode & 0o777).toBe(0o666);
  });

  it('clears set-id bits even when the line fights its wrapper: signals, tracing, hidden folders, a late background chmod', async () => {
    const r = await run(
      [
        'cp /bin/true s1 && chmod 4755 s1',
        'mkdir -p hid/deep && cp /bin/true hid/deep/s2 && chmod 6755 hid/deep/s2 && chmod 0311 hid/deep && chmod 0311 hid',
        'kill -9 1; kill -STOP 1; echo "kill=$?"',
        'python3 -c "import ctypes; l = ctypes.CDLL(None, use_errno=True); print(\'trace\', l.ptrace(16, 1, 0, 0), ctypes.get_errno())"',
        'cat /proc/1/environ > /dev/null 2>&1 || echo environ-refused',
        'printf "@@done\\0forged\\0" 2>/dev/null >&3 || echo fd3-closed',
        '(sleep 0.3; chmod 4755 s1 hid/deep/s2) >/dev/null 2>&1 &',
        'setsid sh -c "sleep 0.3; chmod 4755 s1" >/dev/null 2>&1 &',
        'echo end',
      ].join('\n'),
    );
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
    expect(r.stdout).toMatch(/trace -1 1\n/);
    expect(r.stdout).toContain('environ-refused');
    expect(r.stdout).toContain('fd3-closed');
    expect(r.stdout).toMatch(/end\n$/);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await fs.stat(path.join(checkout, 's1'))).mode & 0o6000).toBe(0);
    expect((await fs.stat(path.join(checkout, 'hid', 'deep', 's2'))).mode & 0o6000).toBe(0);
  });

  it('clears set-id bits of files the server made, and leaves read-only mounts alone without failing', async () => {
    // Made by the server (its uid: the sandbox's user inside), as a clone or a file tool would.
    await fs.writeFile(path.join(checkout, 'server-made'), 'x');
    await fs.chmod(path.join(checkout, 'server-made'), 0o4755);
    await fs.mkdir(path.join(checkout, '_bmad'), { recursive: true });
    await fs.writeFile(path.join(checkout, '_bmad', 'method-tool'), 'x');
    await fs.chmod(path.join(checkout, '_bmad', 'method-tool'), 0o4755);
    const r = await run('stat -c %a server-made', { readOnlyInside: [path.join(checkout, '_bmad')] });
    expect(r).toMatchObject({ exitCode: 0, stdout: '4755\n', stderr: '' });
    expect((await fs.stat(path.join(checkout, 'server-made'))).mode & 0o7777).toBe(0o755);
    // Read-only inside: the clearing's chmod is refused there (the operator's own files), and the command is not the worse for it.
    expect((await fs.stat(path.join(checkout, '_bmad', 'method-tool'))).mode & 0o7777).toBe(0o4755);
  });

  it('clears set-id bits of a line cut off at its time limit', async () => {
    const r = await run('cp /bin/true s3 && chmod 4755 s3 && mkdir -p d && cp /bin/true /tmp/s4 && chmod 2755 /tmp/s4 && echo set && sleep 30', { timeoutMs: 1_500 });
    expect(r).toMatchObject({ stopped: 'time_limit', stdout: 'set\n' });
    expect((await fs.stat(path.join(checkout, 's3'))).mode & 0o6000).toBe(0);
    expect((await fs.stat(path.join(tmp, 's4'))).mode & 0o6000).toBe(0);
  });

  it('runs one command at a time per workspace: parallel calls queue', async () => {
    const a = run('echo a-start; sleep 1; echo a-end');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    const b = await run('echo b');
    expect(Date.now() - started).toBeGreaterThan(500);
    expect((await a).stdout).toBe('a-start\na-end\n');
    expect(b.stdout).toBe('b\n');
  });

  it('keeps stdout and stderr in the order they came, escape codes included, and sets NO_COLOR', async () => {
    const r = await run('printf "\\033[31mred\\033[0m %s %s\\n" "$NO_COLOR" "$FORCE_COLOR"; sleep 0.2; echo warn >&2; sleep 0.2; echo last');
    expect(r.transcript).toEqual([
      { stream: 'stdout', text: '\u001b[31mred\u001b[0m 1 0\n' },
      { stream: 'stderr', text: 'warn\n' },
      { stream: 'stdout', text: 'last\n' },
    ]);
    expect(r.stdout).toBe('\u001b[31mred\u001b[0m 1 0\nlast\n');
  });

  describe('disk quota', () => {
    it('stops a command past the workspace\'s quota, refuses the next one but a removal, and runs again once under', async () => {
      const s = { workspaceMaxMb: 8 };
      const r = await run('for i in $(seq 1 60); do head -c 1000000 /dev/zero > /tmp/f$i; sleep 0.1; done; echo finished', {}, s);
      expect(r.stopped).toBe('disk_quota');
      expect(r.stdout).not.toContain('finished');
      expect(r.disk?.usedBytes).toBeGreaterThan(8 * 1024 * 1024);
      expect(r.disk?.usedBytes).toBeLessThan(40 * 1024 * 1024);
      const refused = await run('echo should-not-run > x.txt', {}, s);
      expect(refused).toMatchObject({ refused: 'disk_quota', exitCode: null, stdout: '' });
      expect(existsSync(path.join(checkout, 'x.txt'))).toBe(false);
      const freed = await run('rm -f /tmp/f*', {}, s);
      expect(freed).toMatchObject({ exitCode: 0 });
      expect(freed.refused).toBeUndefined();
      expect(await run('echo again', {}, s)).toMatchObject({ exitCode: 0, stdout: 'again\n' });
    }, 60_000);

    it('counts a short command\'s writes before the next command', async () => {
      const s = { workspaceMaxMb: 8 };
      expect(await run('head -c 12000000 /dev/zero > big.bin', {}, s)).toMatchObject({ exitCode: 0 });
      expect(await run('true', {}, s)).toMatchObject({ refused: 'disk_quota' });
    });
  });

  it('cannot write a file past the file size limit', async () => {
    const r = await run('head -c 3000000 /dev/zero > big.bin', {}, { maxFileMb: 1 });
    expect(r.exitCode).not.toBe(0);
    expect((await fs.stat(path.join(checkout, 'big.bin'))).size).toBeLessThanOrEqual(1024 * 1024);
  });

  it('sees nothing of the host: no /root, /home, data folder, other workspace or server folder', async () => {
    const other = path.join(base, 'workspaces', 'two');
    const dataDir = path.join(base, 'data');
    await fs.mkdir(other, { recursive: true });
    await fs.writeFile(path.join(other, 'secret.txt'), 'OTHER WORKSPACE');
    await fs.mkdir(dataDir, { recursive: true });
    await fs.writeFile(path.join(dataDir, 'app.db'), 'DATA');
    const probes = ['/root', '/home', dataDir, other, process.cwd(), '/etc/shadow', '/etc/hostname', '/var', '/srv', '/opt/bmad/../../root'];
    const r = await run(probes.map((p) => `if [ -e '${p}' ]; then echo 'SEEN ${p}'; fi`).join('; ') + '; ls /etc; cat /etc/passwd');
    expect(r.stdout).not.toMatch(/SEEN/);
    expect(r.stdout).not.toContain('OTHER WORKSPACE');
    expect(r.stdout).toContain('sandbox:x:1000:1000');
    expect(r.stdout).not.toMatch(/^root:x:0:0:root:\/root/m);
    // The checkout's real place is not visible either.
    expect(r.stdout).not.toContain(base);
  });

  it('sees the public certificates but not the host\'s private TLS keys', async () => {
    // A key only its owner may read, as the host keeps them; the server's user (root here) owns it.
    const planted = existsSync('/etc/ssl/private') ? path.join('/etc/ssl/private', `bmad-test-${process.pid}.key`) : null;
    if (planted) await fs.writeFile(planted, 'PRIVATE-KEY-MATERIAL', { mode: 0o600 });
    try {
      const r = await run(`ls /etc/ssl; ls /etc/ssl/private 2>&1; cat /etc/ssl/private/*.key /etc/pki/tls/private/* 2>&1; head -c 27 /etc/ssl/certs/ca-certificates.crt`);
      expect(r.stdout).not.toContain('PRIVATE-KEY-MATERIAL');
      expect(r.stdout).not.toMatch(/^private$/m);
      expect(r.stdout).toMatch(/ls: cannot access '\/etc\/ssl\/private'/);
      if (existsSync('/etc/ssl/certs/ca-certificates.crt')) expect(r.stdout).toContain('-----BEGIN CERTIFICATE-----');
    } finally {
      if (planted) await fs.rm(planted, { force: true });
    }
  });

  it('gets a clean environment: the project\'s variables, never the server\'s', async () => {
    process.env.BMAD_TEST_SERVER_SECRET = 'sk-server-secret-123';
    try {
      const r = await run('env', { env: { APP_MODE: 'test', PATH: '/evil', LD_PRELOAD: '/tmp/x.so' } });
      expect(r.stdout).not.toContain('sk-server-secret-123');
      expect(r.stdout).not.toMatch(/^(OPENAI_API_KEY|DATABASE_URL|LD_PRELOAD)=/m);
      expect(r.stdout).toMatch(/^APP_MODE=test$/m);
      expect(r.stdout).toMatch(/^CI=true$/m);
      expect(r.stdout).toMatch(/^HOME=\/tmp$/m);
      expect(r.stdout).toMatch(/^PATH=\/usr\/local\/bin:\/usr\/bin:\/bin:\/opt\/bmad\/bin$/m);
    } finally {
      delete process.env.BMAD_TEST_SERVER_SECRET;
    }
  });

  it('puts the operator\'s read-only toolchain folders on PATH, unwritable', async () => {
    const tool = path.join(base, 'toolchain');
    await fs.mkdir(path.join(tool, 'bin'), { recursive: true });
    await fs.writeFile(path.join(tool, 'bin', 'mytool'), '#!/bin/sh\necho tool ran\n', { mode: 0o755 });
    const r = await run('mytool; touch $(dirname $(command -v mytool))/x', {}, { readonlyPaths: [tool] });
    expect(r.stdout).toBe('tool ran\n');
    expect(r.stderr).toMatch(/Read-only file system/);
  });

  describe('network', () => {
    let server: net.Server;
    let port: number;
    beforeEach(async () => {
      server = net.createServer((s) => s.end('HELLO-FROM-HOST\n'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as net.AddressInfo).port;
    });
    afterEach(async () => {
      await new Promise((resolve) => server.close(resolve));
    });
    const probe = () =>
      `python3 -c "
import socket
for host, port in [('127.0.0.1', ${port}), ('1.1.1.1', 53)]:
    try:
        s = socket.create_connection((host, port), timeout=2)
        print('REACHED', host, s.recv(100).decode().strip())
    except OSError as e:
        print('BLOCKED', host, type(e).__name__)
"; curl -sS -m 3 http://1.1.1.1/ >/dev/null 2>&1 && echo CURL-REACHED || echo CURL-BLOCKED`;

    it('reaches nothing from a command: neither the internet nor the host\'s loopback', async () => {
      const r = await run(probe());
      expect(r.stdout).toContain(`BLOCKED 127.0.0.1`);
      expect(r.stdout).toContain('BLOCKED 1.1.1.1');
      expect(r.stdout).toContain('CURL-BLOCKED');
      expect(r.stdout).not.toContain('REACHED');
    });
  });

  it('runs git on the checkout\'s own repository and reports what changed', async () => {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: checkout, env: { PATH: '/usr/bin:/bin', HOME: base, GIT_CONFIG_NOSYSTEM: '1' } as unknown as NodeJS.ProcessEnv }).toString().trim();
    git('init', '-q', '-b', 'bmad/one');
    git('-c', 'user.name=Seed', '-c', 'user.email=seed@example.com', 'add', '.');
    git('-c', 'user.name=Seed', '-c', 'user.email=seed@example.com', 'commit', '-qm', 'seed');
    const identity = { name: 'Ada Lovelace', email: 'ada@example.com' };
    const edit = await run('echo "more" >> README.md && echo new > new.txt && git status --short', { gitIdentity: identity });
    expect(edit.stdout).toBe(' M README.md\n?? new.txt\n');
    expect(edit.changes).toEqual({ files: [{ path: 'README.md', status: ' M' }, { path: 'new.txt', status: '??' }], more: 0 });
    const commit = await run('git add -A && git commit -qm "Add new" && git log --format="%an <%ae> %s" -1 && git branch --show-current', { gitIdentity: identity });
    expect(commit).toMatchObject({ exitCode: 0, stdout: 'Ada Lovelace <ada@example.com> Add new\nbmad/one\n' });
    expect(commit.changes?.files).toEqual([{ path: 'README.md', status: 'clean' }, { path: 'new.txt', status: 'clean' }]);
    expect(git('log', '--format=%an %s', '-1')).toBe('Ada Lovelace Add new');
  });

  it('says it cannot tell what changed when the status report is longer than it keeps, never "clean" for the files past the cut', async () => {
    execFileSync('git', ['init', '-q', '-b', 'bmad/one'], { cwd: checkout, env: { PATH: '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', HOME: base } as unknown as NodeJS.ProcessEnv });
    // 21,000 untracked files with long names: each status snapshot is over 4 MB.
    const many = path.join(checkout, 'node_modules');
    await fs.mkdir(many);
    const long = 'x'.repeat(180);
    for (let i = 0; i < 21_000; i += 500) await Promise.all(Array.from({ length: 500 }, (_, j) => fs.writeFile(path.join(many, `${long}${i + j}`), '')));
    const r = await run('echo more >> README.md');
    expect(r.exitCode).toBe(0);
    expect(r.changes).toBeNull();
    expect(r.changesUnknown).toBe(true);
  }, 120_000);

  it('runs `uv run` with python3 where no uv is installed, refusing a missing package', async () => {
    await fs.writeFile(path.join(checkout, 'hello.py'), '# /// script\n# dependencies = []\n# ///\nimport sys\nprint("hello", *sys.argv[1:])\n');
    const r = await run('uv run --no-cache hello.py a "b c"');
    expect(r).toMatchObject({ exitCode: 0, stdout: 'hello a b c\n' });
    const missing = await run('uv run --with surely-not-installed-pkg-xyz hello.py');
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toMatch(/needs surely-not-installed-pkg-xyz, not installed/);
    expect(missing.stdout).toBe('');
    expect((await run('uv sync')).stderr).toMatch(/only `uv run/);
  });

  it('keeps the event loop answering while a command runs', async () => {
    let worst = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last - 20);
      last = now;
    }, 20);
    try {
      const r = await run('head -c 20000000 /dev/urandom | base64 | tail -c 10; sleep 2');
      expect(r.exitCode).toBe(0);
    } finally {
      clearInterval(timer);
    }
    // The health check answers within a second; a blocked loop would stall for the whole command.
    expect(worst).toBeLessThan(1_000);
  });
});

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_COMMAND_SETTINGS, type CommandSettings } from '../../core/config';
import { runCommand, runSetup, setupNetworkCapability, type CommandHost, type SetupRequest } from '.';
import { DEFAULT_SCRIPT_SETTINGS } from '../../core/config';

/**
 * A project's setup line on real bubblewrap and slirp4netns: what it reaches (tests send traffic
 * only to loopback, to a network namespace they make, and — `npm ci` — to the npm registry; what
 * the rule refuses off loopback is tested in network-rule.test.ts), its caches, the reuse of an
 * installed tree, and its output while it runs.
 */
const HOST_READY = ['/usr/bin/bwrap', '/usr/bin/python3', '/usr/bin/git', '/usr/bin/slirp4netns', '/usr/bin/nsenter'].every(existsSync);
const sandboxed = HOST_READY || process.env.CI ? describe : describe.skip;

jest.setTimeout(120_000);

const host: CommandHost = { bwrap: '/usr/bin/bwrap', python: '/usr/bin/python3', disableUserns: true };
const gitEnv = { PATH: '/usr/bin:/bin', HOME: os.tmpdir(), GIT_CONFIG_NOSYSTEM: '1' } as unknown as NodeJS.ProcessEnv;
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=Seed', '-c', 'user.email=seed@example.com', ...args], { cwd, env: gitEnv }).toString();

let base: string;
let settings: CommandSettings;

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-setup-')));
  settings = { ...DEFAULT_COMMAND_SETTINGS, timeoutMs: 90_000 };
});
afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

/** A git checkout with `files` committed, as a workspace's clone is before its setup. */
async function checkoutWith(name: string, files: Record<string, string>): Promise<string> {
  const dir = path.join(base, 'workspaces', name);
  await fs.mkdir(dir, { recursive: true });
  for (const [f, text] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(dir, f)), { recursive: true });
    await fs.writeFile(path.join(dir, f), text);
  }
  git(dir, 'init', '-q', '-b', `bmad/${name}`);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'base');
  return dir;
}

const setup = (checkout: string, command: string, over: Partial<SetupRequest> = {}, s: Partial<CommandSettings> = {}) =>
  runSetup({ checkout, cwd: checkout, tmp: path.join(base, 'tmp', path.basename(checkout)), command, ...over }, { ...settings, ...s }, host);

/** A TCP listener that counts the connections it accepts. */
async function counter(address: string): Promise<{ port: number; accepted: () => number; close: () => Promise<void> }> {
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    s.end('HELLO-FROM-HOST\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, address, resolve);
  });
  return { port: (server.address() as net.AddressInfo).port, accepted: () => accepted, close: () => new Promise((r) => server.close(() => r())) };
}

/** Python inside the setup: tries each (host, port) and prints REACHED or BLOCKED with the error. */
const tryConnect = (targets: [string, number][]) =>
  `python3 -c "
import socket
for host, port in [${targets.map(([h, p]) => `('${h}', ${p})`).join(', ')}]:
    try:
        s = socket.create_connection((host, port), timeout=3)
        print('REACHED', host, port, s.recv(100).decode().strip())
    except OSError as e:
        print('BLOCKED', host, port, type(e).__name__, e.errno)
"`;

sandboxed('a setup line', () => {
  it("has outbound network of its own, but reaches no listener on the host's 127.0.0.1 or ::1, nor the host through slirp", async () => {
    const v4 = await counter('127.0.0.1');
    const v6 = await counter('::1');
    try {
      const checkout = await checkoutWith('net', { 'README.md': '# net\n' });
      const line = [
        tryConnect([
          ['127.0.0.1', v4.port],
          ['::1', v6.port],
          ['::ffff:127.0.0.1', v4.port],
          ['10.0.2.2', v4.port],
          ['10.0.2.2', v6.port],
          ['10.0.2.3', v4.port],
          ['10.0.2.3', 53],
        ]),
        'ip -4 route show table main',
        'cat /etc/resolv.conf',
        // The sandbox has no capability in its network namespace: the refusals stay.
        'ip route del prohibit 10.0.0.0/8 && echo ROUTE-DELETED',
        'ip rule del pref 102 && echo RULE-DELETED',
        'ip route add 127.0.0.0/8 via 10.0.2.2 && echo ROUTE-ADDED',
        'exit 0',
      ].join('; ');
      const r = await setup(checkout, line);
      expect(r).toMatchObject({ ok: true, exitCode: 0, network: 'outbound', reused: false });
      for (const [h, p] of [['127.0.0.1', v4.port], ['::1', v6.port], ['::ffff:127.0.0.1', v4.port], ['10.0.2.2', v4.port], ['10.0.2.2', v6.port], ['10.0.2.3', v4.port]] as [string, number][]) {
        expect(r.output).toMatch(new RegExp(`BLOCKED ${h.replace(/\./g, '\\.')} ${p} `));
      }
      expect(r.output).not.toContain('HELLO-FROM-HOST');
      expect(r.output).not.toMatch(/REACHED (127|::1|::ffff|10\.0\.2\.2)/);
      // slirp's DNS forwarder answers on port 53 (the host's resolver; TCP may or may not be served).
      expect(r.output).toMatch(/(REACHED|BLOCKED) 10\.0\.2\.3 53/);
      expect(r.output).toContain('default via 10.0.2.2 dev tap0');
      expect(r.output).toContain('prohibit 10.0.0.0/8');
      expect(r.output).toContain('prohibit 169.254.0.0/16');
      expect(r.output).toContain('nameserver 10.0.2.3');
      expect(r.output).not.toMatch(/ROUTE-DELETED|RULE-DELETED|ROUTE-ADDED/);
      expect(r.output).toMatch(/Operation not permitted/);
      expect(r.output).not.toContain(base);
      expect(v4.accepted()).toBe(0);
      expect(v6.accepted()).toBe(0);
    } finally {
      await v4.close();
      await v6.close();
    }
  });

  it('runs with its loopback only when slirp4netns, nsenter or ip is missing, and says so', async () => {
    const checkout = await checkoutWith('offline', { 'README.md': '# offline\n' });
    const empty = path.join(base, 'no-tools');
    await fs.mkdir(empty);
    const r = await setup(checkout, 'ip -4 route show table main | grep -c default || echo NO-DEFAULT-ROUTE; echo ran', { networkToolDirs: [empty] });
    expect(r).toMatchObject({ ok: true, network: 'none' });
    expect(r.output).toMatch(/^\[setup network: none — slirp4netns \(Debian: apt-get install slirp4netns\), nsenter \(util-linux\), ip \(iproute2\) not installed; this setup reaches nothing outside its sandbox\]\n/);
    expect(r.output).toContain('NO-DEFAULT-ROUTE');
    expect(r.output).toMatch(/ran\n$/);
  });

  it('hands on its output while it runs, stdout and stderr in the order they came', async () => {
    const checkout = await checkoutWith('live', { 'README.md': '# live\n' });
    const seen: string[] = [];
    const r = await setup(checkout, 'echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three; sleep 1.5; echo four >&2', { onProgress: (o) => seen.push(o), progressMs: 200 });
    expect(r.output).toBe('one\ntwo\nthree\nfour\n');
    const early = seen.find((o) => o.includes('three'));
    expect(early).toBe('one\ntwo\nthree\n');
    // Only when something new came: no repeats while it slept.
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('gets the project\'s package cache at /cache; a command never does', async () => {
    const checkout = await checkoutWith('cache', { 'README.md': '# cache\n' });
    const cacheDir = path.join(base, 'caches', 'shop');
    const r = await setup(checkout, 'echo "$npm_config_cache $npm_config_prefer_offline $PIP_CACHE_DIR $UV_LINK_MODE"; mkdir -p /cache/npm && echo x > /cache/npm/written; ls -A /cache', { cacheDir });
    expect(r.output).toContain('/cache/npm true /cache/pip copy');
    expect(await fs.readFile(path.join(cacheDir, 'packages', 'npm', 'written'), 'utf8')).toBe('x\n');
    // The tree store is not the setup's to see.
    expect(r.output).not.toContain('trees');
    const cmd = await runCommand({ checkout, cwd: checkout, command: 'ls /cache || echo NO-CACHE; echo "[$npm_config_cache]"' }, settings, host);
    expect(cmd.stdout).toContain('NO-CACHE');
    expect(cmd.stdout).toContain('[]');
  });

  it('clears set-id bits in the cache folder once the setup has ended', async () => {
    const checkout = await checkoutWith('setid', { 'README.md': '# setid\n' });
    const cacheDir = path.join(base, 'caches', 'shop');
    await setup(checkout, 'cp /bin/true /cache/t && chmod 4755 /cache/t && ls -l /cache/t', { cacheDir });
    const st = await fs.stat(path.join(cacheDir, 'packages', 't'));
    expect(st.mode & 0o6000).toBe(0);
  });
});

sandboxed('an installed tree', () => {
  const project = (lock = '{"lockfileVersion":3,"packages":{"":{}}}\n') => ({
    'package.json': '{"name":"shop","version":"1.0.0","private":true}\n',
    'package-lock.json': lock,
    '.gitignore': 'node_modules/\n',
    'app/README.md': 'x\n',
  });
  const install = 'mkdir -p node_modules/left-pad && echo "module.exports = 1" > node_modules/left-pad/index.js && ln -s left-pad node_modules/alias && echo installed';

  it('is copied (never linked) from the last good setup of the same lockfile, the line not run again', async () => {
    const cacheDir = path.join(base, 'caches', 'shop');
    const a = await checkoutWith('a', project());
    const first = await setup(a, install, { cacheDir });
    expect(first).toMatchObject({ ok: true, reused: false });
    expect(first.output).toBe('installed\n');
    const trees = await fs.readdir(path.join(cacheDir, 'trees'));
    expect(trees).toHaveLength(1);

    const b = await checkoutWith('b', project());
    const second = await setup(b, `${install}; echo RAN-AGAIN`, { cacheDir });
    // A different line is a different key: it runs.
    expect(second.reused).toBe(false);
    const c = await checkoutWith('c', project());
    const third = await setup(c, install, { cacheDir });
    expect(third).toMatchObject({ ok: true, exitCode: 0, reused: true });
    expect(third.output).toMatch(/^Reused node_modules from the setup of \d{4}-\d\d-\d\dT.*the setup line did not run\.\n\ninstalled\n$/s);
    const fileA = path.join(a, 'node_modules/left-pad/index.js');
    const fileC = path.join(c, 'node_modules/left-pad/index.js');
    expect(await fs.readFile(fileC, 'utf8')).toBe('module.exports = 1\n');
    expect((await fs.lstat(path.join(c, 'node_modules/alias'))).isSymbolicLink()).toBe(true);
    expect((await fs.stat(fileC)).ino).not.toBe((await fs.stat(fileA)).ino);
    expect((await fs.stat(fileC)).nlink).toBe(1);
    // One workspace's change reaches neither the other nor the store.
    await runCommand({ checkout: c, cwd: c, command: 'echo poisoned > node_modules/left-pad/index.js' }, settings, host);
    expect(await fs.readFile(fileA, 'utf8')).toBe('module.exports = 1\n');
    const d = await checkoutWith('d', project());
    expect(await setup(d, install, { cacheDir })).toMatchObject({ reused: true });
    expect(await fs.readFile(path.join(d, 'node_modules/left-pad/index.js'), 'utf8')).toBe('module.exports = 1\n');
  });

  it('is not reused when the lockfile changed, nor kept when the setup left more than node_modules', async () => {
    const cacheDir = path.join(base, 'caches', 'shop');
    const a = await checkoutWith('a', project());
    await setup(a, install, { cacheDir });
    const b = await checkoutWith('b', project('{"lockfileVersion":3,"packages":{"":{"dependencies":{"x":"1"}}}}\n'));
    expect(await setup(b, install, { cacheDir })).toMatchObject({ ok: true, reused: false });
    const c = await checkoutWith('c', project('{"lockfileVersion":3,"changed":true}\n'));
    const built = await setup(c, `${install}; echo out > app/built.txt`, { cacheDir });
    expect(built.output).toContain('[node_modules not kept for reuse: the setup changed more than node_modules]');
    const home = await checkoutWith('home', project('{"lockfileVersion":3,"home":true}\n'));
    const wroteHome = await setup(home, `${install}; touch ~/.browser-cache`, { cacheDir });
    expect(wroteHome.output).toContain('[node_modules not kept for reuse: the setup wrote to its home folder]');
    const noLock = await checkoutWith('nolock', { 'package.json': '{"name":"x"}\n', '.gitignore': 'node_modules/\n' });
    expect((await setup(noLock, install, { cacheDir })).output).toBe('installed\n');
    expect(await setup(await checkoutWith('nolock2', { 'package.json': '{"name":"x"}\n', '.gitignore': 'node_modules/\n' }), install, { cacheDir })).toMatchObject({ reused: false });
    // A failing setup keeps nothing.
    const failing = await checkoutWith('failing', project('{"lockfileVersion":3,"failing":true}\n'));
    await setup(failing, `${install}; exit 1`, { cacheDir });
    const again = await checkoutWith('failing2', project('{"lockfileVersion":3,"failing":true}\n'));
    expect(await setup(again, `${install}; exit 1`, { cacheDir })).toMatchObject({ ok: false, reused: false });
  });

  it('is never copied over a node_modules the checkout has', async () => {
    const cacheDir = path.join(base, 'caches', 'shop');
    await setup(await checkoutWith('a', project()), install, { cacheDir });
    const b = await checkoutWith('b', { ...project(), 'node_modules/own/index.js': 'own\n', '.gitignore': '' });
    const r = await setup(b, 'echo ran', { cacheDir });
    expect(r.reused).toBe(false);
    expect(await fs.readFile(path.join(b, 'node_modules/own/index.js'), 'utf8')).toBe('own\n');
  });
});

sandboxed('npm ci against the npm registry', () => {
  it("installs a small real project; its preinstall reaches nothing on the host's loopback; the next workspace reuses the tree", async () => {
    const listener = await counter('127.0.0.1');
    try {
      const pkg = {
        name: 'plant-shop',
        version: '1.0.0',
        private: true,
        scripts: { preinstall: `node -e "require('net').connect(${listener.port}, '127.0.0.1').on('connect', () => console.log('PREINSTALL-' + 'REACHED')).on('error', (e) => console.log('PREINSTALL-BLOCKED', e.code))"` },
        dependencies: { 'is-number': '7.0.0', ms: '2.1.3' },
      };
      const seed = path.join(base, 'seed');
      await fs.mkdir(seed);
      await fs.writeFile(path.join(seed, 'package.json'), JSON.stringify(pkg, null, 2));
      // The lockfile from the registry, made on the host once (the test's only traffic off loopback with the setup's).
      execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--cache', path.join(base, 'host-npm-cache')], { cwd: seed, stdio: 'pipe', timeout: 90_000 });
      const files = { 'package.json': JSON.stringify(pkg, null, 2), 'package-lock.json': await fs.readFile(path.join(seed, 'package-lock.json'), 'utf8'), '.gitignore': 'node_modules/\n' };
      const cacheDir = path.join(base, 'caches', 'plant-shop');
      const a = await checkoutWith('a', files);
      const first = await setup(a, 'npm ci --no-audit --no-fund && node -e "console.log(require(\'is-number\')(5), require(\'ms\')(60000))"', { cacheDir });
      expect(first).toMatchObject({ ok: true, exitCode: 0, network: 'outbound', reused: false });
      expect(first.output).toContain('PREINSTALL-BLOCKED');
      expect(first.output).not.toContain('PREINSTALL-REACHED');
      expect(first.output).toMatch(/added 2 packages/);
      expect(first.output).toContain('true 1m');
      expect(listener.accepted()).toBe(0);
      expect(existsSync(path.join(cacheDir, 'packages', 'npm', '_cacache'))).toBe(true);
      const b = await checkoutWith('b', files);
      const second = await setup(b, 'npm ci --no-audit --no-fund && node -e "console.log(require(\'is-number\')(5), require(\'ms\')(60000))"', { cacheDir });
      expect(second).toMatchObject({ ok: true, reused: true });
      expect(JSON.parse(await fs.readFile(path.join(b, 'node_modules/ms/package.json'), 'utf8')).version).toBe('2.1.3');
    } finally {
      await listener.close();
    }
  });
});

const canMakeNamespaces = process.getuid?.() === 0 && HOST_READY;

(canMakeNamespaces ? describe : describe.skip)('SETUP_ALLOW_HOSTS, against a network namespace the test makes', () => {
  const id = randomBytes(3).toString('hex');
  const ns = `bmadt${id}`;
  const hostSide = `vh${id}`;
  const nsSide = `vn${id}`;
  const octet = 16 + (parseInt(id, 16) % 200);
  const hostAddr = `10.213.${octet}.1`;
  const nsAddr = `10.213.${octet}.2`;
  let listener: ChildProcess;
  let port = 0;
  let connections = 0;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

  beforeAll(async () => {
    ip('netns', 'add', ns);
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', nsSide);
    ip('link', 'set', nsSide, 'netns', ns);
    ip('addr', 'add', `${hostAddr}/30`, 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${nsAddr}/30`, 'dev', nsSide);
    ip('netns', 'exec', ns, 'ip', 'link', 'set', nsSide, 'up');
    listener = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', `require('net').createServer((s) => { console.log('CONNECTION'); s.end('HELLO-FROM-NAMESPACE\\n'); }).listen(0, '${nsAddr}', function () { console.log('PORT ' + this.address().port); })`], { stdio: ['ignore', 'pipe', 'inherit'] });
    port = await new Promise<number>((resolve, reject) => {
      listener.stdout?.on('data', (c: Buffer) => {
        for (const line of c.toString().split('\n')) {
          if (line.startsWith('PORT ')) resolve(Number(line.slice(5)));
          if (line === 'CONNECTION') connections++;
        }
      });
      listener.once('exit', () => reject(new Error('the listener ended')));
    });
  });
  afterAll(() => {
    listener?.kill('SIGKILL');
    try {
      ip('link', 'del', hostSide);
    } catch {
      // Gone with the namespace.
    }
    ip('netns', 'del', ns);
  });

  it('refuses a private address the host reaches, and opens it when listed', async () => {
    const refused = await setup(await checkoutWith('refused', { 'README.md': 'x\n' }), tryConnect([[nsAddr, port]]));
    expect(refused.network).toBe('outbound');
    expect(refused.output).toMatch(new RegExp(`BLOCKED ${nsAddr.replace(/\./g, '\\.')} ${port} PermissionError 13`));
    expect(connections).toBe(0);
    const opened = await setup(await checkoutWith('opened', { 'README.md': 'x\n' }), tryConnect([[nsAddr, port], [hostAddr, 22]]), {}, { setupAllowHosts: [nsAddr] });
    expect(opened.output).toContain(`REACHED ${nsAddr} ${port} HELLO-FROM-NAMESPACE`);
    // The host's own side of the link stays refused (a narrower route).
    expect(opened.output).toMatch(new RegExp(`BLOCKED ${hostAddr.replace(/\./g, '\\.')} 22 PermissionError 13`));
    for (let i = 0; i < 20 && connections < 1; i++) await new Promise((r) => setTimeout(r, 100));
    expect(connections).toBe(1);
  });
});

sandboxed('the setup network capability', () => {
  it('is probed for real and reported', async () => {
    expect(await setupNetworkCapability(DEFAULT_SCRIPT_SETTINGS)).toEqual({ available: true });
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { promises as dns } from 'node:dns';
import { promises as fs, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ipBatch, namesIn, setupRule, SLIRP, type NetRule } from './network-rule';

/**
 * A setup line's way out: its sandbox gets a network namespace of its own (bwrap --unshare-net),
 * and before its command starts, slirp4netns gives that namespace a device whose traffic a host
 * process makes again (user-mode NAT, no host loopback), and `ip` writes the refusals of
 * network-rule.ts into the namespace's routing table. The sandbox has no capability in that
 * namespace: it cannot change the routes.
 *
 * bwrap nests a second user namespace (--disable-userns, --dev), so the network namespace belongs
 * to the outer one, in which no process of the sandbox stays. A small helper (python3, already
 * the command sandbox's requirement) joins the namespace's owner (ioctl NS_GET_USERNS) and the
 * namespace, and holds them while slirp4netns (pid mode, --enable-sandbox) and `nsenter -t` join
 * it: the same steps work for a server running as root and for an unprivileged one.
 */

export interface NetworkTools {
  slirp4netns: string;
  nsenter: string;
  ip: string;
  python: string;
}

const SEARCH = ['/usr/bin', '/usr/sbin', '/bin', '/sbin', '/usr/local/bin', '/usr/local/sbin'];
const STEP_TIMEOUT_MS = 10_000;
const RETRY_MISSING_MS = 30_000;

let found: { at: number; key: string; value: NetworkTools | { reason: string } } | null = null;

async function executable(p: string): Promise<boolean> {
  try {
    const st = await fs.stat(p);
    if (!st.isFile()) return false;
    await fs.access(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function which(name: string, dirs: string[]): Promise<string | null> {
  for (const dir of dirs) if (await executable(path.join(dir, name))) return path.join(dir, name);
  return null;
}

/** slirp4netns, nsenter and ip in the system's folders (or `dirs`), or what is missing (asked again after a while). */
export async function networkTools(python: string, dirs: string[] = SEARCH): Promise<NetworkTools | { reason: string }> {
  const key = JSON.stringify([python, dirs]);
  if (found && found.key === key && ('slirp4netns' in found.value || Date.now() - found.at < RETRY_MISSING_MS)) return found.value;
  const [slirp4netns, nsenter, ip] = await Promise.all([which('slirp4netns', dirs), which('nsenter', dirs), which('ip', dirs)]);
  const missing = [
    !slirp4netns && 'slirp4netns (Debian: apt-get install slirp4netns)',
    !nsenter && 'nsenter (util-linux)',
    !ip && 'ip (iproute2)',
  ].filter(Boolean);
  const value = slirp4netns && nsenter && ip ? { slirp4netns, nsenter, ip, python } : { reason: `${missing.join(', ')} not installed` };
  found = { at: Date.now(), key, value };
  return value;
}

/** This host's addresses, for the rule's refusals (its services answer on every one of them). */
export function hostAddresses(): { address: string; cidr: string | null; family: string | number; internal: boolean }[] {
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((a) => ({ address: a.address, cidr: a.cidr, family: a.family, internal: a.internal })));
}

async function resolveNames(names: string[]): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  await Promise.all(
    names.map(async (name) => {
      const t = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 5_000).unref());
      out[name] = await Promise.race([dns.lookup(name, { all: true, family: 4 }).then((r) => r.map((a) => a.address)), t]).catch(() => []);
    }),
  );
  return out;
}

/** The rule for a setup starting now: this host's addresses as they are, SETUP_ALLOW_HOSTS' names resolved now. */
export async function currentRule(allow: string[]): Promise<NetRule> {
  return setupRule({ hostAddresses: hostAddresses(), allow, resolved: await resolveNames(namesIn(allow)) });
}

/** The sandbox's /etc/resolv.conf: slirp's DNS forwarder (the host's resolver is usually an address the rule refuses). */
export const SETUP_RESOLV_CONF = `nameserver ${SLIRP.dns}\noptions edns0\n`;

let resolvFile: Promise<string> | null = null;

/** A host file holding SETUP_RESOLV_CONF, to mount read-only at /etc/resolv.conf. */
export function setupResolvConf(): Promise<string> {
  resolvFile ??= (async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bmad-setup-net-'));
    const file = path.join(dir, 'resolv.conf');
    await fs.writeFile(file, SETUP_RESOLV_CONF, { mode: 0o644 });
    await fs.chmod(dir, 0o755);
    return file;
  })();
  resolvFile.catch(() => (resolvFile = null));
  return resolvFile;
}

/**
 * Joins the owner of /proc/PID/ns/net and that namespace, says `ready`, and stays until its stdin
 * closes. Its pid is then a handle on the namespace with the rights to change it.
 */
const HOLDER = String.raw`
import ctypes, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
net = os.open('/proc/%d/ns/net' % int(sys.argv[1]), os.O_RDONLY | os.O_CLOEXEC)
owner = fcntl.ioctl(net, 0xb701)
for fd, kind, what in ((owner, 0x10000000, 'user'), (net, 0x40000000, 'net')):
    if libc.setns(fd, kind) != 0:
        sys.stderr.write('setns %s: %s\n' % (what, os.strerror(ctypes.get_errno())))
        sys.exit(1)
    os.close(fd)
sys.stdout.write('ready\n')
sys.stdout.flush()
sys.stdin.read()
`;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function firstLine(text: string): string {
  return text.trim().split('\n').filter(Boolean).pop()?.slice(0, 200) ?? '';
}

/** Waits for `stream` to bring `want` (or anything when empty); rejects when the process ends or time runs out. */
function waitFor(child: ChildProcess, stream: Readable | null | undefined, stderr: () => string, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`${what}: no answer in ${STEP_TIMEOUT_MS / 1000} s`)), STEP_TIMEOUT_MS);
    const onData = () => done();
    const onExit = () => done(new Error(`${what} failed${stderr() ? `: ${firstLine(stderr())}` : ''}`));
    const onError = (e: Error) => done(new Error(`${what} could not start: ${e.message}`));
    function done(e?: Error) {
      clearTimeout(timer);
      stream?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      if (e) reject(e);
      else resolve();
    }
    stream?.once('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

function collectText(stream: Readable | null | undefined): () => string {
  let text = '';
  stream?.on('data', (c: Buffer) => {
    if (text.length < 4000) text += c.toString('utf8');
  });
  return () => text;
}

export interface AttachedNetwork {
  /** Null when the namespace has its way out; else why it has nothing but its loopback. */
  failure: string | null;
  /** Ends slirp4netns (and with it the device); the sandbox's namespace is left with its loopback. */
  stop(): Promise<void>;
}

/**
 * Gives the network namespace of process `pid` (a sandbox bwrap holds before its command) a way
 * out through slirp4netns with `rule`'s refusals. Never throws: when a step fails, whatever was
 * started is stopped again — slirp's device disappears with it — and `failure` says why.
 */
export async function attachSetupNetwork(pid: number, tools: NetworkTools, rule: NetRule): Promise<AttachedNetwork> {
  const env = { PATH: '/usr/bin:/bin:/usr/sbin:/sbin', LANG: 'C.UTF-8' } as unknown as NodeJS.ProcessEnv;
  let holder: ChildProcess | null = null;
  let slirp: ChildProcess | null = null;
  const stop = async () => {
    holder?.stdin?.destroy();
    if (holder && holder.exitCode === null) holder.kill('SIGKILL');
    if (slirp && slirp.exitCode === null && slirp.signalCode === null) {
      (slirp.stdio[4] as Writable | null)?.destroy();
      slirp.kill('SIGTERM');
      const gone = exited(slirp);
      const t = setTimeout(() => slirp?.kill('SIGKILL'), 2_000);
      await gone;
      clearTimeout(t);
    }
    if (holder) await exited(holder);
  };
  try {
    holder = spawn(tools.python, ['-I', '-S', '-c', HOLDER, String(pid)], { stdio: ['pipe', 'pipe', 'pipe'], env });
    holder.stdin?.on('error', () => undefined);
    await waitFor(holder, holder.stdout, collectText(holder.stderr), 'joining the namespace');
    const holderPid = holder.pid as number;
    // fd 3: slirp says it is ready; fd 4: it exits when this end closes (and this process dies).
    slirp = spawn(
      tools.slirp4netns,
      ['--configure', `--mtu=${SLIRP.mtu}`, '--disable-host-loopback', '--enable-sandbox', '--enable-seccomp', '--ready-fd=3', '--exit-fd=4', String(holderPid), SLIRP.device],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env },
    );
    (slirp.stdio[4] as Writable).on('error', () => undefined);
    await waitFor(slirp, slirp.stdio[3] as Readable, collectText(slirp.stderr), 'slirp4netns');
    const ip = spawn(tools.nsenter, ['--target', String(holderPid), '--user', '--net', '--preserve-credentials', '--', tools.ip, '-batch', '-'], { stdio: ['pipe', 'ignore', 'pipe'], env });
    const ipErr = collectText(ip.stderr);
    ip.stdin?.on('error', () => undefined);
    ip.stdin?.end(ipBatch(rule));
    const code = await new Promise<number | null>((resolve) => {
      const t = setTimeout(() => ip.kill('SIGKILL'), STEP_TIMEOUT_MS);
      ip.once('error', () => resolve(null));
      ip.once('exit', (c) => {
        clearTimeout(t);
        resolve(c);
      });
    });
    if (code !== 0) throw new Error(`the routes could not be set${ipErr() ? `: ${ipErr().trim().split('\n').join(' ').slice(0, 200)}` : ''}`);
    holder.stdin?.end();
    await exited(holder);
    holder = null;
    return { failure: null, stop };
  } catch (e) {
    await stop();
    return { failure: (e as Error).message, stop: async () => undefined };
  }
}

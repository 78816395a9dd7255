import { execFile } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import type { CommandSettings, ScriptSettings } from '../../core/config';
import { gitIdentityEnv } from '../git/runner';
import { log } from '../../core/log';
import { isInside } from '../../core/paths';
import { createRunCgroup, runSandboxed, type Mount, type RunOptions, type RunOutcome } from '../sandbox';
import { scriptCapabilities } from '../scripts';
import { supportFiles } from './shim';

/** Where the checkout appears inside the sandbox; the same for every workspace and instance. */
export const CHECKOUT_AT = '/workspace';
/** Where the uv shim is, last on PATH. */
const SHIM_AT = '/opt/bmad/bin';
/** At most this much of stdout and stderr together goes back: each stream's head and tail. */
export const MAX_COMMAND_OUTPUT_BYTES = 1_000_000;
/** Changed files reported at most; the rest is counted. */
export const MAX_CHANGED_FILES = 1_000;
/** How long the status check after a command that was cut off may take. */
const STATUS_TIMEOUT_MS = 15_000;
/** The two status reports together kept at most; past it, what changed is not reported. */
const MAX_STATUS_REPORT_BYTES = 4_000_000;

export type StoppedBy = 'time_limit' | 'memory_limit' | 'process_limit';

export interface FileChange {
  /** Relative to the checkout, with `/`. */
  path: string;
  /** git's two-letter status after the command (`M `, ` M`, `??`, ` D`, ...), or `clean` once committed or reverted. */
  status: string;
}

/** The host (bwrap) and the interpreter for the uv shim. */
export interface CommandHost {
  bwrap: string;
  python: string;
  disableUserns: boolean;
}

export interface CommandRequest {
  /** The checkout (its repository's top folder), mounted read-write at /workspace. */
  checkout: string;
  /** Where commands start: the checkout or a folder inside it (the project's folder). */
  cwd: string;
  /** A folder kept as the sandbox's /tmp (and HOME); a fresh tmpfs when absent. */
  tmp?: string;
  /** Folders inside the checkout that stay read-only (the installed method); `writableInside` reopens parts of them. */
  readOnlyInside?: string[];
  writableInside?: string[];
  /** One shell line, run by bash -c. */
  command: string;
  /** The project's variables (never secrets); PATH, HOME and the like are the sandbox's. */
  env?: Record<string, string>;
  /** Author and committer of commits made inside (the person the turn is for). */
  gitIdentity?: { name: string; email: string };
  /** The line is a project's setup: no status check (its network and mounts come with it: see setup.ts). */
  setup?: boolean;
  /** More mounts after the command's own (a setup's package caches and resolv.conf); what is read-write here is treated as the checkout is after the command. */
  mounts?: Mount[];
  /** Between the sandbox's namespaces and its command (a setup's network): see RunOptions.prepare. */
  prepare?: RunOptions['prepare'];
  /** Each chunk of output as it comes, stdout and stderr in the order they came. */
  onOutput?: RunOptions['onOutput'];
  /** Lower than the setting only. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface CommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  stopped: StoppedBy | null;
  aborted: boolean;
  /** Output past the head and tail kept of each stream was cut. */
  truncated: boolean;
  outputBytes: number;
  /** What changed in the checkout, from git status before and after; null when it is no git checkout or unknown (see changesUnknown). */
  changes: { files: FileChange[]; more: number } | null;
  /** A status report was longer than the server keeps (too many untracked or changed files): what changed is not known. */
  changesUnknown?: boolean;
  /** The sandbox could not be started; nothing ran. */
  spawnError?: string;
  /** Which limits a cgroup held ('pids', 'memory'); the rest were process limits. */
  cgroup: string[];
}

/** Names the environment may not set: the sandbox's own, and what would change how programs load. */
const RESERVED_ENV = /^(PATH|HOME|TMPDIR|LANG|LC_ALL|CI|PWD|SHELL|USER|LOGNAME|BASH_ENV|ENV|LD_.*|GIT_.*|PYTHONHOME)$/;

/**
 * Inside the sandbox: sets the process limits (for everything the line starts), records git
 * status, runs the line with bash (fd 3, the status channel, closed for it), records git status
 * again. The line itself is an argument, never spliced into this text.
 */
const WRAPPER = String.raw`
ulimit -S -H -c 0 2>/dev/null
[ "$1" = 0 ] || ulimit -S -H -f "$1" || exit 125
[ "$2" = 0 ] || ulimit -S -H -u "$2" || exit 125
[ "$3" = 0 ] || ulimit -S -H -v "$3" || exit 125
snap() { printf '%s\0' "$1"; GIT_OPTIONAL_LOCKS=0 git -C "$5" -c core.quotePath=false status --porcelain=v1 -z --untracked-files=all --no-renames 2>/dev/null; }
if [ "$4" = 1 ]; then snap @@before "$5" >&3; fi
/bin/bash -c "$6" 3>&-
rc=$?
if [ "$4" = 1 ]; then snap @@after "$5" >&3; fi
exit $rc
`;

export function parseStatus(text: string): { before: Map<string, string> | null; after: Map<string, string> | null } {
  let current: Map<string, string> | null = null;
  let before: Map<string, string> | null = null;
  let after: Map<string, string> | null = null;
  for (const entry of text.split('\0')) {
    if (entry === '@@before') current = before = new Map();
    else if (entry === '@@after') current = after = new Map();
    else if (current && entry.length > 3 && entry[2] === ' ') current.set(entry.slice(3), entry.slice(0, 2));
  }
  return { before, after };
}

export function diffStatus(before: Map<string, string>, after: Map<string, string>): { files: FileChange[]; more: number } {
  const changed: FileChange[] = [];
  for (const [p, s] of after) if (before.get(p) !== s) changed.push({ path: p, status: s });
  for (const p of before.keys()) if (!after.has(p)) changed.push({ path: p, status: 'clean' });
  changed.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files: changed.slice(0, MAX_CHANGED_FILES), more: Math.max(0, changed.length - MAX_CHANGED_FILES) };
}

/** Where a path inside the checkout (both real) appears in the sandbox. */
export function sandboxPath(checkout: string, real: string): string {
  const rel = path.relative(checkout, real).split(path.sep).join('/');
  return rel ? `${CHECKOUT_AT}/${rel}` : CHECKOUT_AT;
}

/**
 * Makes `dir` (inside the checkout) folder by folder, following no link: the checkout is the
 * model's, and a link it planted where a folder is expected (`_bmad` → /somewhere) would
 * otherwise have the server create folders outside it. False when a part is a link or no folder.
 */
async function makeInside(checkout: string, given: string, dir: string): Promise<boolean> {
  const outside = (r: string) => r === '..' || r.startsWith(`..${path.sep}`) || path.isAbsolute(r);
  let rel = path.relative(checkout, path.resolve(dir));
  // The checkout as the caller named it may differ from its real path (a linked parent folder).
  if (outside(rel)) rel = path.relative(path.resolve(given), path.resolve(dir));
  if (outside(rel)) return false;
  let at = checkout;
  for (const part of rel.split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    const st = await fs.lstat(at).catch(() => null);
    if (!st) {
      if (!(await fs.mkdir(at).then(() => true, (e: NodeJS.ErrnoException) => e.code === 'EEXIST'))) return false;
      if (!(await fs.lstat(at)).isDirectory()) return false;
    } else if (!st.isDirectory()) return false;
  }
  return true;
}

/** PATH inside: each read-only toolchain folder's bin (or the folder), the system, the uv shim last. */
export function commandPath(readonlyPaths: string[]): string {
  const dirs = readonlyPaths.map((p) => (existsSync(path.join(p, 'bin')) ? path.join(p, 'bin') : p));
  return [...dirs, '/usr/local/bin', '/usr/bin', '/bin', SHIM_AT].join(':');
}

/**
 * Public certificates (package managers in a setup line), OpenSSL's settings and Debian's program
 * alternatives (awk, editor) — never /etc/ssl or /etc/pki whole: their private folders hold the
 * host's TLS keys, readable inside when the server runs as root (the sandbox's user is then root
 * outside, and owner bits apply). The certificates' links point into /usr, which is there anyway.
 */
const PUBLIC_ETC = [
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/ca-certificates.conf',
  '/etc/pki/ca-trust',
  '/etc/pki/tls/certs',
  '/etc/pki/tls/cert.pem',
  '/etc/pki/tls/openssl.cnf',
  '/etc/alternatives',
];

/** Mounts of a command's sandbox after the system ones (see lib/sandbox/sandbox/bwrap.ts). */
async function mountsFor(req: CommandRequest, settings: CommandSettings, host: CommandHost, checkout: string): Promise<Mount[]> {
  const support = await supportFiles(host.python);
  const mounts: Mount[] = [];
  for (const name of ['passwd', 'group', 'hosts', 'nsswitch.conf']) mounts.push({ kind: 'ro', host: path.join(support.etc, name), at: `/etc/${name}` });
  for (const dir of PUBLIC_ETC) mounts.push({ kind: 'ro-try', host: dir, at: dir });
  mounts.push(...(req.mounts ?? []));
  if (req.tmp) {
    await fs.mkdir(req.tmp, { recursive: true });
    mounts.push({ kind: 'rw', host: await fs.realpath(req.tmp), at: '/tmp' });
  }
  for (const p of settings.readonlyPaths) mounts.push({ kind: 'ro-try', host: p, at: p });
  mounts.push({ kind: 'ro', host: support.bin, at: SHIM_AT });
  mounts.push({ kind: 'rw', host: checkout, at: CHECKOUT_AT });
  for (const dir of req.readOnlyInside ?? []) {
    const real = await fs.realpath(dir).catch(() => null);
    if (real && isInside(checkout, real)) mounts.push({ kind: 'ro', host: real, at: sandboxPath(checkout, real) });
  }
  for (const dir of req.writableInside ?? []) {
    if (!(await makeInside(checkout, req.checkout, dir))) continue;
    const real = await fs.realpath(dir).catch(() => null);
    if (real && isInside(checkout, real)) mounts.push({ kind: 'rw', host: real, at: sandboxPath(checkout, real) });
  }
  return mounts;
}

let warnedNoProcessLimit = false;

const SETID = 0o6000;

/**
 * The sandbox's user is the server's: when that is root, a file a command marks set-user-ID
 * would be a root program on the host. Once every process of the command is gone, such bits are
 * cleared in the folders it could write (found by find(1), which follows no link).
 */
async function clearSetId(dirs: string[]): Promise<number> {
  const found = await new Promise<string[]>((resolve) => {
    execFile('/usr/bin/find', [...dirs, '-xdev', '(', '-type', 'f', '-o', '-type', 'd', ')', '-perm', '/6000', '-print0'], { env: {} as NodeJS.ProcessEnv, timeout: 60_000, maxBuffer: 10_000_000 }, (_e, stdout) =>
      resolve(String(stdout).split('\0').filter(Boolean)),
    );
  });
  let cleared = 0;
  for (const file of found) {
    const st = await fs.lstat(file).catch(() => null);
    if (!st || st.isSymbolicLink() || !(st.mode & SETID)) continue;
    await fs.chmod(file, st.mode & 0o1777).then(() => cleared++, () => undefined);
  }
  return cleared;
}

/**
 * Whether a line of stderr says a process or thread could not be started. Two independent tests
 * per line, each linear: one regex with `.*` between the two words backtracks quadratically on a
 * long line repeating the first word, and the stderr is the model's to write.
 */
function saysProcessLimit(stderr: string): boolean {
  for (const line of stderr.split('\n')) {
    if (/Resource temporarily unavailable|EAGAIN|BlockingIOError/i.test(line) && /fork|spawn|thread/i.test(line)) return true;
  }
  return false;
}

export function stoppedBy(o: Pick<RunOutcome, 'timedOut' | 'stderr'>, memoryExceeded: boolean): StoppedBy | null {
  if (o.timedOut) return 'time_limit';
  if (memoryExceeded || /\b(MemoryError|Cannot allocate memory|JavaScript heap out of memory|std::bad_alloc|out of memory)\b/.test(o.stderr)) return 'memory_limit';
  if (saysProcessLimit(o.stderr)) return 'process_limit';
  return null;
}

/**
 * Runs one shell line in a workspace's checkout inside bubblewrap: no network (a setup line gets
 * its own, see setup.ts), nothing of the host but /usr, the operator's toolchain folders and a
 * minimal /etc, a clean environment, limits on time, memory, processes and file size for the
 * whole process tree. Never throws for what the line does.
 */
export async function runCommand(req: CommandRequest, settings: CommandSettings, host: CommandHost): Promise<CommandResult> {
  const checkout = await fs.realpath(req.checkout);
  const cwdReal = await fs.realpath(req.cwd).catch(() => null);
  const cwd = cwdReal && isInside(checkout, cwdReal) ? sandboxPath(checkout, cwdReal) : CHECKOUT_AT;
  const timeoutMs = Math.max(100, Math.min(settings.timeoutMs, req.timeoutMs ?? settings.timeoutMs));
  const memoryBytes = settings.memoryMb * 1024 * 1024;
  const cgroup = await createRunCgroup({ maxProcesses: settings.maxProcesses, memoryBytes }).catch(() => null);
  const heldByCgroup = new Set(cgroup?.controllers ?? []);
  if (!heldByCgroup.has('pids') && process.getuid?.() === 0 && !warnedNoProcessLimit) {
    // ulimit -u is not enforced for root: nothing holds a fork storm but the host's own limits.
    warnedNoProcessLimit = true;
    log.warn('commands.no_process_limit', { reason: 'the server runs as root and no pids cgroup could be made; run it as an unprivileged user or delegate a cgroup' });
  }
  const track = !req.setup && existsSync(path.join(checkout, '.git'));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.env ?? {})) if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && !RESERVED_ENV.test(k) && !v.includes('\0')) env[k] = v;
  if (req.gitIdentity) Object.assign(env, gitIdentityEnv(req.gitIdentity));
  Object.assign(env, { PATH: commandPath(settings.readonlyPaths), LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', HOME: '/tmp', TMPDIR: '/tmp', CI: 'true', USER: 'sandbox', LOGNAME: 'sandbox', SHELL: '/bin/bash' });
  const limits = [
    String(settings.maxFileMb * 1024),
    String(settings.maxProcesses),
    // Without a memory cgroup, address space per process is the closest a process limit comes.
    heldByCgroup.has('memory') ? '0' : String(settings.memoryMb * 1024),
  ];
  let outcome: RunOutcome;
  let memoryExceeded = false;
  try {
    outcome = await runSandboxed({
      bwrap: host.bwrap,
      spec: {
        mounts: await mountsFor(req, settings, host, checkout),
        cwd,
        env,
        command: ['/bin/bash', '--noprofile', '--norc', '-c', WRAPPER, 'sandbox', ...limits, track ? '1' : '0', CHECKOUT_AT, req.command],
        disableUserns: host.disableUserns,
      },
      timeoutMs,
      maxOutputBytes: MAX_COMMAND_OUTPUT_BYTES,
      headTail: { headBytes: MAX_COMMAND_OUTPUT_BYTES / 4, tailBytes: MAX_COMMAND_OUTPUT_BYTES / 4 },
      maxReportBytes: MAX_STATUS_REPORT_BYTES,
      cgroup,
      signal: req.signal,
      prepare: req.prepare,
      onOutput: req.onOutput,
    });
    memoryExceeded = cgroup ? await cgroup.memoryExceeded() : false;
  } finally {
    await cgroup?.dispose().catch((e) => log.warn('commands.cgroup_cleanup_failed', { error: e instanceof Error ? e.name : 'unknown' }));
  }
  const writable = [checkout, ...(req.tmp ? [await fs.realpath(req.tmp).catch(() => req.tmp as string)] : []), ...(req.mounts ?? []).filter((m) => m.kind === 'rw').map((m) => m.host)];
  const defused = await clearSetId(writable);
  if (defused) log.warn('commands.setid_cleared', { files: defused });
  let changes: CommandResult['changes'] = null;
  // A cut report holds part of a snapshot: compared, the files past the cut would show as changed (or as "clean").
  let changesUnknown = track && outcome.reportCut;
  if (track && !outcome.spawnError && !changesUnknown) {
    let { before, after } = parseStatus(outcome.report);
    if (before && !after && !outcome.aborted) {
      // Cut off before its second look: one more sandbox that only looks.
      const again = await runSandboxed({
        bwrap: host.bwrap,
        spec: {
          mounts: await mountsFor({ ...req, setup: false, mounts: [] }, settings, host, checkout),
          cwd: CHECKOUT_AT,
          env,
          command: ['/bin/bash', '--noprofile', '--norc', '-c', WRAPPER, 'sandbox', ...limits, '1', CHECKOUT_AT, ':'],
          disableUserns: host.disableUserns,
        },
        timeoutMs: STATUS_TIMEOUT_MS,
        maxOutputBytes: 10_000,
        maxReportBytes: MAX_STATUS_REPORT_BYTES,
      });
      if (again.reportCut) changesUnknown = true;
      else after = parseStatus(again.report).before;
    }
    if (before && after) changes = diffStatus(before, after);
  }
  return {
    exitCode: outcome.exitCode,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    durationMs: outcome.durationMs,
    stopped: stoppedBy(outcome, memoryExceeded),
    aborted: outcome.aborted,
    truncated: outcome.truncated,
    outputBytes: outcome.outputBytes,
    changes,
    ...(changesUnknown ? { changesUnknown: true } : {}),
    cgroup: [...heldByCgroup],
    ...(outcome.spawnError ? { spawnError: outcome.spawnError } : {}),
  };
}

/**
 * bubblewrap and python3 as the script tool found them (the same probe and setting), or why
 * commands cannot run here.
 */
export async function commandHost(scripts: ScriptSettings): Promise<CommandHost | { reason: string }> {
  const caps = await scriptCapabilities(scripts);
  if (!caps.sandbox || !caps.bwrap) return { reason: caps.reason ?? 'the sandbox is not available' };
  return { bwrap: caps.bwrap, python: caps.python ?? '/usr/bin/python3', disableUserns: caps.disableUserns };
}

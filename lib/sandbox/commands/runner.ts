import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import type { CommandSettings, ScriptSettings } from '../../core/config';
import { gitIdentityEnv } from '../git/runner';
import { log } from '../../core/log';
import { isInside } from '../../core/paths';
import { clearSetIdNoFollow, createRunCgroup, runSandboxed, type Mount, type RunOptions, type RunOutcome, type TranscriptChunk } from '../sandbox';
import { scriptCapabilities } from '../scripts';
import { commandEnv } from './env-policy';
import { lastUsage, measure, onlyRemoves, rememberUsage, watchQuota } from './quota';
import { supportFiles } from './shim';
import { dropStatus, forgetStatus, keepStatus, keptStatus } from './snapshot';
import { withCommandLock } from './workspace-lock';

/** Where the checkout appears inside the sandbox; the same for every workspace and instance. */
export const CHECKOUT_AT = '/workspace';
/** Where the uv shim is, last on PATH. */
const SHIM_AT = '/opt/bmad/bin';
/** Where the wrapper's own bash is (execute-only: see shim.ts). */
const LIBEXEC_AT = '/opt/bmad/libexec';
/** At most this much of stdout and stderr together goes back: each stream's head and tail. */
export const MAX_COMMAND_OUTPUT_BYTES = 1_000_000;
/** Changed files reported at most; the rest is counted. */
export const MAX_CHANGED_FILES = 1_000;
/** How long the clean-up after a command that was cut off may take (its status check at most 10 s). */
const CLEANUP_TIMEOUT_MS = 60_000;
/** The two status reports together kept at most; past it, what changed is not reported. */
const MAX_STATUS_REPORT_BYTES = 4_000_000;

export type StoppedBy = 'time_limit' | 'memory_limit' | 'process_limit' | 'disk_quota';

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
  /** As the command wrote them (escape codes included), head and tail of each. */
  stdout: string;
  stderr: string;
  /** stdout and stderr chunks in the order they came, bounded like them. */
  transcript: TranscriptChunk[];
  /** The workspace was over its quota before the command: nothing ran. */
  refused?: 'disk_quota';
  /** The workspace's disk use as last known (checkout, .git and temp folder), and its quota. */
  disk?: { usedBytes: number | null; maxBytes: number };
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

/**
 * The sandbox's pid 1: an execute-only copy of bash (see shim.ts), so no process inside may
 * trace it, read its memory or descriptors, or signal it. It joins the run's cgroups first (see
 * RunOptions.cgroupFds), closes every other descriptor the server was started with (only stdio
 * and the report channel go on), sets the process limits, records git status (unless the
 * server still knows it from the last command: see snapshot.ts), runs the line (in a subshell
 * that exports the line's environment: the wrapper's own is fixed, so no project variable
 * reaches it), then ends every other process of the sandbox, records git
 * status again, ends what that started (a repository's filters run there) and clears set-id bits
 * in what the command could write: inside the sandbox's mount namespace, where a link points only
 * at what the sandbox sees (read-only but for those folders). Last, `@@done` with a nonce only
 * it knows (its environment is unreadable inside) says the clearing ran to its end.
 * Arguments: file size KB, processes, address space KB, track (0 no status, 1 before and after,
 * 2 after only), checkout, mode (run/clean),
 * the line — never spliced into this text.
 */
const WRAPPER = `
n=\${BMAD_CGROUPS:-0}; unset BMAD_CGROUPS; for ((i = 5; i < 5 + n; i++)); do echo 0 >&$i || { echo 'sandbox: the command could not join its cgroup; nothing was run' >&2; exit 125; }; done
fds=(/proc/self/fd/*); for f in "\${fds[@]##*/}"; do [ "$f" -gt 3 ] && [ -e "/proc/self/fd/$f" ] && exec {f}>&-; done
ulimit -S -H -c 0 2>/dev/null
[ "$1" = 0 ] || ulimit -S -H -f "$1" || exit 125
[ "$2" = 0 ] || ulimit -S -H -u "$2" || exit 125
[ "$3" = 0 ] || ulimit -S -H -v "$3" || exit 125
nonce=$BMAD_NONCE; unset BMAD_NONCE
IFS=: read -r -a writable <<< "$BMAD_WRITABLE"; unset BMAD_WRITABLE
env=(); for v in "\${!BMAD_LINE_@}"; do env+=("\${v#BMAD_LINE_}=\${!v}"); unset "$v"; done
snap() { printf '%s\\0' "$1"; GIT_OPTIONAL_LOCKS=0 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null $3 git -C "$2" -c core.quotePath=false -c core.fsmonitor=false status --porcelain=v1 -z --untracked-files=all --no-renames 2>/dev/null; }
stop_all() { local i=0; while [ $i -lt 100000 ] && kill -KILL -1 2>/dev/null; do i=$((i+1)); done; }
rc=0
if [ "$6" = run ]; then
  if [ "$4" = 1 ]; then snap @@before "$5" >&3; fi
  ( export "\${env[@]}"; exec /bin/bash -c "$7" ) 3>&-
  rc=$?
  stop_all
  if [ "$4" != 0 ]; then snap @@after "$5" >&3; stop_all; fi
elif [ "$4" != 0 ]; then
  snap @@after "$5" 'timeout -s KILL 10' >&3; stop_all
fi
find /workspace /tmp "\${writable[@]}" -xdev \\( -type d ! -perm -u=rx -exec chmod u+rx -- {} \\; -false \\) -o \\( \\( -type f -o -type d \\) -perm /6000 -exec chmod ug-s -- {} + \\) 2>/dev/null
found=$?
printf '\\0@@eof%s' "$nonce"; printf '\\0@@eof%s' "$nonce" >&2
[ $found -lt 126 ] && printf '@@done\\0%s\\0%s\\0' "$rc" "$nonce" >&3
exit $rc
`;

export function parseStatus(text: string): { before: Map<string, string> | null; after: Map<string, string> | null } {
  let current: Map<string, string> | null = null;
  let before: Map<string, string> | null = null;
  let after: Map<string, string> | null = null;
  for (const entry of text.split('\0')) {
    if (entry === '@@before') current = before = new Map();
    else if (entry === '@@after') current = after = new Map();
    else if (entry === '@@done' || entry === '@@cut') current = null;
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
async function mountsFor(req: CommandRequest, settings: CommandSettings, host: CommandHost, checkout: string, tmp: string | null): Promise<Mount[]> {
  const support = await supportFiles(host.python);
  const mounts: Mount[] = [];
  for (const name of ['passwd', 'group', 'hosts', 'nsswitch.conf']) mounts.push({ kind: 'ro', host: path.join(support.etc, name), at: `/etc/${name}` });
  for (const dir of PUBLIC_ETC) mounts.push({ kind: 'ro-try', host: dir, at: dir });
  mounts.push(...(req.mounts ?? []));
  if (tmp) mounts.push({ kind: 'rw', host: tmp, at: '/tmp' });
  for (const p of settings.readonlyPaths) mounts.push({ kind: 'ro-try', host: p, at: p });
  mounts.push({ kind: 'ro', host: support.bin, at: SHIM_AT });
  if (support.libexec) mounts.push({ kind: 'ro', host: support.libexec, at: LIBEXEC_AT });
  mounts.push({ kind: 'rw', host: checkout, at: CHECKOUT_AT });
  // Each list looked up at once, mounted in the order given (a later mount covers an earlier
  // one); the writable folders made first, so what the read-only ones are is the same every time.
  const writable = await Promise.all((req.writableInside ?? []).map(async (dir) => ((await makeInside(checkout, req.checkout, dir)) ? fs.realpath(dir).catch(() => null) : null)));
  const readOnly = await Promise.all((req.readOnlyInside ?? []).map((dir) => fs.realpath(dir).catch(() => null)));
  for (const real of readOnly) if (real && isInside(checkout, real)) mounts.push({ kind: 'ro', host: real, at: sandboxPath(checkout, real) });
  for (const real of writable) if (real && isInside(checkout, real)) mounts.push({ kind: 'rw', host: real, at: sandboxPath(checkout, real) });
  return mounts;
}

let warnedNoProcessLimit = false;

/**
 * The last resort when the sandbox's own clearing did not finish (it was cut off, and so was the
 * clean-up sandbox after it): set-id bits cleared from the host, after every process of the
 * command is gone and under the workspace's lock, following no link: find(1) lists (it follows
 * none), clearSetIdNoFollow changes each through its own descriptor.
 */
async function clearSetIdOnHost(dirs: string[]): Promise<number> {
  const found = await new Promise<string[]>((resolve) => {
    execFile('/usr/bin/find', [...dirs, '-xdev', '(', '-type', 'f', '-o', '-type', 'd', ')', '-perm', '/6000', '-print0'], { env: {} as NodeJS.ProcessEnv, timeout: 120_000, maxBuffer: 10_000_000 }, (_e, stdout) =>
      resolve(String(stdout).split('\0').filter(Boolean)),
    );
  });
  let cleared = 0;
  for (const file of found) if (await clearSetIdNoFollow(file, dirs)) cleared++;
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

const TRANSCRIPT = { headBytes: MAX_COMMAND_OUTPUT_BYTES / 4, tailBytes: MAX_COMMAND_OUTPUT_BYTES / 4 };

const loggedDropped = new Set<string>();

/** The project's variables a line gets; names the build settings now refuse are left out and logged once. */
function lineEnv(req: CommandRequest, settings: CommandSettings): Record<string, string> {
  const { env, dropped } = commandEnv(req.env);
  const fresh = dropped.filter((k) => !loggedDropped.has(k));
  if (fresh.length) {
    for (const k of fresh) loggedDropped.add(k);
    log.warn('commands.env_dropped', { names: fresh.slice(0, 20).join(', ').slice(0, 300), reason: 'stored before the build settings refused them; remove them from the project\'s build variables' });
  }
  if (req.gitIdentity) Object.assign(env, gitIdentityEnv(req.gitIdentity));
  return Object.assign(env, {
    PATH: commandPath(settings.readonlyPaths),
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    HOME: '/tmp',
    TMPDIR: '/tmp',
    CI: 'true',
    USER: 'sandbox',
    LOGNAME: 'sandbox',
    SHELL: '/bin/bash',
    NO_COLOR: '1',
    FORCE_COLOR: '0',
  });
}

/** The wrapper's own environment: fixed, the nonce, and the line's variables under a prefix it strips. */
function wrapperEnv(line: Record<string, string>, nonce: string, extraWritable: string[] = []): Record<string, string> {
  const env: Record<string, string> = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', HOME: '/tmp', TMPDIR: '/tmp', BMAD_NONCE: nonce };
  // The wrapper's own variable, read and unset before the line runs; not server configuration.
  if (extraWritable.length) Object.assign(env, { BMAD_WRITABLE: extraWritable.join(':') });
  for (const [k, v] of Object.entries(line)) env[`BMAD_LINE_${k}`] = v;
  return env;
}

/** The exit status in the wrapper's own `@@done` at the report's end (one a line forged carries another nonce), or null. */
function doneStatus(reportTail: string, nonce: string): number | null {
  const m = /@@done\0(\d{1,3})\0([0-9a-f]+)\0$/.exec(reportTail.slice(-64));
  return m && m[2] === nonce ? Number(m[1]) : null;
}

/** Whether the wrapper's clearing ran to its end. */
function finished(o: RunOutcome, nonce: string): boolean {
  return !o.spawnError && doneStatus(o.reportTail, nonce) !== null;
}

/** The wrapper ends its stdout and stderr with the nonce, and its report with `@@done`: see RunOptions.endMark. */
const endMark = (nonce: string): RunOptions['endMark'] => ({ mark: nonce, done: (tail) => doneStatus(tail, nonce) });

function limitsFor(settings: CommandSettings, heldByCgroup: Set<string>): string[] {
  return [
    String(settings.maxFileMb * 1024),
    String(settings.maxProcesses),
    // Without a memory cgroup, address space per process is the closest a process limit comes.
    heldByCgroup.has('memory') ? '0' : String(settings.memoryMb * 1024),
  ];
}

/**
 * Runs one shell line in a workspace's checkout inside bubblewrap: no network (a setup line gets
 * its own, see setup.ts), nothing of the host but /usr, the operator's toolchain folders and a
 * minimal /etc, a clean environment, limits on time, memory, processes, file size and the
 * workspace's disk use for the whole process tree. One at a time per checkout (see
 * withWorkspaceLock). Never throws for what the line does.
 */
export async function runCommand(req: CommandRequest, settings: CommandSettings, host: CommandHost): Promise<CommandResult> {
  const checkout = await fs.realpath(req.checkout);
  const started = performance.now();
  const aborted = (): CommandResult => ({ exitCode: null, stdout: '', stderr: '', transcript: [], durationMs: Math.round(performance.now() - started), stopped: null, aborted: true, truncated: false, outputBytes: 0, changes: null, cgroup: [] });
  try {
    return await withCommandLock(
      checkout,
      async () => {
        if (req.signal?.aborted) return aborted();
        const r = await runLocked(req, settings, host, checkout);
        return { ...r, durationMs: Math.round(performance.now() - started) };
      },
      req.signal,
    );
  } catch (e) {
    if (req.signal?.aborted) return aborted();
    throw e;
  }
}

async function runLocked(req: CommandRequest, settings: CommandSettings, host: CommandHost, checkout: string): Promise<CommandResult> {
  const [cwdReal, tmpReal] = await Promise.all([
    fs.realpath(req.cwd).catch(() => null),
    req.tmp ? fs.mkdir(req.tmp, { recursive: true }).then(() => fs.realpath(req.tmp as string)) : null,
  ]);
  const cwd = cwdReal && isInside(checkout, cwdReal) ? sandboxPath(checkout, cwdReal) : CHECKOUT_AT;
  const timeoutMs = Math.max(100, Math.min(settings.timeoutMs, req.timeoutMs ?? settings.timeoutMs));
  const maxBytes = settings.workspaceMaxMb > 0 ? settings.workspaceMaxMb * 1024 * 1024 : 0;
  const diskDirs = [checkout, ...(tmpReal ? [tmpReal] : [])];
  // A setup's read-write mounts (its package caches): cleared of set-id bits like the checkout.
  const extraWritable = (req.mounts ?? []).filter((m) => m.kind === 'rw').map((m) => m.host);
  const extraAt = (req.mounts ?? []).filter((m) => m.kind === 'rw').map((m) => m.at);

  if (maxBytes && (lastUsage(checkout)?.bytes ?? 0) > maxBytes) {
    // Over when last seen: look again (space may have been freed), then refuse all but a removal.
    const used = await measure(diskDirs);
    if (used !== null) rememberUsage(checkout, used);
    if (used !== null && used > maxBytes && !onlyRemoves(req.command)) {
      return { exitCode: null, stdout: '', stderr: '', transcript: [], durationMs: 0, stopped: null, aborted: false, truncated: false, outputBytes: 0, changes: null, cgroup: [], refused: 'disk_quota', disk: { usedBytes: used, maxBytes } };
    }
  }

  const memoryBytes = settings.memoryMb * 1024 * 1024;
  // A setup changes the checkout outside any command's view; a command reads its status afresh after it.
  if (req.setup) await forgetStatus(checkout);
  // Independent steps, at once: the run's cgroup, what git status is known, the mounts.
  const [cgroup, gitState, mounts] = await Promise.all([
    createRunCgroup({ maxProcesses: settings.maxProcesses, memoryBytes }).catch(() => null),
    req.setup
      ? { track: false, known: null }
      : fs.access(path.join(checkout, '.git')).then(
          // The status the last command left, when nothing else touched the checkout since: no git run before this one.
          async () => ({ track: true, known: await keptStatus(checkout) }),
          () => ({ track: false, known: null }),
        ),
    mountsFor(req, settings, host, checkout, tmpReal),
  ]);
  const { track, known } = gitState;
  const heldByCgroup = new Set(cgroup?.controllers ?? []);
  if (!heldByCgroup.has('pids') && process.getuid?.() === 0 && !warnedNoProcessLimit) {
    // ulimit -u is not enforced for root: nothing holds a fork storm but the host's own limits.
    warnedNoProcessLimit = true;
    log.warn('commands.no_process_limit', { reason: 'the server runs as root and no pids cgroup could be made; run it as an unprivileged user or delegate a cgroup' });
  }
  const nonce = randomBytes(16).toString('hex');
  const env = wrapperEnv(lineEnv(req, settings), nonce, extraAt);
  const limits = limitsFor(settings, heldByCgroup);
  const wrapper = (await supportFiles(host.python)).libexec ? `${LIBEXEC_AT}/bash` : '/bin/bash';
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  req.signal?.addEventListener('abort', onAbort, { once: true });
  if (req.signal?.aborted) onAbort();
  const quota = maxBytes ? watchQuota(checkout, diskDirs, maxBytes, () => stop.abort()) : null;
  let outcome: RunOutcome;
  let memoryExceeded = false;
  try {
    outcome = await runSandboxed({
      bwrap: host.bwrap,
      spec: {
        mounts,
        cwd,
        env,
        command: [wrapper, '--noprofile', '--norc', '-c', WRAPPER, 'sandbox', ...limits, track ? (known ? '2' : '1') : '0', CHECKOUT_AT, 'run', req.command],
        disableUserns: host.disableUserns,
        asPid1: true,
      },
      timeoutMs,
      maxOutputBytes: MAX_COMMAND_OUTPUT_BYTES,
      headTail: { headBytes: MAX_COMMAND_OUTPUT_BYTES / 4, tailBytes: MAX_COMMAND_OUTPUT_BYTES / 4 },
      transcript: TRANSCRIPT,
      maxReportBytes: MAX_STATUS_REPORT_BYTES,
      cgroup,
      cgroupFds: true,
      signal: stop.signal,
      prepare: req.prepare,
      onOutput: req.onOutput,
      endMark: endMark(nonce),
    });
  } finally {
    req.signal?.removeEventListener('abort', onAbort);
  }
  const dispose = () => cgroup?.dispose().catch((e) => log.warn('commands.cgroup_cleanup_failed', { error: e instanceof Error ? e.name : 'unknown' }));
  const done = finished(outcome, nonce);
  let report = outcome.report;
  // A cut report holds part of a snapshot: compared, the files past the cut would show as changed (or as "clean").
  const cut = () => track && (outcome.reportCut || report.endsWith('\0@@cut'));
  const statusOf = () => {
    if (!track || outcome.spawnError || cut()) return null;
    const read = parseStatus(report);
    const before = known ?? read.before;
    return before && read.after ? { before, after: read.after } : null;
  };
  let usedBytes: number | null;
  let status: { before: Map<string, string>; after: Map<string, string> } | null = null;
  let kept = false;
  if (done) {
    // The wrapper said it is done: every other process of the sandbox is gone and pid 1 only
    // exits. The group is removed meanwhile; the rest is read at once. What the command left
    // stands until something else moves it.
    status = statusOf();
    [memoryExceeded, usedBytes, kept] = await Promise.all([
      cgroup ? cgroup.memoryExceeded() : false,
      quota ? quota.finish() : null,
      status ? keepStatus(checkout, status.after).then(() => true) : false,
    ]);
    void dispose();
  } else {
    // Cut off from outside: the group is emptied (every process killed) before anything looks
    // at the checkout again.
    memoryExceeded = cgroup ? await cgroup.memoryExceeded() : false;
    await dispose();
    usedBytes = quota ? await quota.finish() : null;
  }
  const overQuota = quota?.exceeded ?? false;

  if (!outcome.spawnError && !done) {
    // The line was cut off (time limit, stop, quota) before the wrapper's clearing ended: a
    // sandbox of its own clears, and looks at git status if the first one did not get to.
    const needStatus = track && !outcome.reportCut && !req.signal?.aborted && parseStatus(report).after === null;
    const again = await runSandboxed({
      bwrap: host.bwrap,
      spec: {
        mounts: await mountsFor({ ...req, setup: false }, settings, host, checkout, tmpReal),
        cwd: CHECKOUT_AT,
        env: wrapperEnv({}, nonce, extraAt),
        command: [wrapper, '--noprofile', '--norc', '-c', WRAPPER, 'sandbox', ...limits, needStatus ? '1' : '0', CHECKOUT_AT, 'clean', ':'],
        disableUserns: host.disableUserns,
        asPid1: true,
      },
      timeoutMs: CLEANUP_TIMEOUT_MS,
      maxOutputBytes: 10_000,
      maxReportBytes: MAX_STATUS_REPORT_BYTES,
      endMark: endMark(nonce),
    });
    if (!finished(again, nonce)) {
      const cleared = await clearSetIdOnHost([...diskDirs, ...extraWritable]);
      log.warn('commands.setid_cleared_on_host', { files: cleared });
    }
    if (needStatus) {
      if (again.reportCut) report = `${report}\0@@cut`;
      else report = `${report}\0${again.report}`;
    }
  }
  if (!done) status = statusOf();

  const changesUnknown = cut();
  const changes: CommandResult['changes'] = status ? diffStatus(status.before, status.after) : null;
  // Cut off, or not read whole: the next command reads its status itself.
  if (track && !kept) dropStatus(checkout);
  return {
    exitCode: outcome.exitCode,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    transcript: outcome.transcript ?? [],
    durationMs: outcome.durationMs,
    stopped: overQuota ? 'disk_quota' : stoppedBy(outcome, memoryExceeded),
    aborted: outcome.aborted && !overQuota,
    truncated: outcome.truncated,
    outputBytes: outcome.outputBytes,
    changes,
    ...(changesUnknown ? { changesUnknown: true } : {}),
    cgroup: [...heldByCgroup],
    ...(maxBytes ? { disk: { usedBytes, maxBytes } } : {}),
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

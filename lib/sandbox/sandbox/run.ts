import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import type { RunCgroup } from './cgroup';
import type { Launcher } from './launcher';
import { bwrapOptions, type SandboxSpec } from './bwrap';
import { EndMark, HeadTail, Transcript, type TranscriptChunk } from './output';

export interface RunOptions {
  bwrap: string;
  spec: SandboxSpec;
  timeoutMs: number;
  /** stdout and stderr kept together at most; the rest is counted and dropped. */
  maxOutputBytes: number;
  /**
   * Instead of the first maxOutputBytes of both: each stream keeps its first `headBytes` and its
   * last `tailBytes`, with a marker where the middle was cut.
   */
  headTail?: { headBytes: number; tailBytes: number };
  cgroup?: RunCgroup | null;
  /**
   * The command joins the cgroup itself, as its first act: descriptors open on the group's
   * cgroup.procs files are handed to it from fd 5 on, their count in BMAD_CGROUPS, and it writes
   * 0 ("this process") to each before anything else runs. Saves a shell in front of bwrap; only
   * for a command that does so (the command runner's wrapper), which fails rather than run
   * outside the group.
   */
  cgroupFds?: boolean;
  /** Also keep stdout and stderr in the order they came, bounded so (see Transcript). */
  transcript?: { headBytes: number; tailBytes: number };
  /** What fd 3 may bring at most (100 kB when not said); the rest is dropped. */
  maxReportBytes?: number;
  signal?: AbortSignal;
  /**
   * Runs once the sandbox's namespaces exist and before its command starts (bwrap's --info-fd and
   * --block-fd), with the pid of the sandbox's first process (e.g. to give its network namespace a
   * way out); what it returns runs after the sandbox has ended. A throw ends the sandbox unstarted.
   */
  prepare?: (pid: number) => Promise<() => Promise<void>>;
  /** Each chunk of stdout and stderr as it comes, in the order it came. */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
  /**
   * The command says when it is done: it ends stdout and stderr each with `\0@@eof` and `mark`
   * (a secret of the caller's, so nothing else the command runs can write it), and `done` reads
   * its exit code from the report's last bytes once it has written its last. The run then ends
   * without waiting for the kernel to tear down the sandbox's namespaces (milliseconds, more on
   * a busy host); the marks are not part of the output.
   */
  endMark?: { mark: string; done: (reportTail: string) => number | null };
}

export interface RunOutcome {
  exitCode: number | null;
  /** The signal that ended the sandbox, if one did. */
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  stdout: string;
  stderr: string;
  truncated: boolean;
  /** Everything the script printed, kept or not. */
  outputBytes: number;
  durationMs: number;
  /** What the bootstrap wrote on fd 3 (see pep723.ts); empty when it never got that far. */
  report: string;
  /** What was written on fd 3 went past maxReportBytes: `report` is its beginning only. */
  reportCut: boolean;
  /** The last bytes written on fd 3 (up to 1 kB), kept even when `report` was cut. */
  reportTail: string;
  /** stdout and stderr chunks in order, when asked for. */
  transcript?: TranscriptChunk[];
  /** The sandbox could not be started at all. */
  spawnError?: string;
}

/**
 * Enters the run's cgroups and becomes bwrap, so everything the script starts is counted from its
 * first instruction on: no window in which a fork escapes the limits.
 */
const ENTER_CGROUPS = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/** After the sandbox exits, how long its pipes may stay open before they are cut. */
const CLOSE_GRACE_MS = 2_000;

/** The descriptor bwrap reads its options from (0-2 are stdio, 3 the report channel). */
const ARGS_FD = 4;

export async function runSandboxed(opts: RunOptions): Promise<RunOutcome> {
  // A process made ahead inside the group: no join and no fork of the server now. Not with a
  // gate (its two pipes are not among the launcher's), nor for a command a NUL would split.
  const taken = opts.cgroup?.takeLauncher() ?? null;
  const launcher = taken && !opts.prepare && !opts.spec.command.some((a) => a.includes('\0')) ? taken : null;
  if (taken && !launcher) taken.dispose();
  if (launcher) return start({ ...opts, spec: { ...opts.spec, env: { ...opts.spec.env, ...(opts.cgroupFds ? { BMAD_CGROUPS: '0' } : {}) } } }, [], launcher);
  const procs = opts.cgroupFds ? (opts.cgroup?.procsFiles ?? []) : [];
  const handles: Awaited<ReturnType<typeof fs.open>>[] = [];
  try {
    for (const f of procs) handles.push(await fs.open(f, 'w'));
  } catch (e) {
    await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
    const error = `the run's cgroup could not be opened (${(e as NodeJS.ErrnoException).code ?? 'error'})`;
    return { exitCode: null, signal: null, timedOut: false, aborted: false, stdout: '', stderr: '', truncated: false, outputBytes: 0, durationMs: 0, report: '', reportCut: false, reportTail: '', spawnError: error };
  }
  try {
    return await start({ ...opts, spec: { ...opts.spec, env: { ...opts.spec.env, ...(opts.cgroupFds ? { BMAD_CGROUPS: String(handles.length) } : {}) } } }, handles.map((h) => h.fd));
  } finally {
    await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
  }
}

function start(opts: RunOptions, cgroupFds: number[], launcher: Launcher | null = null): Promise<RunOutcome> {
  // Options (host paths among them) go on a descriptor; only the command stays on bwrap's own
  // command line, which is pid 1's (or its reaper's) inside and readable there.
  const options = Buffer.from(bwrapOptions(opts.spec).map((a) => `${a}\0`).join(''));
  const stdio: ('ignore' | 'pipe' | number)[] = ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', ...cgroupFds];
  // Two more pipes when something runs between the namespaces and the command: bwrap reports its
  // child's pid on one and waits for a byte on the other.
  const gate = opts.prepare ? { info: stdio.push('pipe') - 1, block: stdio.push('pipe') - 1 } : null;
  const args = [...(gate ? ['--info-fd', String(gate.info), '--block-fd', String(gate.block)] : []), '--args', String(ARGS_FD), '--', ...opts.spec.command];
  const [file, argv] = opts.cgroup?.procsFiles.length && !opts.cgroupFds && !launcher
    ? ['/bin/sh', ['-c', ENTER_CGROUPS, 'sh', ...opts.cgroup.procsFiles, '--', opts.bwrap, ...args]]
    : [opts.bwrap, args];
  const started = performance.now();
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const report: Buffer[] = [];
    let kept = 0;
    let seen = 0;
    let timedOut = false;
    let aborted = false;
    let settled = false;
    let exit: { code: number | null; signal: string | null } | null = null;

    const child = launcher ? launcher.exec(file, argv) : spawn(file, argv, { stdio, detached: true, env: {} as NodeJS.ProcessEnv });
    const argsPipe = child.stdio[ARGS_FD] as Writable | null;
    // bwrap reads to the end before anything else; an early exit closes the pipe (EPIPE, ignored).
    argsPipe?.on('error', () => undefined);
    argsPipe?.end(options);

    const kill = () => {
      if (child.pid === undefined || exit) return;
      try {
        // The whole process group: sh (if any) and bwrap; the sandbox dies with bwrap.
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const collect = (sink: Buffer[]) => (chunk: Buffer) => {
      seen += chunk.length;
      if (kept >= opts.maxOutputBytes) return;
      const room = opts.maxOutputBytes - kept;
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      sink.push(part);
      kept += part.length;
    };
    const ht = opts.headTail ? [new HeadTail(opts.headTail.headBytes, opts.headTail.tailBytes), new HeadTail(opts.headTail.headBytes, opts.headTail.tailBytes)] : null;
    const onOut = ht ? (c: Buffer) => ht[0].push(c) : collect(out);
    const onErr = ht ? (c: Buffer) => ht[1].push(c) : collect(err);
    const order = opts.transcript ? new Transcript(opts.transcript.headBytes, opts.transcript.tailBytes) : null;
    const deliver = (stream: 'stdout' | 'stderr', c: Buffer) => {
      if (!c.length) return;
      (stream === 'stdout' ? onOut : onErr)(c);
      order?.push(stream, c);
      opts.onOutput?.(stream, c);
    };
    const marks = opts.endMark ? { stdout: new EndMark(opts.endMark.mark), stderr: new EndMark(opts.endMark.mark) } : null;
    for (const stream of ['stdout', 'stderr'] as const) {
      const mark = marks?.[stream];
      child[stream]?.on('data', mark ? (c: Buffer) => (deliver(stream, mark.push(c)), mark.seen && endEarly()) : (c: Buffer) => deliver(stream, c));
    }
    const prepared = gate ? openGate(child, gate, opts.prepare as NonNullable<RunOptions['prepare']>, kill) : Promise.resolve(null);
    let reported = 0;
    let reportCut = false;
    let reportTail = Buffer.alloc(0);
    (child.stdio[3] as Readable | null)?.on('data', (chunk: Buffer) => {
      if (reported < (opts.maxReportBytes ?? 100_000)) report.push(chunk);
      else reportCut = true;
      reported += chunk.length;
      reportTail = Buffer.concat([reportTail, chunk.subarray(-1024)]).subarray(-1024);
      if (marks) endEarly();
    });

    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => {
      aborted = true;
      kill();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();

    // Every stream ended by the command itself, and the report says it is done: nothing more comes.
    function endEarly() {
      if (settled || exit || !marks?.stdout.seen || !marks.stderr.seen || !opts.endMark) return;
      const code = opts.endMark.done(reportTail.toString('latin1'));
      if (code === null) return;
      exit = { code, signal: null };
      void finish();
    }

    const finish = async (spawnError?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // What was held back as the possible start of a mark was output after all.
      if (marks) for (const stream of ['stdout', 'stderr'] as const) deliver(stream, marks[stream].rest());
      opts.signal?.removeEventListener('abort', onAbort);
      for (const s of child.stdio) s?.destroy();
      const undo = await prepared;
      await undo?.().catch(() => undefined);
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        timedOut,
        aborted,
        stdout: ht ? ht[0].text() : Buffer.concat(out).toString('utf8'),
        stderr: ht ? ht[1].text() : Buffer.concat(err).toString('utf8'),
        truncated: ht ? ht[0].cut + ht[1].cut > 0 : seen > kept,
        outputBytes: ht ? ht[0].total + ht[1].total : seen,
        durationMs: Math.round(performance.now() - started),
        report: Buffer.concat(report).toString('utf8'),
        reportCut,
        reportTail: reportTail.toString('latin1'),
        ...(order ? { transcript: order.chunks() } : {}),
        ...(spawnError ? { spawnError } : {}),
      });
    };
    child.on('error', (e) => void finish(e.message));
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // The sandbox is gone; a pipe still held open past this is cut rather than waited on.
      setTimeout(() => void finish(), CLOSE_GRACE_MS).unref();
    });
    child.on('close', () => void finish());
  });
}

/**
 * Reads bwrap's report of its child's pid, runs `prepare` with it, then lets the command start.
 * Resolves to what undoes the preparation (null when it never ran); anything going wrong ends the
 * sandbox before its command starts.
 */
async function openGate(child: ChildProcess, gate: { info: number; block: number }, prepare: NonNullable<RunOptions['prepare']>, kill: () => void): Promise<(() => Promise<void>) | null> {
  const info = child.stdio[gate.info] as Readable | null;
  const block = child.stdio[gate.block] as Writable | null;
  info?.on('error', () => undefined);
  block?.on('error', () => undefined);
  try {
    const text = await new Promise<string>((resolve, reject) => {
      let got = '';
      info?.on('data', (c: Buffer) => {
        if (got.length < 64_000) got += c.toString('utf8');
      });
      info?.once('end', () => resolve(got));
      info?.once('close', () => resolve(got));
      child.once('error', reject);
    });
    const pid = Number((JSON.parse(text) as { 'child-pid'?: unknown })['child-pid']);
    if (!Number.isInteger(pid) || pid <= 0) throw new Error('bwrap reported no child');
    const undo = await prepare(pid);
    block?.end('x');
    return undo;
  } catch {
    kill();
    return null;
  }
}


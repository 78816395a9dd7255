import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Where the server's gits are started: a small helper process of its own, not the server.
 *
 * Starting a program forks the process that starts it, and a fork copies the parent's page tables:
 * a few milliseconds of the server's event loop for every git once the server holds a few hundred
 * megabytes, and an autopilot sprint runs some hundred gits per story. The helper is a bare
 * Node.js (some 40 MB) that forks in well under a millisecond, on the other core; the server only
 * sends it a message and reads the answer. It is started with an empty environment (nothing of
 * the server's, no NODE_OPTIONS), gets each git's whole environment in the request, and ends with
 * the server (its message channel closes) or after half a minute with nothing to run.
 *
 * The helper applies every limit itself — the time limit and the output cap kill git's whole
 * process group — so a request answers exactly as a git started here would. Should the helper
 * fail, the gits it was running answer with an error rather than a made-up result.
 */

export interface SpawnRequest {
  args: string[];
  cwd: string;
  /** git's whole environment. */
  env: Record<string, string>;
  input?: string | Buffer;
  timeoutMs: number;
  /** stdout kept at most; git is killed once it has written more. */
  maxBytes: number;
  /** stderr kept at most. */
  maxStderr: number;
}

export interface SpawnAnswer {
  code: number;
  stdout: Buffer;
  stderr: Buffer;
  cut: boolean;
}

/**
 * The helper's program: runs each request's git as the server would, answers once. Plain
 * JavaScript of the Node.js it runs on (it is given to `node -e`).
 */
const HELPER = String.raw`
'use strict';
const { spawn } = require('node:child_process');
const toBuffer = (u) => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength));
process.on('message', (m) => {
  let answered = false;
  const answer = (a) => {
    if (answered) return;
    answered = true;
    a.id = m.id;
    try {
      process.send(a);
    } catch {
      // The server is gone.
    }
  };
  const failed = (e) => answer({ error: { message: String((e && e.message) || e), code: e && e.code, syscall: e && e.syscall, path: e && e.path } });
  let child;
  try {
    child = spawn('git', m.args, { cwd: m.cwd, env: m.env, stdio: [m.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'], detached: true });
  } catch (e) {
    failed(e);
    return;
  }
  const out = [];
  const err = [];
  let kept = 0;
  let errKept = 0;
  let cut = false;
  const kill = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  const timer = setTimeout(kill, m.timeoutMs);
  child.stdout.on('data', (chunk) => {
    if (cut) return;
    const room = m.maxBytes - kept;
    if (chunk.length >= room) {
      // Reading stops at the cap: whatever git still has to say costs nothing more.
      if (room > 0) out.push(chunk.subarray(0, room));
      kept = m.maxBytes;
      cut = true;
      kill();
      child.stdout.destroy();
      return;
    }
    out.push(chunk);
    kept += chunk.length;
  });
  child.stderr.on('data', (chunk) => {
    if (errKept >= m.maxStderr) return;
    err.push(chunk);
    errKept += chunk.length;
  });
  child.on('error', (e) => {
    clearTimeout(timer);
    failed(e);
  });
  child.on('close', (code, signal) => {
    clearTimeout(timer);
    answer({ code: cut ? 0 : code !== null ? code : signal ? 128 : 1, stdout: Buffer.concat(out), stderr: Buffer.concat(err).subarray(0, m.maxStderr), cut });
  });
  if (m.input !== undefined) {
    // git killed at the cap (or done early) closes its end: the rest of the input is not needed.
    child.stdin.on('error', () => undefined);
    child.stdin.end(typeof m.input === 'string' ? m.input : toBuffer(m.input));
  }
});
process.on('disconnect', () => process.exit(0));
`;

/** How long an idle helper is kept before it is let go (the next git starts another). */
const IDLE_MS = 30_000;

type Pending = { resolve: (a: SpawnAnswer) => void; reject: (e: Error) => void };
type HelperAnswer = { id: number; code: number; stdout: Uint8Array; stderr: Uint8Array; cut: boolean } | { id: number; error: { message: string; code?: string; syscall?: string; path?: string } };

class Helper {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idle: NodeJS.Timeout | null = null;
  ended = false;

  constructor() {
    this.child = spawn(process.execPath, ['-e', HELPER], {
      cwd: '/',
      env: {} as NodeJS.ProcessEnv,
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      serialization: 'advanced',
    });
    this.child.on('message', (a: HelperAnswer) => this.answered(a));
    const end = (why: string) => {
      if (this.ended) return;
      this.ended = true;
      if (this.idle) clearTimeout(this.idle);
      for (const p of this.pending.values()) p.reject(new Error(`git could not be run: ${why}`));
      this.pending.clear();
    };
    this.child.on('error', (e) => end(e.message));
    this.child.on('exit', (code, signal) => end(`its helper process ended (${signal ?? code})`));
    this.child.on('disconnect', () => end('its helper process went away'));
    this.quiet();
  }

  run(req: SpawnRequest): Promise<SpawnAnswer> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.busy();
      try {
        this.child.send({ id, ...req }, (e) => {
          if (e) this.settle(id)?.reject(e);
        });
      } catch (e) {
        this.settle(id)?.reject(e as Error);
      }
    });
  }

  private answered(a: HelperAnswer): void {
    const p = this.settle(a.id);
    if (!p) return;
    if ('error' in a) {
      p.reject(Object.assign(new Error(a.error.message), { code: a.error.code, syscall: a.error.syscall, path: a.error.path }));
      return;
    }
    const buf = (u: Uint8Array) => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength));
    p.resolve({ code: a.code, stdout: buf(a.stdout), stderr: buf(a.stderr), cut: a.cut });
  }

  private settle(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    if (this.pending.size === 0) this.quiet();
    return p;
  }

  /** Waiting on gits keeps the server's event loop alive, as the gits themselves would. */
  private busy(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    this.child.ref();
    this.child.channel?.ref();
  }

  /** Nothing asked: the helper keeps nothing alive, and goes after a while. */
  private quiet(): void {
    this.child.unref();
    this.child.channel?.unref();
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => this.close(), IDLE_MS);
    this.idle.unref();
  }

  /** Running, and its channel open: a request sent now reaches it. */
  usable(): boolean {
    return !this.ended && this.child.connected;
  }

  close(): void {
    if (this.pending.size) return;
    this.ended = true;
    if (this.child.connected) this.child.disconnect();
  }
}

/** One helper per process, whichever module graph (a separate bundle, a test's registry) asks. */
const SLOT = Symbol.for('bmad-orchestrator.git-spawner');
type Slot = { helper: Helper | null };

function slot(): Slot {
  const g = globalThis as unknown as Record<symbol, Slot | undefined>;
  return (g[SLOT] ??= { helper: null });
}

function helper(): Helper {
  const s = slot();
  if (!s.helper || !s.helper.usable()) s.helper = new Helper();
  return s.helper;
}

/**
 * Runs git as the request says, from the helper (started when none is running). A request the
 * helper never received (its channel had just closed) goes to a new one; one it may have started
 * is never sent twice.
 */
export async function spawnFromHelper(req: SpawnRequest): Promise<SpawnAnswer> {
  try {
    return await helper().run(req);
  } catch (e) {
    if ((e as { code?: string }).code !== 'ERR_IPC_CHANNEL_CLOSED') throw e;
    return helper().run(req);
  }
}

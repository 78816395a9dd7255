import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const REPO = path.resolve(__dirname, '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface Folders {
  root: string;
  bundlesRoot: string;
  coreRoot: string;
  outputPath: string;
  dataDir: string;
  cleanup(): Promise<void>;
}

/**
 * Absolute folders outside the repo, with a copy of the sample bundles — as a deployment has them.
 * The data folder exists already, so a database can be seeded before the server starts.
 */
export async function makeFolders(label = 'e2e'): Promise<Folders> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), `bmad-${label}-`));
  const bundlesRoot = path.join(root, 'bundles');
  const coreRoot = path.join(root, 'core');
  const dataDir = path.join(root, 'data');
  await fs.cp(path.join(REPO, 'bmad/custom/bundles'), bundlesRoot, { recursive: true });
  await fs.cp(path.join(REPO, 'bmad/core'), coreRoot, { recursive: true });
  await fs.mkdir(dataDir, { recursive: true });
  return {
    root,
    bundlesRoot,
    coreRoot,
    outputPath: path.join(root, 'output'),
    dataDir,
    cleanup: () => fs.rm(root, { recursive: true, force: true }),
  };
}

export interface AppServer {
  url: string;
  port: number;
  proc: ChildProcess;
  logs: () => string;
  /** Graceful stop (SIGTERM), waits for exit. */
  stop(): Promise<void>;
  /** Crash: SIGKILL, waits for exit. */
  kill9(): Promise<void>;
}

type AppFolders = Pick<Folders, 'bundlesRoot' | 'coreRoot' | 'outputPath' | 'dataDir'>;

/**
 * The environment of a production server over the given folders; `env` adds or overrides. The
 * single-user mode (AUTH=off, on loopback) unless `env` asks for accounts (`AUTH: 'on'`).
 */
export function appEnv(folders: AppFolders, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    AUTH: 'off',
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.tmpdir(),
    NODE_ENV: 'production',
    NEXT_TELEMETRY_DISABLED: '1',
    BUNDLES_ROOT: folders.bundlesRoot,
    CORE_ROOT: folders.coreRoot,
    OUTPUT_PATH: folders.outputPath,
    DATA_DIR: folders.dataDir,
    ...env,
  };
}

/** Waits until the server answers /api/health; fails with its output when it exits or never does. */
export async function waitHealthy(url: string, proc: ChildProcess, output: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`next start exited early:\n${output()}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`next start did not become healthy:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts the production build (`next start`) with the given environment; waits for /api/health. */
export async function startApp(folders: Folders, env: Record<string, string> = {}): Promise<AppServer> {
  const port = await freePort();
  let out = '';
  const proc = spawn(process.execPath, [path.join(REPO, 'node_modules/next/dist/bin/next'), 'start', '-p', String(port), '-H', '127.0.0.1'], {
    cwd: REPO,
    env: appEnv(folders, { LOG_LEVEL: process.env.E2E_SERVER_LOGS ? 'info' : 'silent', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await waitHealthy(url, proc, () => out);
  return {
    url,
    port,
    proc,
    logs: () => out,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
    async kill9() {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

export async function postChat(url: string, body: Record<string, unknown>, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}/api/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...init });
}

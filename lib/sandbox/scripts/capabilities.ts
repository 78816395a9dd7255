import { execFile } from 'node:child_process';
import { promises as fs, constants } from 'node:fs';
import path from 'node:path';
import type { ScriptSettings } from '../../core/config';
import { log } from '../../core/log';
import { bwrapArgs } from '../sandbox';

/** What this host can do for scripts; a script never runs without the sandbox. */
export interface ScriptCapabilities {
  /** bubblewrap runs a sandbox with its own user, pid and network namespaces here. */
  sandbox: boolean;
  /** Scripts can run: the sandbox works and python3 runs inside it. */
  scripts: boolean;
  /** Absolute paths, when found. */
  bwrap?: string;
  python?: string;
  pythonVersion?: string;
  /** bwrap 0.8 and later can forbid user namespaces inside the sandbox. */
  disableUserns: boolean;
  /** Why `scripts` is off, in words an operator (and a model) can act on. */
  reason?: string;
}

const PROBE_TIMEOUT_MS = 10_000;
/** A host that lacks something may get it installed; asking again now and then is cheap. */
const RETRY_FAILED_MS = 30_000;

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

async function findOnPath(name: string, dirs: string[]): Promise<string | null> {
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    if (await executable(candidate)) return candidate;
  }
  return null;
}

function systemPath(): string[] {
  return [...(process.env.PATH ?? '').split(':').filter((d) => d.startsWith('/')), '/usr/bin', '/bin', '/usr/local/bin'];
}

/** bwrap from the setting: a path as given, or a bare name on PATH. */
export async function findBwrap(setting: string): Promise<string | null> {
  if (setting.includes('/')) return (await executable(setting)) ? path.resolve(setting) : null;
  return findOnPath(setting, systemPath());
}

/** The sandbox mounts /usr and nothing else of the system, so the interpreter must live there. */
export async function findPython(setting: string): Promise<{ path: string } | { reason: string }> {
  if (setting.includes('/')) {
    const abs = path.resolve(setting);
    if (!abs.startsWith('/usr/')) return { reason: `SCRIPT_PYTHON (${setting}) must be an interpreter under /usr, the only system folder the sandbox mounts` };
    return (await executable(abs)) ? { path: abs } : { reason: `python3 was not found at ${setting}` };
  }
  const found = await findOnPath(setting, ['/usr/bin', '/usr/local/bin']);
  return found ? { path: found } : { reason: `${setting} is not installed in /usr/bin or /usr/local/bin (Debian: apt-get install python3)` };
}

function run(file: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; error?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: PROBE_TIMEOUT_MS, killSignal: 'SIGKILL', env: {} as NodeJS.ProcessEnv, maxBuffer: 1_000_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : null) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr), ...(error ? { error: error as NodeJS.ErrnoException } : {}) });
    });
  });
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0]?.slice(0, 300) ?? '';
}

async function probe(settings: ScriptSettings): Promise<ScriptCapabilities> {
  const bwrap = await findBwrap(settings.bwrap);
  if (!bwrap) {
    return {
      sandbox: false,
      scripts: false,
      disableUserns: false,
      reason: `bubblewrap (bwrap) is not installed on this server (looked for "${settings.bwrap}"; Debian: apt-get install bubblewrap), and scripts never run without it`,
    };
  }
  const help = await run(bwrap, ['--help']);
  const disableUserns = help.stdout.includes('--disable-userns');
  const sandboxCheck = await run(bwrap, bwrapArgs({ mounts: [], cwd: '/', env: {}, command: ['/usr/bin/env', 'true'], disableUserns }));
  if (sandboxCheck.code !== 0) {
    return {
      sandbox: false,
      scripts: false,
      bwrap,
      disableUserns,
      reason: `bubblewrap cannot make a sandbox here (${firstLine(sandboxCheck.stderr) || sandboxCheck.error?.message || `exit ${sandboxCheck.code}`}); user namespaces may be disabled`,
    };
  }
  const python = await findPython(settings.python);
  if ('reason' in python) return { sandbox: true, scripts: false, bwrap, disableUserns, reason: python.reason };
  const version = await run(bwrap, bwrapArgs({
    mounts: [],
    cwd: '/',
    env: {},
    command: [python.path, '-E', '-s', '-B', '-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'],
    disableUserns,
  }));
  if (version.code !== 0) {
    return { sandbox: true, scripts: false, bwrap, python: python.path, disableUserns, reason: `${python.path} does not run in the sandbox (${firstLine(version.stderr) || `exit ${version.code}`})` };
  }
  return { sandbox: true, scripts: true, bwrap, python: python.path, pythonVersion: version.stdout.trim(), disableUserns };
}

const cache = new Map<string, { at: number; value: Promise<ScriptCapabilities> }>();

/** Probed once per setting and kept (a failed probe is retried after a while). */
export function scriptCapabilities(settings: ScriptSettings): Promise<ScriptCapabilities> {
  const key = `${settings.bwrap}\0${settings.python}`;
  const hit = cache.get(key);
  if (hit) return hit.value;
  const value = probe(settings).then((caps) => {
    if (!caps.scripts) {
      log.warn('scripts.unavailable', { sandbox: caps.sandbox, reason: caps.reason });
      setTimeout(() => {
        if (cache.get(key)?.value === value) cache.delete(key);
      }, RETRY_FAILED_MS).unref();
    }
    return caps;
  });
  cache.set(key, { at: Date.now(), value });
  return value;
}

/** For tests: probe again on the next call. */
export function forgetCapabilities(): void {
  cache.clear();
}

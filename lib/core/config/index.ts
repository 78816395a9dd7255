import path from 'node:path';
import { loadModelSetup, type ModelSetup } from '../models';

export interface ToolLimits {
  maxReadBytes: number;
  maxWriteBytes: number;
  maxEntries: number;
  maxMatches: number;
}

/** Running the installed method's scripts (python3 inside bubblewrap). */
export interface ScriptSettings {
  /** bubblewrap: a path, or a bare name looked up on PATH. */
  bwrap: string;
  /** The interpreter the sandbox runs: a path under /usr (the only system folder it mounts), or a bare name looked up in /usr/bin and /usr/local/bin. */
  python: string;
  timeoutMs: number;
  memoryMb: number;
}

export const DEFAULT_SCRIPT_SETTINGS: ScriptSettings = {
  bwrap: 'bwrap',
  python: 'python3',
  timeoutMs: 60_000,
  memoryMb: 512,
};

/** The command tool: one shell line in a workspace's checkout, inside bubblewrap. */
export interface CommandSettings {
  /** Longest a command may run; a call may ask for less, never more (COMMAND_TIMEOUT_MS). */
  timeoutMs: number;
  /** Memory of everything one command starts together (COMMAND_MEMORY_MB). */
  memoryMb: number;
  /** Processes and threads of one command together. */
  maxProcesses: number;
  /** The largest file a command may write (COMMAND_MAX_FILE_MB). */
  maxFileMb: number;
  /** Host folders mounted read-only at their own place, e.g. where node lives (COMMAND_READONLY_PATHS). */
  readonlyPaths: string[];
  /** A workspace's checkout, temp folder and .git together, at most (WORKSPACE_MAX_MB). */
  workspaceMaxMb: number;
  /** Hosts (names, addresses or CIDR ranges) a setup line may reach although they are private or link-local (SETUP_ALLOW_HOSTS). */
  setupAllowHosts: string[];
}

export const DEFAULT_COMMAND_SETTINGS: CommandSettings = {
  timeoutMs: 600_000,
  memoryMb: 2048,
  maxProcesses: 256,
  maxFileMb: 1024,
  readonlyPaths: [],
  workspaceMaxMb: 2048,
  setupAllowHosts: [],
};

/** A list of hosts: comma or whitespace separated, empty entries dropped. */
export function parseHostList(value: string | undefined): string[] {
  return [...new Set((value ?? '').split(/[\s,]+/).map((h) => h.trim()).filter(Boolean))];
}

/** COMMAND_READONLY_PATHS: absolute folders, separated by commas or colons; `/` itself never. */
export function parseReadonlyPaths(value: string | undefined): string[] {
  return [...new Set((value ?? '').split(/[,:]/).map((p) => p.trim()).filter((p) => p.startsWith('/')).map((p) => path.resolve(p)).filter((p) => p !== '/'))];
}

/** Where one model is: the default profile's, or any profile's (see lib/core/models). */
export interface LlmConfig {
  apiKey?: string;
  baseURL?: string;
  model: string;
  /** True when a key or a base URL is set; chat answers 503 otherwise. */
  configured: boolean;
}

export interface Config {
  /** Absolute paths. */
  bundlesRoot: string;
  /** Each subfolder holding a BMAD install (`_bmad/` or `bmad/`) is a project. */
  projectsRoot: string;
  coreRoot: string;
  projectRoot: string;
  outputPath: string;
  dataDir: string;
  maxIterations: number;
  turnTimeoutMs: number;
  store: 'sqlite' | 'memory' | 'postgres';
  /** DATABASE_URL when it is a postgres:// URL: the conversations live there (store 'postgres'). */
  databaseUrl?: string;
  /** How long a turn's lease outlives its last heartbeat on Postgres (TURN_LEASE_MS, at most 30 s). */
  turnLeaseMs: number;
  /** The default profile's endpoint. */
  llm: LlmConfig;
  /** Every model profile and the routing to them (MODELS_FILE, or the OPENAI_* variables). */
  models: ModelSetup;
  limits: ToolLimits;
  scripts: ScriptSettings;
  /** WORKSPACES_ROOT: where workspaces' clones live (default DATA_DIR/workspaces). */
  workspacesRoot: string;
  commands: CommandSettings;
  /** Remote repositories and forges (see docs/remotes.md). */
  remotes: RemoteSettings;
}

export interface RemoteSettings {
  /** SECRETS_KEY: 32 bytes (hex or base64) that encrypt forge tokens at rest; null when unset or not 32 bytes. */
  secretsKey: Buffer | null;
  /** SECRETS_KEY was set but is not 32 bytes of hex or base64 (the server refuses to store tokens, saying so). */
  secretsKeyInvalid: boolean;
  /** SECRETS_KEY_PREVIOUS: keys tokens may still be sealed with during a rotation (read, then sealed again with secretsKey); malformed entries dropped. */
  previousSecretsKeys: Buffer[];
  /** GIT_REMOTE_HOSTS: `host:port` entries a remote may use although they resolve to loopback, private or link-local addresses (plain http:// too). */
  allowHosts: string[];
  /** FORGE_POLL_SECONDS: how often open pull requests are polled when no webhook says more (0: never). */
  pollSeconds: number;
}

/** SECRETS_KEY as 32 bytes: 64 hex digits or base64 of 32 bytes. */
export function parseSecretsKey(value: string | undefined): { key: Buffer | null; invalid: boolean } {
  const v = value?.trim();
  if (!v) return { key: null, invalid: false };
  if (/^[0-9a-fA-F]{64}$/.test(v)) return { key: Buffer.from(v, 'hex'), invalid: false };
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(v)) {
    const b = Buffer.from(v.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (b.length === 32) return { key: b, invalid: false };
  }
  return { key: null, invalid: true };
}

export const DEFAULT_LIMITS: ToolLimits = {
  maxReadBytes: 50_000,
  maxWriteBytes: 100_000,
  maxEntries: 200,
  maxMatches: 50,
};

function int(value: string | undefined, fallback: number, min = 1): number {
  if (value === undefined || value.trim() === '') return fallback;
  const n = Number(value);
  return Number.isFinite(n) && n >= min ? Math.floor(n) : fallback;
}

function postgresUrl(value: string | undefined): boolean {
  return /^postgres(ql)?:\/\//i.test(value?.trim() ?? '');
}

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v ? v : undefined;
}

/**
 * Reads the environment once; every path comes out absolute. A bad MODELS_FILE throws a
 * ModelsFileError naming the file, the line and the field: the server must not start on it.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, cwd: string = process.cwd()): Config {
  // Folders are chosen at run time; the build must not trace them into the server output.
  const abs = (value: string | undefined, fallback: string) => path.resolve(/*turbopackIgnore: true*/ cwd, nonEmpty(value) ?? fallback);
  const models = loadModelSetup(env, cwd);
  const fallback = models.profiles.get(models.defaultProfile)!;
  return {
    bundlesRoot: abs(env.BUNDLES_ROOT, 'bmad/custom/bundles'),
    projectsRoot: abs(env.PROJECTS_ROOT, 'projects'),
    coreRoot: abs(env.CORE_ROOT, 'bmad/core'),
    projectRoot: path.resolve(/*turbopackIgnore: true*/ cwd),
    outputPath: abs(env.OUTPUT_PATH, 'output'),
    dataDir: abs(env.DATA_DIR, 'data'),
    workspacesRoot: abs(env.WORKSPACES_ROOT, path.join(nonEmpty(env.DATA_DIR) ?? 'data', 'workspaces')),
    maxIterations: int(env.MAX_ITERATIONS, 25),
    turnTimeoutMs: int(env.TURN_TIMEOUT_MS, 120_000),
    store: env.CONVERSATION_STORE === 'memory' ? 'memory' : postgresUrl(env.DATABASE_URL) ? 'postgres' : 'sqlite',
    ...(postgresUrl(env.DATABASE_URL) ? { databaseUrl: env.DATABASE_URL!.trim() } : {}),
    turnLeaseMs: Math.min(30_000, int(env.TURN_LEASE_MS, 30_000, 200)),
    llm: { apiKey: fallback.apiKey, baseURL: fallback.baseURL, model: fallback.model, configured: fallback.configured },
    models,
    limits: { ...DEFAULT_LIMITS },
    scripts: {
      bwrap: nonEmpty(env.SANDBOX_BWRAP) ?? DEFAULT_SCRIPT_SETTINGS.bwrap,
      python: nonEmpty(env.SCRIPT_PYTHON) ?? DEFAULT_SCRIPT_SETTINGS.python,
      timeoutMs: int(env.SCRIPT_TIMEOUT_MS, DEFAULT_SCRIPT_SETTINGS.timeoutMs, 100),
      memoryMb: int(env.SCRIPT_MEMORY_MB, DEFAULT_SCRIPT_SETTINGS.memoryMb, 32),
    },
    commands: {
      timeoutMs: int(env.COMMAND_TIMEOUT_MS, DEFAULT_COMMAND_SETTINGS.timeoutMs, 100),
      memoryMb: int(env.COMMAND_MEMORY_MB, DEFAULT_COMMAND_SETTINGS.memoryMb, 64),
      maxProcesses: DEFAULT_COMMAND_SETTINGS.maxProcesses,
      maxFileMb: int(env.COMMAND_MAX_FILE_MB, DEFAULT_COMMAND_SETTINGS.maxFileMb, 1),
      readonlyPaths: parseReadonlyPaths(env.COMMAND_READONLY_PATHS),
      workspaceMaxMb: int(env.WORKSPACE_MAX_MB, DEFAULT_COMMAND_SETTINGS.workspaceMaxMb, 16),
      setupAllowHosts: parseHostList(env.SETUP_ALLOW_HOSTS),
    },
    remotes: (() => {
      const secrets = parseSecretsKey(env.SECRETS_KEY);
      return {
        secretsKey: secrets.key,
        secretsKeyInvalid: secrets.invalid,
        previousSecretsKeys: parseHostList(env.SECRETS_KEY_PREVIOUS).flatMap((k) => parseSecretsKey(k).key ?? []),
        allowHosts: parseHostList(env.GIT_REMOTE_HOSTS).map((h) => h.toLowerCase()),
        pollSeconds: int(env.FORGE_POLL_SECONDS, 120, 0),
      };
    })(),
  };
}

import path from 'node:path';

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
  store: 'sqlite' | 'memory';
  llm: LlmConfig;
  limits: ToolLimits;
  scripts: ScriptSettings;
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

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v ? v : undefined;
}

/** Reads the environment once; every path comes out absolute. */
export function loadConfig(env: Record<string, string | undefined> = process.env, cwd: string = process.cwd()): Config {
  // Folders are chosen at run time; the build must not trace them into the server output.
  const abs = (value: string | undefined, fallback: string) => path.resolve(/*turbopackIgnore: true*/ cwd, nonEmpty(value) ?? fallback);
  const apiKey = nonEmpty(env.OPENAI_API_KEY);
  const baseURL = nonEmpty(env.OPENAI_BASE_URL);
  return {
    bundlesRoot: abs(env.BUNDLES_ROOT, 'bmad/custom/bundles'),
    projectsRoot: abs(env.PROJECTS_ROOT, 'projects'),
    coreRoot: abs(env.CORE_ROOT, 'bmad/core'),
    projectRoot: path.resolve(/*turbopackIgnore: true*/ cwd),
    outputPath: abs(env.OUTPUT_PATH, 'output'),
    dataDir: abs(env.DATA_DIR, 'data'),
    maxIterations: int(env.MAX_ITERATIONS, 25),
    turnTimeoutMs: int(env.TURN_TIMEOUT_MS, 120_000),
    store: env.CONVERSATION_STORE === 'memory' ? 'memory' : 'sqlite',
    llm: {
      apiKey,
      baseURL,
      model: nonEmpty(env.OPENAI_MODEL) ?? 'gpt-4o-mini',
      configured: Boolean(apiKey || baseURL),
    },
    limits: { ...DEFAULT_LIMITS },
    scripts: {
      bwrap: nonEmpty(env.SANDBOX_BWRAP) ?? DEFAULT_SCRIPT_SETTINGS.bwrap,
      python: nonEmpty(env.SCRIPT_PYTHON) ?? DEFAULT_SCRIPT_SETTINGS.python,
      timeoutMs: int(env.SCRIPT_TIMEOUT_MS, DEFAULT_SCRIPT_SETTINGS.timeoutMs, 100),
      memoryMb: int(env.SCRIPT_MEMORY_MB, DEFAULT_SCRIPT_SETTINGS.memoryMb, 32),
    },
  };
}

import type { ScriptSettings } from '../../core/config';
import { log } from '../../core/log';
import type { ScriptCapabilities } from './capabilities';
import { createRunCgroup } from '../sandbox';
import { collectChanges, type Changes, type MountPlan } from './mounts';
import { bootstrapCommand, parseBootReport, type BootReport, type ProcessLimits } from './pep723';
import { runSandboxed, type RunOutcome } from '../sandbox';
import { PROJECT_AT } from './mounts';
import { SANDBOX_ENV } from '../sandbox';

export { scriptCapabilities, forgetCapabilities, type ScriptCapabilities } from './capabilities';
export { parseCommand, splitWords, type ParsedCommand } from './command';
export { planMounts, sandboxPathOf, PROJECT_AT, type MountPlan, type MountRequest, type Changes } from './mounts';
export { findSkillFolders, type SkillFolder } from './skill-folders';
export { debianPackageFor, BOOTSTRAP, type BootReport } from './pep723';
export { UV_FLAGS, UV_WITH, UV_VALUED } from './command';
export { bwrapArgs, type SandboxSpec, type Mount } from '../sandbox';

/** At most this much of stdout and stderr together goes back to the model. */
export const MAX_OUTPUT_BYTES = 1_000_000;
/** Processes (and threads) of one run together: plenty for a script, too few for a fork bomb. */
export const MAX_PROCESSES = 64;
/** The largest file a script may write. */
export const MAX_FILE_BYTES = 64 * 1024 * 1024;

export interface ScriptRequest {
  settings: ScriptSettings;
  caps: ScriptCapabilities & { bwrap: string; python: string };
  plan: MountPlan;
  /** Paths as the script sees them (under /project). */
  script: string;
  args: string[];
  /** Packages asked for besides the script's own block (`uv run --with`). */
  extraDeps?: string[];
  signal?: AbortSignal;
}

export interface ScriptResult {
  outcome: RunOutcome;
  /** The dependency check's findings; null when the sandbox never got that far. */
  boot: BootReport | null;
  memoryExceeded: boolean;
  /** Which limits a cgroup enforced for this run ('pids', 'memory'). */
  cgroup: string[];
  changes: Changes;
}

export function processLimits(settings: ScriptSettings): ProcessLimits {
  return {
    memoryBytes: settings.memoryMb * 1024 * 1024,
    maxProcesses: MAX_PROCESSES,
    maxFileBytes: MAX_FILE_BYTES,
    maxOpenFiles: 256,
    cpuSeconds: Math.ceil(settings.timeoutMs / 1000) + 1,
  };
}

/** Runs one script of the installed method in the sandbox the plan describes. Never outside it. */
export async function runScript(req: ScriptRequest): Promise<ScriptResult> {
  const limits = processLimits(req.settings);
  const cgroup = await createRunCgroup({ maxProcesses: limits.maxProcesses, memoryBytes: limits.memoryBytes }).catch(() => null);
  let outcome: RunOutcome;
  let memoryExceeded = false;
  try {
    outcome = await runSandboxed({
      bwrap: req.caps.bwrap,
      spec: {
        mounts: req.plan.mounts,
        cwd: PROJECT_AT,
        env: SANDBOX_ENV,
        command: bootstrapCommand(req.caps.python, limits, req.script, req.extraDeps ?? [], req.args),
        disableUserns: req.caps.disableUserns,
      },
      timeoutMs: req.settings.timeoutMs,
      maxOutputBytes: MAX_OUTPUT_BYTES,
      cgroup,
      signal: req.signal,
    });
    memoryExceeded = cgroup ? await cgroup.memoryExceeded() : false;
  } finally {
    await cgroup?.dispose().catch((e) => log.warn('scripts.cgroup_cleanup_failed', { error: e instanceof Error ? e.name : 'unknown' }));
  }
  const changes = await collectChanges(req.plan);
  if (changes.defused.length) log.warn('scripts.setid_cleared', { files: changes.defused.length });
  return { outcome, boot: parseBootReport(outcome.report), memoryExceeded, cgroup: cgroup?.controllers ?? [], changes };
}

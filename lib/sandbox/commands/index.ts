export {
  runCommand,
  commandHost,
  parseStatus,
  diffStatus,
  CHECKOUT_AT,
  sandboxPath,
  MAX_COMMAND_OUTPUT_BYTES,
  MAX_CHANGED_FILES,
  type CommandHost,
  type CommandRequest,
  type CommandResult,
  type FileChange,
  type StoppedBy,
} from './runner';
export { uvShim, supportFiles } from './shim';
export { runSetup, setupNetworkCapability, treeKey, CACHE_AT, type SetupRun, type SetupRequest } from './setup';
export { withWorkspaceLock } from './workspace-lock';
export { forgetStatus } from './snapshot';
export { commandEnv, refusedEnvReason, REFUSED_ENV, ENV_NAME } from './env-policy';
export { onlyRemoves } from './quota';

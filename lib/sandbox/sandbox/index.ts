export { bwrapArgs, bwrapOptions, SANDBOX_ENV, SANDBOX_UID, type Mount, type SandboxSpec } from './bwrap';
export { createRunCgroup, type RunCgroup } from './cgroup';
export { runSandboxed, type RunOptions, type RunOutcome } from './run';
export { HeadTail, Transcript, stripAnsi, type TranscriptChunk } from './output';
export { clearSetIdNoFollow } from './setid';
export { mountOptions } from './devices';
export { attachSetupNetwork, currentRule, networkTools, setupResolvConf, SETUP_RESOLV_CONF, type AttachedNetwork, type NetworkTools } from './network';
export { decide, setupRule, ipBatch, SLIRP, type NetRule, type NetRoute, type Decision, type HostAddress } from './network-rule';

export { git, gitOk, safeConfig, GitError, GIT_ENV, FIXED_CONFIG, DIFF_SAFE, SAFE_MERGE_DRIVER, type GitOptions, type GitResult } from './runner';
export { repositoryInfo, findRepositoryTop, currentBranch, resolveCommit, isClean, atTop, type RepositoryInfo } from './repo';
export { parseRemoteUrl, checkRemoteHost, addressKind, repositoryPathOf, type RemoteUrl, type AddressKind, type CheckedHost } from './remote-url';
export { remoteGit, remoteFailure, failureKind, parsePushPorcelain, pushOutcome, parseProgress, refusedConfigKeys, type RemoteCredential, type GitProgress, type RemoteCallOptions, type RemoteResult, type PushedRef, type PushOutcome } from './remote';
export { fastForward, isAncestor, type FastForward } from './fast-forward';
export { lockFileIn, lockShown, lockedMessage, heldLock, gitDirs, type LockNeeds } from './locks';

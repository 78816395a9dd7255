export { git, gitOk, safeConfig, GitError, GIT_ENV, FIXED_CONFIG, DIFF_SAFE, SAFE_MERGE_DRIVER, type GitOptions, type GitResult } from './runner';
export { repositoryInfo, findRepositoryTop, currentBranch, resolveCommit, isClean, atTop, type RepositoryInfo } from './repo';
export { lockFileIn, lockShown, lockedMessage, heldLock, gitDirs, type LockNeeds } from './locks';

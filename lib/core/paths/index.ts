export { expandVariables, expandDeep, isDocumentFolderKey, projectFolderValue, isReservedVariable, withoutReserved, today, MOUNT_TOKENS, TMP_TOKEN, type VariableScope } from './variables';
export { resolvePath, resolveInRoot, toVirtual, redactPaths, isInside, isDeniedProjectName, walkFailure, type PathContext, type ResolvedPath } from './sandbox';
export { openForRead, readResolved, hashResolved, writeFileAtomic, type WriteOutcome } from './safe-io';
export { walkFolder, WalkError, type WalkEntry, type WalkOptions } from './walk';
export { fileLockFolder, KeyedLock, setFileLockFolder, withFileLock } from './file-lock';

export {
  expandVariables,
  expandDeep,
  rewriteProjectRoot,
  isReservedVariable,
  withoutReserved,
  today,
  MOUNT_TOKENS,
  type MountName,
  type MountRoots,
  type VariableScope,
  type Expansion,
} from './variables';
export {
  resolvePath,
  resolveInRoot,
  toVirtual,
  redactPaths,
  isInside,
  violation,
  fsFailure,
  walkFailure,
  type Access,
  type PathContext,
  type ResolvedPath,
} from './sandbox';
export { openForRead, readResolved, hashResolved, writeFileAtomic, type OpenedFile, type WriteOutcome } from './safe-io';
export { walkFolder, FolderWalk, WalkError, type WalkEntry, type WalkOptions } from './walk';

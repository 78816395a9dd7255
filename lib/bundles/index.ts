export { createBundleScanner, scanBundles, MANIFEST_FILE } from './scanner';
export type { BundleScanner, BundleSnapshot, ScannedBundle, ScannedAgent, OfferedAgentRef } from './scanner';
export { validateManifest, AGENT_ID_PATTERN, MAX_FS_LIMIT_BYTES } from './schema';
export type { BundleManifest, BundleAgentManifest, FsLimitOverrides, ManifestResult } from './schema';

export { createBundleScanner } from './scanner';
export type { BundleScanner, BundleSnapshot, ScannedBundle, ScannedAgent, OfferedAgentRef } from './scanner';
export type { FsLimitOverrides } from './schema';

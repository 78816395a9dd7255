// The module this file was split from; greeting.ts still imports the agent lookup and the deps
// from here until it moves to lib/services. Nothing else should import it.
export { findAgent, type AgentRef } from './agent-lookup';
export type { ChatDeps } from './deps';

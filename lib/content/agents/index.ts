export { parseAgentFile, parseTrigger, isWorkflowCommand } from './parser';
export type { AgentDefinition, AgentCommand, AgentActivation, CommandKind, ParsedTrigger } from './parser';
export { matchCommand, resolveCommand, describeAmbiguity, describePrompt, commandNote } from './commands';
export type { CommandMatch, CommandResolution, MatchedBy } from './commands';
export { createCatalog } from './catalog';
export type { Catalog, ResolvedAgent, AgentListing, CommandListing } from './catalog';
export { classifyCriticalActions, activationLoads, startupActions } from './startup';
export type { CriticalAction, CriticalLoad } from './startup';

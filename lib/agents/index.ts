export { parseAgentFile, isWorkflowCommand, normalizeCmd } from './parser';
export type { AgentDefinition, AgentCommand, AgentPersona, AgentPrompt, AgentExtraElement, CommandKind } from './parser';
export { matchCommand } from './commands';
export type { CommandMatch } from './commands';
export { createCatalog } from './catalog';
export type { Catalog, CatalogOptions, LoadedAgent, ResolvedAgent, BundleView, BundleAgentView } from './catalog';

export { parseAgentFile, isWorkflowCommand } from './parser';
export type { AgentDefinition, AgentCommand } from './parser';
export { matchCommand } from './commands';
export type { CommandMatch } from './commands';
export { createCatalog } from './catalog';
export type { Catalog, ResolvedAgent } from './catalog';

export { AutopilotService, type AutopilotHands, type AutopilotDeps, type SprintContext } from './service';
export { openAutopilotStore, SqlAutopilotStore, MemoryAutopilotStore } from './store';
export { planDependencies, dependenciesInFrontmatter, cyclesOf, type DependencyPlan, type DependencyProblem, type StoryOrder } from './deps';
export * from './types';
export { ports as autopilotPorts, type ActingPerson, type AutopilotPorts, type BudgetState } from './ports';

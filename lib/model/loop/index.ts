export { runTurn } from './run-turn';
export { TurnBudget } from './budget';
export type { CompactionReport, LoopTools, PrepareRequest, PrepareResult, StopReason, SubagentToolEvent, ToolOutcome, TurnEvent } from './types';

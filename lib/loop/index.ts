export { runTurn } from './run-turn';
export { TurnBudget } from './budget';
export type { LoopTools, StopReason, SubagentToolEvent, ToolOutcome, TurnEvent } from './types';

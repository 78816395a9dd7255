export { runTurn } from './run-turn';
export type { LoopTools, StopReason, ToolOutcome, TurnEvent } from './types';

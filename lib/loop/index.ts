export { runTurn } from './run-turn';
export type { CompactionReport, LoopTools, PrepareRequest, PrepareResult, StopReason, ToolOutcome, TurnEvent } from './types';

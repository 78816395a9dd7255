export type { ChatDeps } from './context';
export { startTurn, type ChatRequest, type TurnHandle } from './turn';
export { collectTurn, type TurnSummary } from './collect';

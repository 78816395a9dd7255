export type { ChatDeps } from './deps';
export { startTurn, type ChatRequest, type TurnHandle } from './turn';
export { SERVER_SHUTDOWN } from './shutdown-reason';
export { collectTurn, type TurnSummary } from './collect';
export { workspaceTurn, workspaceTmp, placeForRun, APP_IDENTITY, turnCommitMessage, syncNotes, type TurnWorkspace, type EndedTurn, type TurnEndReport, type StoryRef } from './in-workspace';
export type { TurnEvent, StopReason } from '../../model/loop';

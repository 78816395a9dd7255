export { startScriptedModel } from './server';
export type { ScriptedModel, ScriptedModelOptions } from './server';
export { reply, SCENARIOS, scenarioFor, scenarioNames, summariseToolResults, currentTurn, lastUserText, GREETING, NOTE_PATH, NOTE_CONTENT } from './scenarios';
export type * from './types';

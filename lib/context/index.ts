export { loadTokenizer, tokenizerFor, type Tokenizer } from './tokens';
export { countMessage, countRequest, countTools, FRAMING, type RequestCount } from './count';
export { LOW_WATER, planCompaction, requestLimit, type ContextBudget, type PlanInput, type PlanResult } from './compact';
export { checkMessageFits, contextGuard, type ContextGuardOptions } from './guard';

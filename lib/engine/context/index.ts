export { isLinear, loadTokenizer, tokenizerFor, type Tokenizer } from './tokens';
export { countMessage, countMessageAsync, countRequest, countRequestAsync, countTools, FRAMING, type RequestCount } from './count';
export { LOW_WATER, planCompaction, requestLimit, type ContextBudget, type PlanInput, type PlanResult } from './compact';
export { checkMessageFits, checkMessageFitsAsync, contextGuard, type ContextGuardOptions } from './guard';

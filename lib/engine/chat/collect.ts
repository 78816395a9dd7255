import type { AppError } from '../../core/errors';
import type { Usage } from '../../model/llm/types';
import type { CompactionReport, StopReason, TurnEvent } from '../../model/loop';
import { costOf, type ModelPrice } from '../../core/models';

export interface TurnSummary {
  content: string;
  functionCalls: { id: string; name: string; arguments: unknown; result: unknown }[];
  usage: Required<Usage> & { cost?: number };
  iterations: number;
  stopReason: StopReason;
  compactions: CompactionReport[];
  error?: AppError;
}

/** Drains a turn's events into the JSON answer of POST /api/chat. */
export async function collectTurn(events: AsyncIterable<TurnEvent>, options: { price?: ModelPrice } = {}): Promise<TurnSummary> {
  const texts: string[] = [];
  // Keyed by id for results, listed in order: some servers reuse ids across the calls of a turn.
  const list: TurnSummary['functionCalls'] = [];
  const calls = new Map<string, TurnSummary['functionCalls'][number]>();
  const summary: TurnSummary = {
    content: '',
    functionCalls: [],
    usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
    iterations: 0,
    stopReason: 'stop',
    compactions: [],
  };
  for await (const event of events) {
    if (event.type === 'assistant-message' && event.content) texts.push(event.content);
    else if (event.type === 'tool-call') {
      const entry = { id: event.call.id, name: event.call.name, arguments: event.input, result: undefined };
      list.push(entry);
      calls.set(event.call.id, entry);
    } else if (event.type === 'tool-result') {
      const c = calls.get(event.call.id);
      if (c) c.result = event.result;
    } else if (event.type === 'compaction') summary.compactions.push(event.report);
    else if (event.type === 'finish') {
      const cost = costOf(options.price, event.usage);
      summary.usage = {
        promptTokens: event.usage.promptTokens,
        completionTokens: event.usage.completionTokens,
        cachedTokens: event.usage.cachedTokens ?? 0,
        ...(cost !== undefined ? { cost } : {}),
      };
      summary.iterations = event.iterations;
      summary.stopReason = event.stopReason;
    } else if (event.type === 'error') summary.error = event.error;
  }
  summary.content = texts.join('\n\n');
  summary.functionCalls = list;
  return summary;
}

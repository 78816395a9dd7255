import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { CompactionMark, StoredMessage } from '../../store/conversations/types';
import { AppError } from '../../core/errors';
import type { ToolDefinition } from '../../model/llm/types';
import type { PrepareRequest } from '../../model/loop/types';
import { planCompaction, requestLimit, warmCompaction, type ContextBudget } from './compact';
import { countRequest, countRequestAsync, type RequestCount } from './count';
import type { Tokenizer } from './tokens';

export interface ContextGuardOptions {
  budget: ContextBudget;
  tokenizer: Tokenizer;
  tools: ToolDefinition[];
  /** Stored history → the model's messages (with the compaction marks it holds). */
  render(history: StoredMessage[]): ChatCompletionMessageParam[];
  /** The conversation's stored history, up to the request about to be made. */
  load(): Promise<StoredMessage[]>;
  /** Keeps the marks, so later requests start from the compacted form. */
  save(marks: CompactionMark[]): Promise<void>;
  /** Tokens of each request as sent (after any compaction). */
  onCount?(tokens: number): void;
}

/**
 * The loop's `prepare` step for one turn. A request under the profile's limit goes out as it is,
 * so every request of a conversation stays an exact prefix of the next one. One over the limit
 * is compacted from the stored history — the one source the next turn rebuilds from, and every
 * event of this turn is stored before its next model call — so the next request starts from the
 * very form this one was sent in.
 */
export function contextGuard(o: ContextGuardOptions): PrepareRequest {
  const limit = requestLimit(o.budget);
  return async (messages) => {
    // Counted a slice at a time: a request holding a megabyte never holds up other requests.
    const n = (await countRequestAsync(o.tokenizer, { messages, tools: o.tools })).total;
    if (n <= limit) {
      o.onCount?.(n);
      return { messages };
    }
    const input = { history: await o.load(), render: o.render, tools: o.tools, tokenizer: o.tokenizer, budget: o.budget };
    await warmCompaction(input);
    const plan = planCompaction(input);
    if (!plan.ok) return { error: plan.error };
    o.onCount?.(plan.report.tokensAfter);
    if (!plan.marks.length) return { messages: plan.messages };
    await o.save(plan.marks);
    return { messages: plan.messages, compaction: plan.report };
  };
}

/**
 * Before anything is stored: a message that cannot fit even beside nothing but the system prompt
 * and the tool schemas is refused at once (the least a request of this turn will hold).
 */
export function checkMessageFits(t: Tokenizer, budget: ContextBudget, request: FitRequest): AppError | null {
  return fits(budget, countRequest(t, fitMessages(request)));
}

/** checkMessageFits, counting a long message a slice at a time. */
export async function checkMessageFitsAsync(t: Tokenizer, budget: ContextBudget, request: FitRequest): Promise<AppError | null> {
  return fits(budget, await countRequestAsync(t, fitMessages(request)));
}

type FitRequest = { systemPrompt: string; message: string; tools: ToolDefinition[] };

function fitMessages(request: FitRequest): { messages: ChatCompletionMessageParam[]; tools: ToolDefinition[] } {
  return {
    messages: [
      { role: 'system', content: request.systemPrompt },
      { role: 'user', content: request.message },
    ],
    tools: request.tools,
  };
}

function fits(budget: ContextBudget, count: RequestCount): AppError | null {
  const limit = requestLimit(budget);
  if (count.total <= limit) return null;
  const [system, user] = count.messages;
  const fmt = (n: number) => n.toLocaleString('en');
  return new AppError(
    'E_CONTEXT_TOO_LARGE',
    `The message does not fit profile "${budget.profile}": the system prompt (${fmt(system)} tokens), the tool schemas (${fmt(count.tools)}) and the message (${fmt(user)}) need ${fmt(count.total)} tokens, and the profile allows ${fmt(limit)} (contextWindow ${fmt(budget.contextWindow)} less maxOutputTokens ${fmt(budget.maxOutputTokens)}). Shorten the message, or choose a profile with a larger context window.`,
    { profile: budget.profile, tokens: count.total, limit, systemPrompt: system, toolSchemas: count.tools, lastUserMessage: user },
  );
}

import type OpenAI from 'openai';
import { log } from '../../core/log';
import { costOf, type ModelPrice } from '../../core/models';
import type { ToolDefinition } from '../../model/llm/types';
import { runTurn, type LoopTools, type SubagentToolEvent, type TurnBudget, type TurnEvent } from '../../model/loop';
import { buildSubagentPrompt, toModelMessages } from '../prompt';
import { contextGuard, type ContextBudget, type Tokenizer } from '../context';
import type { StoredMessage } from '../../store/conversations/types';
import { fail, type ToolResult } from '../../core/results';
import { runToolCall, spawnSubagentTool, type SubagentRequest, type SubagentRunner, type ToolContext } from '../tools';
import { DEFAULT_SUBAGENT_STEPS } from '../tools/spawn-subagent';
import type { ChatDeps } from './deps';

/** One nested call as the parent's tool result keeps it: enough to show it again, small enough for the model. */
export interface NestedCallRecord {
  name: string;
  ok: boolean;
  /** The failure's code. */
  error?: string;
  args?: unknown;
}

export interface SubagentHostOptions {
  deps: Pick<ChatDeps, 'store'>;
  /** The turn's tool context: the subagent works in the same sandbox, audit log and variables. */
  ctx: ToolContext;
  /** The turn's tools; the subagent gets them all but spawn_subagent. */
  definitions: ToolDefinition[];
  client: OpenAI;
  model: string;
  /** The turn's profile prices: a subagent's calls cost the conversation like the turn's own. */
  price?: ModelPrice;
  /** The turn's context budget: a subagent's requests are counted and compacted like the turn's. */
  context?: { budget: ContextBudget; tokenizer: Tokenizer };
  /** The turn's budget; each subagent draws a child of it. */
  budget: TurnBudget;
  project?: { writable: string[] };
}

export interface SubagentHost {
  /** The runner for spawn_subagent in one call of the turn, so its activity is shown under that call. */
  runner(parentToolCallId: string): SubagentRunner;
  /** The turn's events with the subagents' activity put in as it happens. */
  merge(events: AsyncGenerator<TurnEvent>): AsyncGenerator<TurnEvent>;
}

const MAX_ARG_CHARS = 160;
const MAX_ARG_KEYS = 8;

/** A call's arguments cut down: paths and short values stay whole, contents become a prefix. */
export function compactArgs(input: unknown): unknown {
  const cut = (v: unknown): unknown => {
    if (typeof v === 'string') return v.length > MAX_ARG_CHARS ? `${v.slice(0, MAX_ARG_CHARS)}… (${v.length} chars)` : v;
    if (v === null || typeof v !== 'object') return v;
    const text = JSON.stringify(v);
    return text.length > MAX_ARG_CHARS ? `${text.slice(0, MAX_ARG_CHARS)}…` : v;
  };
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return cut(input);
  return Object.fromEntries(Object.entries(input).slice(0, MAX_ARG_KEYS).map(([k, v]) => [k, cut(v)]));
}

/** Nested activity waiting to go out with the turn's events. */
class Activity {
  private items: TurnEvent[] = [];
  private wake: (() => void) | null = null;
  closed = false;

  push(event: TurnEvent) {
    if (this.closed) return;
    this.items.push(event);
    this.wake?.();
    this.wake = null;
  }

  take(): TurnEvent[] {
    const out = this.items;
    this.items = [];
    return out;
  }

  get waiting(): boolean {
    return this.items.length > 0;
  }

  arrival(): Promise<'activity'> {
    return new Promise((resolve) => {
      this.wake = () => resolve('activity');
    });
  }
}

async function* mergeActivity(events: AsyncGenerator<TurnEvent>, activity: Activity): AsyncGenerator<TurnEvent> {
  try {
    let next = events.next();
    for (;;) {
      for (const e of activity.take()) yield e;
      const arrived = activity.arrival();
      const winner = await Promise.race([next, arrived]);
      if (winner === 'activity') continue;
      // A subagent's last calls are pushed before its tool result exists: they go out first.
      for (const e of activity.take()) yield e;
      if (winner.done) return;
      yield winner.value;
      next = events.next();
    }
  } finally {
    activity.closed = true;
    await events.return(undefined);
  }
}

function userMessage(request: SubagentRequest): string {
  return request.input?.trim() ? request.input : 'Do the task now.';
}

export function subagentHost(opts: SubagentHostOptions): SubagentHost {
  const activity = new Activity();
  const definitions = opts.definitions.filter((d) => d.function.name !== spawnSubagentTool.name);
  // No runner inside: a subagent cannot spawn another, even by naming the tool anyway.
  const base: ToolContext = { ...opts.ctx };
  delete base.subagent;
  const tools: LoopTools = { definitions, execute: (call, signal) => runToolCall(call, { ...base, signal }) };

  async function run(parentToolCallId: string, request: SubagentRequest, signal?: AbortSignal): Promise<ToolResult> {
    const budget = opts.budget.child(request.maxSteps ?? DEFAULT_SUBAGENT_STEPS);
    const records: NestedCallRecord[] = [];
    const texts: string[] = [];
    let answer = '';
    const soFar = () => ({ result: texts.join('\n\n'), steps: budget.steps, usage: budget.usage, tool_calls: records });
    if (budget.remaining <= 0) {
      return fail('E_SUBAGENT_LIMIT', 'This turn has no model calls left for a subagent. Answer with what you have; the user can ask you to go on.', { details: soFar() });
    }
    const systemPrompt = buildSubagentPrompt({ instructions: request.instructions, toolNames: definitions.map((d) => d.function.name), maxSteps: budget.remaining, ...(opts.project ? { project: opts.project } : {}) });
    // The subagent's own history, kept in memory as the turn's is in the store, so the same
    // context budget can compact it before a call rather than let the provider refuse it.
    const stamp = () => new Date().toISOString();
    const history: StoredMessage[] = [{ id: 'sub-0', role: 'user', content: userMessage(request), timestamp: stamp() }];
    const messages = toModelMessages(systemPrompt, history);
    const prepare = opts.context
      ? contextGuard({
          budget: opts.context.budget,
          tokenizer: opts.context.tokenizer,
          tools: definitions,
          render: (h) => toModelMessages(systemPrompt, h),
          load: async () => history,
          save: async (marks) => {
            for (const mark of marks) {
              const m = history.find((x) => x.id === mark.messageId);
              if (m) m.compacted = mark.compacted;
            }
          },
        })
      : undefined;
    let step = 0;
    let seq = 0;
    // Results come in the order their calls were announced, so a server that reuses ids is no trouble.
    const open: SubagentToolEvent[] = [];
    let ending: TurnEvent | undefined;
    const started = performance.now();
    for await (const event of runTurn({
      client: opts.client,
      model: opts.model,
      messages,
      tools,
      maxIterations: budget.limit,
      budget,
      // The parent's signal carries its stop and its deadline.
      signal: signal ?? new AbortController().signal,
      timeoutMs: 0,
      ...(prepare ? { prepare } : {}),
    })) {
      switch (event.type) {
        case 'step-start':
          step = event.iteration;
          break;
        case 'assistant-message':
          history.push({ id: `sub-${history.length}`, role: 'assistant', content: event.content, ...(event.toolCalls.length ? { toolCalls: event.toolCalls } : {}), timestamp: stamp() });
          if (event.content) texts.push(event.content);
          if (event.toolCalls.length === 0) answer = event.content;
          if (event.usage.promptTokens || event.usage.completionTokens) {
            await opts.deps.store.addUsage(opts.ctx.conversationId, event.usage, costOf(opts.price, event.usage));
            log.info('model.call', { conversationId: opts.ctx.conversationId, agent: opts.ctx.agentId, model: opts.model, subagent: true, toolCalls: event.toolCalls.length, promptTokens: event.usage.promptTokens, completionTokens: event.usage.completionTokens });
          }
          break;
        case 'tool-call': {
          const announced: SubagentToolEvent = { type: 'subagent-tool', parentToolCallId, seq: seq++, step, call: event.call, input: compactArgs(event.input) };
          open.push(announced);
          activity.push(announced);
          break;
        }
        case 'tool-result': {
          history.push({ id: `sub-${history.length}`, role: 'tool', toolCallId: event.call.id, name: event.call.name, result: event.result, timestamp: stamp() });
          const announced = open.shift();
          if (!announced) break;
          records.push({ name: event.call.name, ok: event.result.ok, ...(event.result.ok ? {} : { error: event.result.error.code }), args: announced.input });
          activity.push({ ...announced, result: event.result });
          break;
        }
        case 'compaction':
          log.info('context.compacted', { conversationId: opts.ctx.conversationId, subagent: true, ...event.report });
          break;
        case 'finish':
        case 'error':
          ending = event;
          break;
      }
    }
    const outcome = ending?.type === 'finish' ? ending.stopReason : 'error';
    log.info('subagent.end', { conversationId: opts.ctx.conversationId, agent: opts.ctx.agentId, outcome, steps: budget.steps, toolCalls: records.length, durationMs: Math.round(performance.now() - started) });
    if (outcome === 'stop') return { ok: true, result: answer, steps: budget.steps, usage: budget.usage, tool_calls: records };
    if (outcome === 'max_iterations') {
      const turnLimit = budget.steps < budget.limit;
      return fail(
        'E_SUBAGENT_LIMIT',
        `The subagent used ${budget.steps} model call${budget.steps === 1 ? '' : 's'}${turnLimit ? ", all this turn had left," : ''} before it answered. What it had so far is in details.`,
        { details: soFar() },
      );
    }
    if (outcome === 'aborted') return fail('E_ABORTED', 'The turn was stopped while the subagent worked.', { details: soFar() });
    const error = ending?.type === 'error' ? `${ending.error.code}: ${ending.error.message}` : 'it ended without an answer';
    return fail('E_SUBAGENT_FAILED', `The subagent stopped: ${error}`, { details: soFar() });
  }

  return {
    runner: (parentToolCallId) => (request, signal) => run(parentToolCallId, request, signal),
    merge: (events) => mergeActivity(events, activity),
  };
}

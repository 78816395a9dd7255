import { performance } from 'node:perf_hooks';
import type OpenAI from 'openai';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { AppError } from '../../core/errors';
import { mapLlmError, noToolsError, streamChat } from '../llm';
import type { CompletionResult } from '../llm';
import { MODEL_OUTPUT_LIMITS, parseToolArguments, toolArgumentsView, type ToolCall, type Usage } from '../llm/types';
import { modelView, type ToolResult } from '../../core/results';
import { TurnBudget } from './budget';
import type { LoopTools, PrepareRequest, ToolOutcome, TurnEvent } from './types';

export interface RunTurnInput {
  client: OpenAI;
  model: string;
  /** The full history the model sees: system, prior turns, the new user message (or pending tool results, to resume). */
  messages: ChatCompletionMessageParam[];
  tools: LoopTools;
  /** Model calls allowed in this turn (at least 1), when no `budget` is given. */
  maxIterations: number;
  /**
   * The turn's model calls and tokens, shared with loops its tools run (a subagent runs on a
   * child of it): every call made on it counts against its limit, and `finish` reports its steps
   * and usage. Default: a budget of `maxIterations`.
   */
  budget?: TurnBudget;
  /** Stop / client disconnect. Ends the turn with `finish { stopReason: 'aborted' }`. */
  signal: AbortSignal;
  /** Deadline for the whole turn (model calls and tools). Ends it with an E_LLM_TIMEOUT `error`. 0 = none. */
  timeoutMs: number;
  /**
   * Tool calls the server makes before the first model call (a `*command` that starts a
   * workflow). They run as step 0, through the same path as the model's calls, so the model's
   * first answer already follows their results. Step 0 is no model call: it counts for neither
   * `maxIterations` nor usage.
   */
  serverCalls?: ToolCall[];
  /**
   * Runs before every model call (step 0 makes none) with the request's messages: the context
   * budget (lib/engine/context). Its compacted copy becomes the history the turn goes on from; its error
   * ends the turn before the call.
   */
  prepare?: PrepareRequest;
  /** The model profile, named in errors whose fix is choosing another one. */
  profile?: string;
  /** Sent as `parallel_tool_calls` when set. */
  parallelToolCalls?: boolean;
}

const ZERO: Usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };

/**
 * Model calls in a row whose every tool call had arguments that are not JSON. One such call is
 * a slip the model corrects from the tool error; three in a row mean it cannot make tool calls.
 */
const UNPARSED_STEPS_LIMIT = 3;

// A tool call written as text: chat templates' own markers, or a bare JSON call object.
const TEXT_TOOL_CALL = /^\s*(?:```(?:json|xml)?\s*)?(?:<tool_call>|\[TOOL_CALLS\]|<\|python_tag\|>|<function[=>]|\{\s*["']?(?:name|function|tool)["']?\s*:)/;

/** An answer that is a tool call the server never parsed: the model wrote the call as text. */
export function isTextToolCall(content: string, toolNames: readonly string[]): boolean {
  if (!TEXT_TOOL_CALL.test(content)) return false;
  const head = content.slice(0, 2000);
  return toolNames.some((name) => new RegExp(`["'=>\\s]${name}["'<\\s,}]`).test(head));
}

function abortedResult(): ToolResult {
  return { ok: false, error: { code: 'E_ABORTED', message: 'The turn was stopped before this tool finished.' } };
}

const fmtChars = (n: number) => n.toLocaleString('en');

/** The answer to a call whose arguments passed the cap: what happened, and what to do instead. */
function oversizedResult(call: ToolCall): ToolResult {
  const cap = MODEL_OUTPUT_LIMITS.toolArgumentChars;
  return {
    ok: false,
    error: {
      code: 'E_ARGS_TOO_LARGE',
      message: `This ${call.name} call did not run: its arguments passed ${fmtChars(cap)} characters (${fmtChars(call.oversized ?? cap)} received before the server stopped reading), the most one tool call may carry. Send large content in parts, each call under ${fmtChars(cap)} characters (several calls, or several files), and do not repeat text.`,
      details: { limitChars: cap, receivedChars: call.oversized ?? cap },
    },
  };
}

/** A tool that throws is still an answer the model must get, or the history would be invalid. */
async function execute(tools: LoopTools, call: ToolCall, signal: AbortSignal): Promise<ToolOutcome> {
  if (call.oversized !== undefined) return { result: oversizedResult(call), durationMs: 0 };
  try {
    return await tools.execute(call, signal);
  } catch (e) {
    return {
      result: {
        ok: false,
        error: { code: 'E_INTERNAL', message: `The tool failed unexpectedly: ${e instanceof Error ? e.message : String(e)}` },
      },
      durationMs: 0,
    };
  }
}

class Interrupted extends Error {}

/** The reason given to whatever is still running when a turn ends; shared, as building one per turn costs a stack trace. */
const TURN_ENDED = Object.assign(new Error('The turn ended.'), { name: 'AbortError' });

/**
 * Races promises against the signal: `race(p)` settles with p, or rejects with Interrupted as soon
 * as the signal fires. One listener serves every race (a model answer is raced once per chunk).
 */
function abortRace(signal: AbortSignal): { race<T>(promise: Promise<T>): Promise<T>; dispose(): void } {
  let onAbort = () => undefined as void;
  const interrupted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Interrupted());
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  interrupted.catch(() => undefined);
  return {
    // Promise.race subscribes to the promise, so a loser that rejects later is never unhandled.
    race: <T>(promise: Promise<T>): Promise<T> => Promise.race([promise, interrupted]),
    dispose: () => signal.removeEventListener('abort', onAbort),
  };
}

function assistantParam(c: Pick<CompletionResult, 'content' | 'toolCalls'>): ChatCompletionAssistantMessageParam {
  if (c.toolCalls.length === 0) return { role: 'assistant', content: c.content };
  return {
    role: 'assistant',
    // OpenAI's own shape for a tool-only message is content: null.
    content: c.content === '' ? null : c.content,
    // Arguments are echoed raw, even when not valid JSON: the tool error the model gets next
    // refers to exactly what it sent. OpenAI accepts any string here; a stricter server would
    // reject the next request, which then surfaces as a clear E_LLM_UPSTREAM 400.
    tool_calls: c.toolCalls.map((t) => ({ id: t.id, type: 'function' as const, function: { name: t.name, arguments: t.arguments } })),
  };
}

/**
 * One user turn of the agentic loop, modelled on the OpenAI Agents SDK run loop: call the model
 * with the tools; if it asks for tools, run them all in parallel, give every result back in the
 * model's order, and call it again; stop when it answers without tools or the step limit is hit.
 *
 * Events, in order, per model call: step-start, text-delta*, assistant-message, then for tool
 * calls tool-call* (all, before any runs), tool-result* (model order, each as soon as it and
 * those before it are done), step-finish. The turn ends with exactly one of:
 * - `finish` stop           — the model answered without tools;
 * - `finish` max_iterations — the budget's model calls (a subagent's included) are spent and the
 *                              last asked for tools (they still ran, so the history is complete and
 *                              resumable);
 * - `finish` aborted        — `signal` fired; the upstream request is cancelled at once;
 * - `error`                 — E_LLM_TIMEOUT at the deadline, or the mapped upstream failure.
 * After an interruption no step-finish follows; text already streamed comes first as an
 * assistant-message without tool calls, and tool calls already announced get E_ABORTED results,
 * so a caller that persists every event always stores a valid history.
 *
 * Storage, HTTP and SSE are the caller's: this only yields events.
 */
export async function* runTurn(input: RunTurnInput): AsyncGenerator<TurnEvent, void, undefined> {
  const { client, model, tools, profile } = input;
  const budget = input.budget ?? new TurnBudget(input.maxIterations);

  // One signal for everything below: the caller's stop and our deadline, told apart by flags.
  const controller = new AbortController();
  const onCallerAbort = () => controller.abort(input.signal.reason);
  if (input.signal.aborted) onCallerAbort();
  else input.signal.addEventListener('abort', onCallerAbort, { once: true });
  let timedOut = false;
  const timer =
    input.timeoutMs > 0 && Number.isFinite(input.timeoutMs)
      ? setTimeout(() => {
          timedOut = true;
          controller.abort(new DOMException(`The turn exceeded ${input.timeoutMs} ms.`, 'TimeoutError'));
        }, input.timeoutMs)
      : undefined;
  const signal = controller.signal;

  let aborts = abortRace(signal);
  let history = [...input.messages];
  let unparsedSteps = 0;
  let iterations = 0;

  const terminal = (cause: unknown): TurnEvent => {
    if (timedOut) {
      const seconds = Math.round(input.timeoutMs / 100) / 10;
      return {
        type: 'error',
        error: new AppError('E_LLM_TIMEOUT', `The turn took longer than ${seconds} s and was stopped.`, { timeoutMs: input.timeoutMs, iterations: budget.steps }),
      };
    }
    if (input.signal.aborted) return { type: 'finish', stopReason: 'aborted', usage: budget.usage, iterations: budget.steps };
    return { type: 'error', error: mapLlmError(cause, { model, profile, baseURL: client.baseURL, apiKey: client.apiKey ?? undefined }) };
  };

  /**
   * Runs one step's calls in parallel and yields their results in the model's order; false when
   * the turn was interrupted (the terminal event is already out then).
   */
  async function* runTools(toolCalls: ToolCall[]): AsyncGenerator<TurnEvent, boolean, undefined> {
    const calls: ToolCall[] = toolCalls.map((t) => ({ id: t.id, name: t.name, arguments: t.arguments, ...(t.oversized !== undefined ? { oversized: t.oversized } : {}) }));
    for (const call of calls) yield { type: 'tool-call', call, input: toolArgumentsView(call.arguments) };
    const started = performance.now();
    const running = calls.map((call) => execute(tools, call, signal));
    for (let i = 0; i < calls.length; i++) {
      let outcome: ToolOutcome;
      try {
        outcome = await aborts.race(running[i]);
      } catch {
        // Interrupted: the unfinished calls still need an answer in the history.
        for (let j = i; j < calls.length; j++) {
          const result = abortedResult();
          history.push({ role: 'tool', tool_call_id: calls[j].id, content: JSON.stringify(result) });
          yield { type: 'tool-result', call: calls[j], result, durationMs: performance.now() - started };
        }
        yield terminal(signal.reason);
        return false;
      }
      history.push({ role: 'tool', tool_call_id: calls[i].id, content: JSON.stringify(modelView(outcome.result)) });
      yield { type: 'tool-result', call: calls[i], result: outcome.result, durationMs: outcome.durationMs };
    }
    return true;
  }

  try {
    if (input.serverCalls?.length) {
      const planned = { content: '', toolCalls: input.serverCalls, usage: ZERO };
      yield { type: 'step-start', iteration: 0 };
      yield { type: 'assistant-message', ...planned, byServer: true };
      history.push(assistantParam(planned));
      if (!(yield* runTools(planned.toolCalls))) return;
      yield { type: 'step-finish', iteration: 0, usage: ZERO };
    }
    while (true) {
      if (signal.aborted) {
        yield terminal(signal.reason);
        return;
      }
      // A budget shared with other loops can be spent by them before this loop's first call.
      if (budget.remaining <= 0) {
        yield { type: 'finish', stopReason: 'max_iterations', usage: budget.usage, iterations: budget.steps };
        return;
      }
      iterations++;
      budget.takeStep();
      if (iterations > 1) {
        // A fresh race per model call, so the reactions of the last call's chunks can be freed.
        aborts.dispose();
        aborts = abortRace(signal);
      }
      yield { type: 'step-start', iteration: iterations };

      if (input.prepare) {
        let prepared;
        try {
          prepared = await aborts.race(input.prepare(history));
        } catch (e) {
          yield terminal(e);
          return;
        }
        if ('error' in prepared) {
          yield { type: 'error', error: prepared.error };
          return;
        }
        if (prepared.compaction) {
          history = [...prepared.messages];
          yield { type: 'compaction', report: prepared.compaction };
        }
      }

      let completion: CompletionResult | undefined;
      let partial = '';
      const stream = streamChat({
        client,
        model,
        messages: history,
        tools: tools.definitions,
        signal,
        profile,
        ...(input.parallelToolCalls !== undefined ? { parallelToolCalls: input.parallelToolCalls } : {}),
      });
      try {
        while (!completion) {
          // Raced against the signal so a fetch that ignores aborts cannot hold the turn open.
          const next = await aborts.race(stream.next());
          if (next.done) completion = next.value;
          else {
            partial += next.value.delta;
            yield next.value;
          }
        }
      } catch (e) {
        stream.return(undefined as never).catch(() => undefined);
        if (partial) yield { type: 'assistant-message', content: partial, toolCalls: [], usage: ZERO };
        yield terminal(e);
        return;
      }

      budget.addUsage(completion.usage);
      yield { type: 'assistant-message', content: completion.content, toolCalls: completion.toolCalls, usage: completion.usage };
      history.push(assistantParam(completion));

      if (completion.toolCalls.length === 0) {
        yield { type: 'step-finish', iteration: iterations, usage: completion.usage };
        if (isTextToolCall(completion.content, tools.definitions.map((d) => d.function.name))) {
          yield { type: 'error', error: noToolsError({ profile, model }, 'it wrote a tool call as text instead of making it, so the server never received it.') };
          return;
        }
        yield { type: 'finish', stopReason: 'stop', usage: budget.usage, iterations: budget.steps };
        return;
      }

      unparsedSteps = completion.toolCalls.every((c) => !parseToolArguments(c.arguments).ok) ? unparsedSteps + 1 : 0;
      if (!(yield* runTools(completion.toolCalls))) return;
      yield { type: 'step-finish', iteration: iterations, usage: completion.usage };
      if (unparsedSteps >= UNPARSED_STEPS_LIMIT) {
        yield { type: 'error', error: noToolsError({ profile, model }, `its last ${unparsedSteps} answers held tool calls whose arguments were not JSON.`) };
        return;
      }

      if (budget.remaining <= 0) {
        yield { type: 'finish', stopReason: 'max_iterations', usage: budget.usage, iterations: budget.steps };
        return;
      }
    }
  } finally {
    if (timer) clearTimeout(timer);
    aborts.dispose();
    input.signal.removeEventListener('abort', onCallerAbort);
    // The consumer may stop iterating early (return()); nothing we started may outlive the turn.
    if (!signal.aborted) controller.abort(TURN_ENDED);
  }
}

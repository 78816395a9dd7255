import { AppError, isAppError } from '../../core/errors';
import { log } from '../../core/log';
import type { StoredMessage, TurnBatch, TurnOutcome } from '../../store/conversations/types';
import { runToolCall } from '../tools';
import type { ToolCall } from '../../model/llm/types';
import { runTurn, TurnBudget, type TurnEvent } from '../../model/loop';
import { contextGuard } from '../context';
import { costOf } from '../../core/models';
import { toModelMessages } from '../prompt';
import { isWorkflowCommand, type CommandMatch, type CommandResolution } from '../../content/agents';
import { SERVER_SHUTDOWN } from './shutdown-reason';
import { clock } from './clock';
import type { ChatDeps } from './deps';
import { newId } from './ids';
import type { OpenedTurn } from './open-turn';
import { REMOTE_STOP } from './remote-stop';
import { subagentHost } from './subagent';
import { toolContext } from './tool-context';

function stopOutcome(signal: AbortSignal): 'stopped' | 'interrupted' {
  return signal.reason === SERVER_SHUTDOWN ? 'interrupted' : 'stopped';
}

/** A command that runs a file (workflow, step-file workflow, task, skill) becomes a tool call the server makes before the first model call. */
function shortcutCall(resolution: CommandResolution): ToolCall | null {
  if (resolution.kind !== 'command' || !isWorkflowCommand(resolution.match.command)) return null;
  const command: CommandMatch = resolution.match;
  const args = {
    workflow_path: command.command.target,
    ...(command.command.data ? { data_path: command.command.data } : {}),
    ...(command.userInput ? { user_input: command.userInput } : {}),
  };
  return { id: newId('call'), name: 'execute_workflow', arguments: JSON.stringify(args) };
}

/** The turn's workspace commit and sync, told what the turn was; the notes it has for the conversation. */
async function placeEnd(turn: RunningTurn, agent: string): Promise<string[]> {
  const asked = turn.history.find((m) => m.id === turn.userMessageId);
  const request = asked && asked.role === 'user' ? asked.content : '';
  try {
    const report = await turn.place!.end({ agent, conversationId: turn.conversationId, request, turnId: turn.userMessageId });
    return report?.notes ?? [];
  } catch (e) {
    log.warn('workspace.turn_end_failed', { conversationId: turn.conversationId, error: e instanceof Error ? e.name : 'unknown' });
    return [];
  }
}

/** An opened turn as it runs: its answer's id, its signal and who reads its events. */
export interface RunningTurn extends OpenedTurn {
  /** Id of the assistant message that answers. */
  messageId: string;
  signal: AbortSignal;
  /** Ends the watch for a Stop asked for through the store. */
  unwatch: () => void;
  /** Answer text the reader was sent (see TurnHandle.reportTextSent); null when nobody counts. */
  sent: { chars: number | null };
}

/**
 * Runs an opened turn and records it as it happens: each model call's message with its usage,
 * each tool result, compactions; then how the turn ended, which gives the lock back. The model's
 * first request is made from the history and the system prompt the opening read and built.
 */
export async function* recordTurn(deps: ChatDeps, turn: RunningTurn): AsyncGenerator<TurnEvent> {
  const { resolved, conversationId, signal, audit, profile } = turn;
  const store = deps.store;
  const now = clock(deps);
  const stamp = () => now().toISOString();
  let outcome: TurnOutcome | null = null;
  // Text yielded so far, and where the current step's text began, to cut a stopped answer where
  // the reader's text ended.
  let textYielded = 0;
  let stepTextStart = 0;
  const started = performance.now();
  // The answer and its usage, written with the turn's end (before the last event goes out, so a
  // reader that sees the end finds the answer stored and the conversation free).
  let final: TurnBatch | null = null;
  let ended = false;
  const end = async (how: TurnOutcome) => {
    if (ended) return;
    ended = true;
    // A workspace's commit and sync come before the turn's end is written: whoever sees the turn
    // ended finds its work on the branch, and what the sync left out is said in the conversation.
    const notes = turn.place ? await placeEnd(turn, resolved.agent.id) : [];
    const batch: TurnBatch = final ?? {};
    const messages = [...(batch.messages ?? []), ...notes.map((content): StoredMessage => ({ id: newId('sys'), role: 'system', content, timestamp: stamp() }))];
    await store.commit(conversationId, { ...batch, ...(messages.length ? { messages } : {}), end: { lease: turn.lease, outcome: how } });
  };
  try {
    const { systemPrompt, tools: { definitions, dynamicTools } } = turn;
    const ws = resolved.workspace;
    const ctx = { ...toolContext(deps, resolved, conversationId, turn.variables, audit, signal, turn.author, turn.place), ...(dynamicTools ? { dynamicTools } : {}) };
    const messages = toModelMessages(systemPrompt, turn.history);
    const shortcut = shortcutCall(turn.command);
    let stepStarted = performance.now();
    let requestTokens = 0;
    const prepare = contextGuard({
      budget: turn.budget,
      tokenizer: turn.tokenizer,
      tools: definitions,
      render: (stored) => toModelMessages(systemPrompt, stored),
      // Only a request over the limit reads the history again: it holds this turn's events by then.
      load: () => store.messages(conversationId),
      save: (marks) => store.compact(conversationId, marks),
      onCount: (n) => (requestTokens = n),
    });
    // Subagents draw on the turn's budget and run on its profile; their activity joins its events.
    const steps = new TurnBudget(deps.config.maxIterations);
    const client = deps.llm(profile.name);
    const subagents = subagentHost({ deps, ctx, definitions, client, model: profile.model, ...(profile.price ? { price: profile.price } : {}), context: { budget: turn.budget, tokenizer: turn.tokenizer }, budget: steps, ...(ws.writable ? { project: { writable: ws.writable } } : {}) });

    for await (let event of subagents.merge(runTurn({
      client,
      model: profile.model,
      // Errors name a profile of the models file; the environment's one profile is no name to look for.
      ...(deps.config.models.file ? { profile: profile.name } : {}),
      ...(profile.parallelToolCalls !== undefined ? { parallelToolCalls: profile.parallelToolCalls } : {}),
      messages,
      tools: { definitions, execute: (call, sig) => runToolCall(call, { ...ctx, signal: sig, subagent: subagents.runner(call.id) }) },
      maxIterations: deps.config.maxIterations,
      budget: steps,
      signal,
      timeoutMs: deps.config.turnTimeoutMs,
      prepare,
      ...(shortcut ? { serverCalls: [shortcut] } : {}),
    }))) {
      switch (event.type) {
        case 'step-start':
          stepStarted = performance.now();
          stepTextStart = textYielded;
          break;
        case 'text-delta':
          textYielded += event.delta.length;
          break;
        case 'assistant-message': {
          let keep = true;
          // A Stop through the store leaves the reader reading: it gets every token yielded so far, so all of them are kept.
          if (!event.toolCalls.length && !event.byServer && signal.aborted && stopOutcome(signal) === 'stopped' && signal.reason !== REMOTE_STOP && turn.sent.chars !== null) {
            const shown = Math.max(0, turn.sent.chars - stepTextStart);
            if (shown < event.content.length) event = { ...event, content: event.content.slice(0, shown) };
            // Nothing of it reached the screen: there is no answer to keep.
            keep = event.content !== '';
          }
          const cost = event.byServer ? undefined : costOf(profile.price, event.usage);
          // A message without tool calls ends the turn, so it carries the turn's answer id.
          const msg: StoredMessage = {
            id: event.toolCalls.length ? newId('msg') : turn.messageId,
            role: 'assistant',
            content: event.content,
            ...(event.toolCalls.length ? { toolCalls: event.toolCalls } : {}),
            ...(event.byServer ? {} : { usage: event.usage, profile: profile.name, model: profile.model }),
            ...(cost !== undefined ? { cost } : {}),
            timestamp: stamp(),
          };
          if (event.byServer) {
            if (keep) await store.append(conversationId, msg);
            break;
          }
          const batch: TurnBatch = { messages: keep ? [msg] : [], usage: { usage: event.usage, ...(cost !== undefined ? { cost } : {}) } };
          // The answer (no tool calls) is the turn's last write: it goes in with the turn's end.
          if (event.toolCalls.length) await store.commit(conversationId, batch);
          else final = batch;
          log.info('model.call', {
            conversationId,
            agent: resolved.agent.id,
            profile: profile.name,
            model: profile.model,
            durationMs: Math.round(performance.now() - stepStarted),
            toolCalls: event.toolCalls.length,
            requestTokens,
            promptTokens: event.usage.promptTokens,
            cachedTokens: event.usage.cachedTokens ?? 0,
            completionTokens: event.usage.completionTokens,
          });
          break;
        }
        case 'compaction':
          // The guard stored the marks before the call; this is the operator's record of it.
          log.info('context.compacted', { conversationId, ...event.report });
          break;
        case 'tool-result':
          await store.append(conversationId, { id: newId('tool'), role: 'tool', toolCallId: event.call.id, name: event.call.name, result: event.result, timestamp: stamp() });
          break;
        case 'finish':
          outcome = event.stopReason === 'aborted' ? stopOutcome(signal) : 'done';
          await end(outcome);
          break;
        case 'error':
          outcome = { status: 'failed', error: { code: event.error.code, message: event.error.message } };
          await end(outcome);
          break;
      }
      yield event;
    }
  } catch (e) {
    const error = isAppError(e) ? e : new AppError('E_INTERNAL', 'The turn failed unexpectedly.');
    if (!isAppError(e)) log.error('turn.crash', { conversationId, message: (e as Error)?.message?.slice(0, 200) });
    outcome = { status: 'failed', error: { code: error.code, message: error.message } };
    yield { type: 'error', error };
  } finally {
    // Every line is written by now (each call awaited its own); only the file is given back.
    void audit.close();
    // No end was seen: the reader closed the events early (stopped), or the server is going down.
    outcome ??= signal.aborted ? stopOutcome(signal) : 'interrupted';
    turn.unwatch();
    await end(outcome);
    log.info('turn.end', { conversationId, agent: resolved.agent.id, outcome: typeof outcome === 'string' ? outcome : outcome.status, durationMs: Math.round(performance.now() - started) });
  }
}

import { AppError } from '../errors';
import { log } from '../log';
import type { StoredMessage, TurnLease } from '../conversations/types';
import { runToolCall, toolDefinitions } from '../tools';
import type { ToolCall } from '../llm/types';
import { runTurn, TurnBudget, type TurnEvent } from '../loop';
import { buildSystemPrompt, toModelMessages } from '../prompt';
import type { ResolvedAgent } from '../agents';
import { commandNote, isWorkflowCommand, resolveCommand, type CommandMatch, type CommandResolution } from '../agents';
import { sweepTempFiles } from '../outputs';
import { openAuditLog, type AuditLog } from '../audit';
import { newConversationId } from '../conversations/ids';
import { activate } from './activation';
import { clock, findAgent, newId, toolContext, type ChatDeps } from './context';
import { subagentHost } from './subagent';

export interface ChatRequest {
  agentId: string;
  /** Set to chat with an agent of a BMAD project. */
  projectId?: string;
  message: string;
  conversationId?: string;
}

export interface TurnHandle {
  conversationId: string;
  /** Id of the assistant message this turn answers with. */
  messageId: string;
  events: AsyncGenerator<TurnEvent>;
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

/**
 * Starts one turn: validates the request, takes the conversation's turn lock and returns the
 * turn's events. Everything is persisted as it happens; the lock is released when the events
 * end (or the consumer stops reading them).
 */
export async function startTurn(deps: ChatDeps, req: ChatRequest, signal: AbortSignal): Promise<TurnHandle> {
  const resolved = await findAgent(deps, req);
  if (!deps.config.llm.configured) {
    throw new AppError('E_LLM_NOT_CONFIGURED', 'No model is configured. Set OPENAI_API_KEY (for OpenAI) or OPENAI_BASE_URL (for a local OpenAI-compatible server such as Ollama, vLLM or LM Studio), and OPENAI_MODEL, then restart the server.');
  }

  let conversationId = req.conversationId;
  let isNew = false;
  let wasInterrupted = false;
  if (conversationId) {
    const existing = await deps.store.get(conversationId);
    if (!existing) throw new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${conversationId}".`);
    wasInterrupted = existing.status === 'interrupted';
    if ((existing.projectId ?? undefined) !== resolved.workspace.projectId) {
      const where = (id?: string) => (id ? `project "${id}"` : 'the bundles');
      throw new AppError('E_VALIDATION', `Conversation "${conversationId}" belongs to ${where(existing.projectId)}, not ${where(resolved.workspace.projectId)}.`, { field: 'projectId' });
    }
    if (existing.agentId !== resolved.agent.id) {
      throw new AppError('E_VALIDATION', `Conversation "${conversationId}" belongs to agent "${existing.agentId}", not "${resolved.agent.id}".`, { field: 'agentId' });
    }
  } else {
    conversationId = newConversationId();
    isNew = true;
  }

  const command = resolveCommand(resolved.agent, req.message);
  // One open audit file for the critical actions and every tool call of the turn.
  const audit = openAuditLog(deps.auditDir, conversationId);
  let lease: TurnLease | null;
  try {
    if (isNew) {
      // Before anything is stored: a missing critical file fails the request, not a half-made conversation.
      const activation = await activate(deps, resolved, conversationId, audit);
      // No title: the store names the conversation from its first message or its workflow.
      const projectId = resolved.workspace.projectId;
      await deps.store.create({ id: conversationId, agentId: resolved.agent.id, bundleName: resolved.workspace.name, ...(projectId ? { projectId } : {}) });
      await deps.store.setVariables(conversationId, activation.variables);
      if (activation.context) {
        await deps.store.append(conversationId, { id: newId('sys'), role: 'system', content: activation.context, timestamp: clock(deps)().toISOString() });
      }
    }
    lease = await deps.store.beginTurn(conversationId);
    if (!lease) throw new AppError('E_CONVERSATION_BUSY', `A turn is already running on conversation "${conversationId}". Wait for it to finish or stop it.`);
  } catch (e) {
    void audit.close();
    throw e;
  }
  if (wasInterrupted) {
    // Never throws: the lock is held and must reach the turn's own cleanup.
    const removed = await sweepTempFiles(resolved.workspace.outputRoot(conversationId)).catch(() => 0);
    if (removed) log.warn('outputs.swept', { conversationId, tempFiles: removed });
  }

  const messageId = newId('msg');
  const events = turnEvents(deps, { resolved, conversationId, message: req.message, command, signal, messageId, lease, audit });
  return { conversationId, messageId, events };
}

interface Turn {
  resolved: ResolvedAgent;
  conversationId: string;
  message: string;
  command: CommandResolution;
  signal: AbortSignal;
  messageId: string;
  lease: TurnLease;
  audit: AuditLog;
}

async function* turnEvents(deps: ChatDeps, turn: Turn): AsyncGenerator<TurnEvent> {
  const { resolved, conversationId, signal, audit } = turn;
  const store = deps.store;
  const now = clock(deps);
  const stamp = () => now().toISOString();
  let outcome: 'done' | 'interrupted' = 'interrupted';
  const started = performance.now();
  try {
    await store.append(conversationId, { id: newId('msg'), role: 'user', content: turn.message, timestamp: stamp() });
    // Several menu items fit what the user typed: the server guesses none and has the agent ask.
    // A prompt item the user picked: its prompt follows their message.
    const note = commandNote(turn.command);
    if (note) await store.append(conversationId, { id: newId('sys'), role: 'system', content: note, timestamp: stamp() });

    const conversation = await store.get(conversationId);
    const ctx = toolContext(deps, resolved, conversationId, conversation?.variables ?? {}, audit, signal);
    const definitions = toolDefinitions();
    const history = await store.messages(conversationId);
    const ws = resolved.workspace;
    const systemPrompt = buildSystemPrompt({
      agent: resolved.agent,
      bundleName: ws.name,
      toolNames: definitions.map((d) => d.function.name),
      // The activation's context is the conversation's first stored message when there is one.
      activated: history[0]?.role === 'system',
      ...(ws.writable ? { project: { writable: ws.writable } } : {}),
    });
    const messages = toModelMessages(systemPrompt, history);
    const shortcut = shortcutCall(turn.command);
    let stepStarted = performance.now();
    // Subagents draw on the turn's budget and run on its model; their activity joins its events.
    const budget = new TurnBudget(deps.config.maxIterations);
    const subagents = subagentHost({ deps, ctx, definitions, client: deps.llm(), model: deps.config.llm.model, budget, ...(ws.writable ? { project: { writable: ws.writable } } : {}) });

    for await (const event of subagents.merge(runTurn({
      client: deps.llm(),
      model: deps.config.llm.model,
      messages,
      tools: { definitions, execute: (call, sig) => runToolCall(call, { ...ctx, signal: sig, subagent: subagents.runner(call.id) }) },
      maxIterations: deps.config.maxIterations,
      budget,
      signal,
      timeoutMs: deps.config.turnTimeoutMs,
      ...(shortcut ? { serverCalls: [shortcut] } : {}),
    }))) {
      switch (event.type) {
        case 'step-start':
          stepStarted = performance.now();
          break;
        case 'assistant-message': {
          // A message without tool calls ends the turn, so it carries the turn's answer id.
          const msg: StoredMessage = {
            id: event.toolCalls.length ? newId('msg') : turn.messageId,
            role: 'assistant',
            content: event.content,
            ...(event.toolCalls.length ? { toolCalls: event.toolCalls } : {}),
            ...(event.byServer ? {} : { usage: event.usage }),
            timestamp: stamp(),
          };
          await store.append(conversationId, msg);
          if (event.byServer) break;
          await store.addUsage(conversationId, event.usage);
          log.info('model.call', {
            conversationId,
            agent: resolved.agent.id,
            model: deps.config.llm.model,
            durationMs: Math.round(performance.now() - stepStarted),
            toolCalls: event.toolCalls.length,
            promptTokens: event.usage.promptTokens,
            completionTokens: event.usage.completionTokens,
          });
          break;
        }
        case 'tool-result':
          await store.append(conversationId, { id: newId('tool'), role: 'tool', toolCallId: event.call.id, name: event.call.name, result: event.result, timestamp: stamp() });
          break;
        case 'finish':
          outcome = event.stopReason === 'aborted' ? 'interrupted' : 'done';
          break;
      }
      yield event;
    }
  } catch (e) {
    const error = e instanceof AppError ? e : new AppError('E_INTERNAL', 'The turn failed unexpectedly.');
    if (!(e instanceof AppError)) log.error('turn.crash', { conversationId, message: (e as Error)?.message?.slice(0, 200) });
    yield { type: 'error', error };
  } finally {
    // Every line is written by now (each call awaited its own); only the file is given back.
    void audit.close();
    await store.endTurn(turn.lease, outcome);
    log.info('turn.end', { conversationId, agent: resolved.agent.id, outcome, durationMs: Math.round(performance.now() - started) });
  }
}

import { AppError } from '../errors';
import { log } from '../log';
import type { StoredMessage, TurnLease } from '../conversations/types';
import { runToolCall, toolDefinitions } from '../tools';
import type { ToolCall } from '../llm/types';
import { runTurn, type TurnEvent } from '../loop';
import { checkMessageFits, contextGuard, loadTokenizer, tokenizerFor, type ContextBudget, type Tokenizer } from '../context';
import { costOf, type ModelPrice, type ModelProfile } from '../models';
import { buildSystemPrompt, toModelMessages } from '../prompt';
import type { ResolvedAgent } from '../agents';
import { describeAmbiguity, isWorkflowCommand, resolveCommand, type CommandMatch, type CommandResolution } from '../agents';
import { sweepTempFiles } from '../outputs';
import { openAuditLog, type AuditLog } from '../audit';
import { newConversationId } from '../conversations/ids';
import { activate } from './activation';
import { clock, findAgent, newId, toolContext, type ChatDeps } from './context';
import { chooseModel, unknownProfile } from './model-choice';

export interface ChatRequest {
  agentId: string;
  /** Set to chat with an agent of a BMAD project. */
  projectId?: string;
  message: string;
  conversationId?: string;
  /** A model profile by name; the conversation keeps it for its later turns. */
  model?: string;
}

export interface TurnHandle {
  conversationId: string;
  /** Id of the assistant message this turn answers with. */
  messageId: string;
  /** The profile the turn runs on, and the model name it sends. */
  profile: string;
  model: string;
  price?: ModelPrice;
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
  const setup = deps.config.models;
  if (req.model !== undefined && !setup.profiles.has(req.model)) throw unknownProfile(setup, req.model);

  let conversationId = req.conversationId;
  let isNew = false;
  let wasInterrupted = false;
  let remembered: string | undefined;
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
    remembered = existing.model;
  } else {
    conversationId = newConversationId();
    isNew = true;
  }

  const command = resolveCommand(resolved.agent, req.message);
  const known = conversationId;
  const { profile } = await chooseModel(setup, {
    requested: req.model,
    remembered,
    agent: resolved.agent,
    command,
    ...(isNew ? {} : { history: () => deps.store.messages(known) }),
  });
  const tokenizer = await loadTokenizer(tokenizerFor(profile.model, profile.tokenizer));
  const budget: ContextBudget = { profile: profile.name, contextWindow: profile.contextWindow, maxOutputTokens: profile.maxOutputTokens };
  // The least this turn's requests hold: refused now, before anything is stored.
  const tooLarge = checkMessageFits(tokenizer, budget, {
    systemPrompt: buildSystemPrompt({ agent: resolved.agent, bundleName: resolved.workspace.name, toolNames: [] }),
    message: req.message,
    tools: toolDefinitions(),
  });
  if (tooLarge) throw tooLarge;
  // One open audit file for the critical actions and every tool call of the turn.
  const audit = openAuditLog(deps.auditDir, conversationId);
  let lease: TurnLease | null;
  try {
    if (isNew) {
      // Before anything is stored: a missing critical file fails the request, not a half-made conversation.
      const activation = await activate(deps, resolved, conversationId, audit);
      // No title: the store names the conversation from its first message or its workflow.
      const projectId = resolved.workspace.projectId;
      await deps.store.create({
        id: conversationId,
        agentId: resolved.agent.id,
        bundleName: resolved.workspace.name,
        ...(projectId ? { projectId } : {}),
        ...(req.model !== undefined ? { model: req.model } : {}),
      });
      await deps.store.setVariables(conversationId, activation.variables);
      if (activation.context) {
        await deps.store.append(conversationId, { id: newId('sys'), role: 'system', content: activation.context, timestamp: clock(deps)().toISOString() });
      }
    }
    lease = await deps.store.beginTurn(conversationId);
    if (!lease) throw new AppError('E_CONVERSATION_BUSY', `A turn is already running on conversation "${conversationId}". Wait for it to finish or stop it.`);
    if (!isNew && req.model !== undefined && req.model !== remembered) await deps.store.setModel(conversationId, req.model);
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
  const events = turnEvents(deps, { resolved, conversationId, message: req.message, command, signal, messageId, lease, audit, profile, tokenizer, budget });
  return { conversationId, messageId, profile: profile.name, model: profile.model, ...(profile.price ? { price: profile.price } : {}), events };
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
  profile: ModelProfile;
  tokenizer: Tokenizer;
  budget: ContextBudget;
}

async function* turnEvents(deps: ChatDeps, turn: Turn): AsyncGenerator<TurnEvent> {
  const { resolved, conversationId, signal, audit, profile } = turn;
  const store = deps.store;
  const now = clock(deps);
  const stamp = () => now().toISOString();
  let outcome: 'done' | 'interrupted' = 'interrupted';
  const started = performance.now();
  try {
    await store.append(conversationId, { id: newId('msg'), role: 'user', content: turn.message, timestamp: stamp() });
    // Several menu items fit what the user typed: the server guesses none and has the agent ask.
    if (turn.command.kind === 'ambiguous') {
      await store.append(conversationId, { id: newId('sys'), role: 'system', content: describeAmbiguity(turn.command), timestamp: stamp() });
    }

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
    let requestTokens = 0;
    const prepare = contextGuard({
      budget: turn.budget,
      tokenizer: turn.tokenizer,
      tools: definitions,
      render: (stored) => toModelMessages(systemPrompt, stored),
      load: () => store.messages(conversationId),
      save: (marks) => store.compact(conversationId, marks),
      onCount: (n) => (requestTokens = n),
    });

    for await (const event of runTurn({
      client: deps.llm(profile.name),
      model: profile.model,
      // Errors name a profile of the models file; the environment's one profile is no name to look for.
      ...(deps.config.models.file ? { profile: profile.name } : {}),
      ...(profile.parallelToolCalls !== undefined ? { parallelToolCalls: profile.parallelToolCalls } : {}),
      messages,
      tools: { definitions, execute: (call, sig) => runToolCall(call, { ...ctx, signal: sig }) },
      maxIterations: deps.config.maxIterations,
      signal,
      timeoutMs: deps.config.turnTimeoutMs,
      prepare,
      ...(shortcut ? { serverCalls: [shortcut] } : {}),
    })) {
      switch (event.type) {
        case 'step-start':
          stepStarted = performance.now();
          break;
        case 'assistant-message': {
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
          await store.append(conversationId, msg);
          if (event.byServer) break;
          await store.addUsage(conversationId, event.usage, cost);
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

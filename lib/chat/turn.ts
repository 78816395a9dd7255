import { AppError, isAppError } from '../errors';
import { log } from '../log';
import type { Conversation, MessageAuthor, StoredMessage, TurnBatch, TurnLease, TurnOutcome } from '../conversations/types';
import { runToolCall, toolDefinitions } from '../tools';
import type { ToolCall } from '../llm/types';
import { runTurn, TurnBudget, type TurnEvent } from '../loop';
import { checkMessageFitsAsync, contextGuard, loadTokenizer, tokenizerFor, type ContextBudget, type Tokenizer } from '../context';
import { costOf, type ModelPrice, type ModelProfile } from '../models';
import { buildSystemPrompt, toModelMessages } from '../prompt';
import type { ResolvedAgent } from '../agents';
import { commandNote, isWorkflowCommand, resolveCommand, type CommandMatch, type CommandResolution } from '../agents';
import { sweepTempFiles } from '../outputs';
import { openAuditLog, type AuditLog } from '../audit';
import { newConversationId } from '../conversations/ids';
import { activate } from './activation';
import { SERVER_SHUTDOWN } from './shutdown-reason';
import { clock, findAgent, newId, toolContext, turnTools, type ChatDeps } from './context';
import { subagentHost } from './subagent';
import { chooseModel, unknownProfile } from './model-choice';
import { inCheckout, type TurnWorkspace } from './in-workspace';

export interface ChatRequest {
  agentId: string;
  /** Set to chat with an agent of a BMAD project. */
  projectId?: string;
  /** The user's new message; not read when `regenerate` is set. */
  message?: string;
  conversationId?: string;
  /**
   * Answer the conversation's last user message again: everything stored after it (a failed or
   * stopped turn's partial answer and tool calls, or the answer being replaced) is dropped first.
   * Retry and Regenerate alike; the user message is never stored twice.
   */
  regenerate?: boolean;
  /** Replace this user message: it and everything after it are dropped, `message` is the new turn. */
  editMessageId?: string;
  /** A model profile by name; the conversation keeps it for its later turns. */
  model?: string;
  /** Who starts a new conversation (with accounts); it is theirs. */
  ownerId?: string;
  /** Who the turn is for, as versions name them (`authorOf`). */
  author?: string;
  /** Who writes the user message (with accounts); stored on it. A regenerate keeps the stored one's. */
  messageAuthor?: MessageAuthor;
  /** Run in this workspace of the project: `{project-root}` is its checkout (see inCheckout). */
  workspace?: TurnWorkspace;
}

export interface TurnHandle {
  conversationId: string;
  /** Id of the assistant message this turn answers with. */
  messageId: string;
  /** Id of the stored user message this turn answers (the existing one for a regenerate). */
  userMessageId: string;
  /** The profile the turn runs on, and the model name it sends. */
  profile: string;
  model: string;
  price?: ModelPrice;
  events: AsyncGenerator<TurnEvent>;
  /**
   * For a streamed turn: how many characters of answer text (all steps together) the reader has
   * been sent. A turn the user stops stores its answer only up to there, so the history never
   * holds words the screen did not show. Unreported (a JSON turn), the whole partial answer is kept.
   */
  reportTextSent(chars: number): void;
}

function stopOutcome(signal: AbortSignal): 'stopped' | 'interrupted' {
  return signal.reason === SERVER_SHUTDOWN ? 'interrupted' : 'stopped';
}

/** The outcome that leaves a conversation as it was: for a turn refused after its lock was taken. */
function unchanged(c: Conversation): TurnOutcome {
  if (c.status === 'stopped' || c.status === 'interrupted') return c.status;
  if (c.status === 'failed') return { status: 'failed', error: c.lastTurn?.error ?? { code: 'E_INTERNAL', message: 'The turn failed.' } };
  return 'done';
}

function lastUserIndex(history: readonly StoredMessage[]): number {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]!.role === 'user') return i;
  return -1;
}

const nothingToRegenerate = (id: string) =>
  new AppError('E_VALIDATION', `Conversation "${id}" has no user message to answer again.`, { field: 'regenerate' });

const notAUserMessage = (conversationId: string, messageId: string) =>
  new AppError('E_VALIDATION', `"${messageId.slice(0, 80)}" is not a user message of conversation "${conversationId}".`, { field: 'editMessageId' });

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
  const found = await findAgent(deps, req);
  const resolved = req.workspace && found.workspace.projectId ? inCheckout(found, req.workspace) : found;
  const setup = deps.config.models;
  if (req.model !== undefined && !setup.profiles.has(req.model)) throw unknownProfile(setup, req.model);

  const rewrite = req.regenerate ? 'regenerate' : req.editMessageId !== undefined ? 'edit' : null;
  if (rewrite && !req.conversationId) {
    throw new AppError('E_VALIDATION', `${rewrite === 'edit' ? 'editMessageId' : 'regenerate'} needs the conversationId of the conversation to change.`, { field: 'conversationId' });
  }
  if (!req.regenerate && (typeof req.message !== 'string' || !req.message.trim())) {
    throw new AppError('E_VALIDATION', 'message must not be empty.', { field: 'message' });
  }

  let conversationId = req.conversationId;
  let isNew = false;
  let wasInterrupted = false;
  let existing: Conversation | null = null;
  let remembered: string | undefined;
  if (conversationId) {
    existing = await deps.store.get(conversationId);
    if (!existing) throw new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${conversationId}".`);
    wasInterrupted = existing.status === 'interrupted';
    if ((existing.projectId ?? undefined) !== resolved.workspace.projectId) {
      const where = (id?: string) => (id ? `project "${id}"` : 'the bundles');
      throw new AppError('E_VALIDATION', `Conversation "${conversationId}" belongs to ${where(existing.projectId)}, not ${where(resolved.workspace.projectId)}.`, { field: 'projectId' });
    }
    if (existing.agentId !== resolved.agent.id) {
      throw new AppError('E_VALIDATION', `Conversation "${conversationId}" belongs to agent "${existing.agentId}", not "${resolved.agent.id}".`, { field: 'agentId' });
    }
    if ((existing.workspaceId ?? undefined) !== (req.workspace?.id ?? undefined)) {
      const where = (id?: string) => (id ? `workspace "${id}"` : 'the project folder');
      throw new AppError('E_VALIDATION', `Conversation "${conversationId}" runs in ${where(existing.workspaceId)}, not ${where(req.workspace?.id)}.`, { field: 'workspaceId' });
    }
    remembered = existing.model;
  } else {
    conversationId = newConversationId();
    isNew = true;
  }

  // Checked before the lock, so a refused request leaves the conversation's status alone; checked
  // again under the lock below, since another turn may change the history in between.
  let planned = req.message ?? '';
  if (rewrite && existing) {
    const history = await deps.store.messages(conversationId);
    const at = lastUserIndex(history);
    if (rewrite === 'regenerate' && at < 0) throw nothingToRegenerate(conversationId);
    if (rewrite === 'edit' && !history.some((m) => m.id === req.editMessageId && m.role === 'user')) throw notAUserMessage(conversationId, req.editMessageId!);
    if (rewrite === 'regenerate') planned = (history[at] as Extract<StoredMessage, { role: 'user' }>).content;
  }

  const known = conversationId;
  let command = resolveCommand(resolved.agent, planned);
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
  const tooLarge = await checkMessageFitsAsync(tokenizer, budget, {
    systemPrompt: buildSystemPrompt({ agent: resolved.agent, bundleName: resolved.workspace.name, toolNames: [] }),
    message: planned,
    tools: toolDefinitions(),
  });
  if (tooLarge) throw tooLarge;

  // One open audit file for the critical actions and every tool call of the turn.
  const audit = openAuditLog(deps.auditDir, conversationId, req.author);
  let lease: TurnLease | null;
  let text = req.message ?? '';
  let userMessageId = newId('msg');
  let appendUser = true;
  let noteStored = false;
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
        ...(req.ownerId !== undefined ? { ownerId: req.ownerId } : {}),
        ...(req.workspace ? { workspaceId: req.workspace.id } : {}),
      });
      await deps.store.setVariables(conversationId, activation.variables);
      if (activation.context) {
        await deps.store.append(conversationId, { id: newId('sys'), role: 'system', content: activation.context, timestamp: clock(deps)().toISOString() });
      }
    }
    // A plain turn's user message (and the note about the command it picked) goes in with the
    // lock: one commit. A rewrite changes the history under the lock first, so it stores it later.
    const first: StoredMessage[] = [];
    if (!rewrite) {
      const stamp = clock(deps)().toISOString();
      first.push({ id: userMessageId, role: 'user', content: text, timestamp: stamp, ...(req.messageAuthor ? { author: req.messageAuthor } : {}) });
      const note = commandNote(command);
      if (note) first.push({ id: newId('sys'), role: 'system', content: note, timestamp: stamp });
    }
    lease = await deps.store.beginTurn(conversationId, first);
    if (lease && first.length) {
      appendUser = false;
      noteStored = true;
    }
    if (!lease) throw new AppError('E_CONVERSATION_BUSY', `A turn is already running on conversation "${conversationId}". Wait for it to finish or stop it.`);
    if (rewrite && existing) {
      const held = lease;
      try {
        const history = await deps.store.messages(conversationId);
        if (rewrite === 'regenerate') {
          const at = lastUserIndex(history);
          if (at < 0) throw nothingToRegenerate(conversationId);
          const user = history[at] as Extract<StoredMessage, { role: 'user' }>;
          text = user.content;
          userMessageId = user.id;
          appendUser = false;
          const next = history[at + 1];
          if (next) await deps.store.truncateFrom(conversationId, next.id);
        } else {
          if (!history.some((m) => m.id === req.editMessageId && m.role === 'user')) throw notAUserMessage(conversationId, req.editMessageId!);
          await deps.store.truncateFrom(conversationId, req.editMessageId!);
        }
      } catch (e) {
        await deps.store.endTurn(held, unchanged(existing));
        throw e;
      }
    }
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

  // Another turn may have changed the message being answered again while this one waited for the lock.
  if (text !== planned) command = resolveCommand(resolved.agent, text);
  const messageId = newId('msg');
  const sent: Turn['sent'] = { chars: null };
  const remote = watchRemoteStop(deps, lease, signal);
  const events = turnEvents(deps, { resolved, conversationId, message: text, userMessageId, appendUser, noteStored, command, signal: remote.signal, unwatch: remote.end, messageId, lease, audit, sent, profile, tokenizer, budget, ...(req.author ? { author: req.author } : {}), ...(req.messageAuthor ? { messageAuthor: req.messageAuthor } : {}), ...(req.workspace && resolved.workspace.inCheckout ? { place: req.workspace } : {}) });
  return {
    conversationId,
    messageId,
    userMessageId,
    profile: profile.name,
    model: profile.model,
    ...(profile.price ? { price: profile.price } : {}),
    events,
    reportTextSent: (chars) => {
      sent.chars = chars;
    },
  };
}

/** The abort reason of a Stop asked for through the store (stored as stopped, like the client's own). */
const REMOTE_STOP: Error = Object.assign(new Error('Stopped through POST /api/conversations/:id/stop.'), { name: 'AbortError' });

/**
 * The turn's signal: the request's, or a Stop asked for through the store (POST
 * /api/conversations/:id/stop on any instance), which stops the turn as the client's own Stop
 * does. A lease lost to another instance (this one stalled past its expiry) ends it as interrupted.
 */
function watchRemoteStop(deps: ChatDeps, lease: TurnLease, signal: AbortSignal): { signal: AbortSignal; end: () => void } {
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  if (signal.aborted) forward();
  else signal.addEventListener('abort', forward, { once: true });
  const unwatch = deps.store.watchTurn(lease, (why) => controller.abort(why === 'lost' ? SERVER_SHUTDOWN : REMOTE_STOP));
  return {
    signal: controller.signal,
    end: () => {
      unwatch();
      signal.removeEventListener('abort', forward);
    },
  };
}

interface Turn {
  resolved: ResolvedAgent;
  conversationId: string;
  message: string;
  userMessageId: string;
  /** False for a regenerate, or when the lock was taken with it: the user message is stored already. */
  appendUser: boolean;
  /** The command's note went in with the lock. */
  noteStored: boolean;
  command: CommandResolution;
  signal: AbortSignal;
  /** Ends the watch for a Stop asked for through the store. */
  unwatch: () => void;
  messageId: string;
  lease: TurnLease;
  audit: AuditLog;
  /** Answer text the reader was sent (see TurnHandle.reportTextSent); null when nobody counts. */
  sent: { chars: number | null };
  profile: ModelProfile;
  tokenizer: Tokenizer;
  budget: ContextBudget;
  author?: string;
  messageAuthor?: MessageAuthor;
  /** The workspace the turn runs in. */
  place?: TurnWorkspace;
}

async function* turnEvents(deps: ChatDeps, turn: Turn): AsyncGenerator<TurnEvent> {
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
    // ended finds its work on the branch.
    if (turn.place) await turn.place.end().catch((e: unknown) => log.warn('workspace.turn_end_failed', { conversationId, error: e instanceof Error ? e.name : 'unknown' }));
    await store.commit(conversationId, { ...(final ?? {}), end: { lease: turn.lease, outcome: how } });
  };
  try {
    if (turn.appendUser) {
      await store.append(conversationId, { id: turn.userMessageId, role: 'user', content: turn.message, timestamp: stamp(), ...(turn.messageAuthor ? { author: turn.messageAuthor } : {}) });
    }
    // Several menu items fit what the user typed: the server guesses none and has the agent ask.
    // A prompt item the user picked: its prompt follows their message.
    const note = turn.noteStored ? null : commandNote(turn.command);
    if (note) await store.append(conversationId, { id: newId('sys'), role: 'system', content: note, timestamp: stamp() });

    const conversation = await store.get(conversationId);
    const { definitions, dynamicTools } = await turnTools(deps, resolved, turn.place);
    const ctx = { ...toolContext(deps, resolved, conversationId, conversation?.variables ?? {}, audit, signal, turn.author, turn.place), ...(dynamicTools ? { dynamicTools } : {}) };
    const history = await store.messages(conversationId);
    const ws = resolved.workspace;
    const systemPrompt = buildSystemPrompt({
      agent: resolved.agent,
      bundleName: ws.name,
      toolNames: definitions.map((d) => d.function.name),
      // The activation's context is the conversation's first stored message when there is one.
      activated: history[0]?.role === 'system',
      ...(ws.writable ? { project: { writable: ws.writable, ...(ws.inCheckout ? { everywhere: true } : {}) } } : {}),
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

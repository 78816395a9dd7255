import { AppError } from '../../core/errors';
import { log } from '../../core/log';
import type { Conversation, MessageAuthor, StoredMessage, TurnLease, TurnOutcome } from '../../store/conversations/types';
import { checkMessageFitsAsync, loadTokenizer, tokenizerFor, type ContextBudget, type Tokenizer } from '../context';
import type { ModelProfile } from '../../core/models';
import { buildSystemPrompt } from '../prompt';
import { commandNote, resolveCommand, type CommandResolution, type ResolvedAgent } from '../../content/agents';
import { sweepTempFiles } from '../../content/outputs';
import { openAuditLog, type AuditLog } from '../../store/audit';
import { newConversationId } from '../../store/conversations/ids';
import { activate } from './activation';
import { findAgent } from './agent-lookup';
import { clock } from './clock';
import type { ChatDeps } from './deps';
import { newId } from './ids';
import { chooseModel, unknownProfile } from './model-choice';
import { inCheckout, type TurnWorkspace } from './in-workspace';
import { turnTools, type TurnTools } from './turn-tools';

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
  /**
   * A new conversation only: what was said before this message elsewhere (a client that keeps the
   * chat itself and sends it whole), stored ahead of the message so the agent reads it as history.
   */
  earlier?: { role: 'user' | 'assistant'; content: string }[];
}

/**
 * A turn whose request was accepted: its conversation locked, its user message stored, and what
 * every model call of it starts from, each made once (the history read, the prompt built).
 */
export interface OpenedTurn {
  resolved: ResolvedAgent;
  conversationId: string;
  /** The stored user message this turn answers (the existing one for a regenerate). */
  userMessageId: string;
  command: CommandResolution;
  lease: TurnLease;
  /** One open audit file for the critical actions and every tool call of the turn. */
  audit: AuditLog;
  profile: ModelProfile;
  tokenizer: Tokenizer;
  budget: ContextBudget;
  /** The conversation's stored history as this turn's first model call sees it, user message included. */
  history: StoredMessage[];
  systemPrompt: string;
  tools: TurnTools;
  /** The conversation's variables (set once, when it started). */
  variables: Record<string, string>;
  author?: string;
  /** The workspace the turn runs in. */
  place?: TurnWorkspace;
}

type Rewrite = 'regenerate' | 'edit' | null;

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

const busy = (id: string) =>
  new AppError('E_CONVERSATION_BUSY', `A turn is already running on conversation "${id}". Wait for it to finish or stop it.`);

/**
 * Opens one turn: validates the request, takes the conversation's turn lock, applies a regenerate
 * or an edit, and stores the user message. A request refused after the lock was taken gives the
 * lock back and leaves the conversation as it was.
 */
export async function openTurn(deps: ChatDeps, req: ChatRequest): Promise<OpenedTurn> {
  const found = await findAgent(deps, req);
  const resolved = req.workspace && found.workspace.projectId ? inCheckout(found, req.workspace) : found;
  if (req.model !== undefined && !deps.config.models.profiles.has(req.model)) throw unknownProfile(deps.config.models, req.model);

  const rewrite: Rewrite = req.regenerate ? 'regenerate' : req.editMessageId !== undefined ? 'edit' : null;
  if (rewrite && !req.conversationId) {
    throw new AppError('E_VALIDATION', `${rewrite === 'edit' ? 'editMessageId' : 'regenerate'} needs the conversationId of the conversation to change.`, { field: 'conversationId' });
  }
  if (!req.regenerate && (typeof req.message !== 'string' || !req.message.trim())) {
    throw new AppError('E_VALIDATION', 'message must not be empty.', { field: 'message' });
  }
  const place = req.workspace && resolved.workspace.inCheckout ? req.workspace : undefined;
  return req.conversationId ? openExisting(deps, req, resolved, place, req.conversationId, rewrite) : openNew(deps, req, resolved, place);
}

/** The profile the turn runs on and what counts its requests. */
async function chooseProfile(deps: ChatDeps, req: ChatRequest, resolved: ResolvedAgent, command: CommandResolution, conversation: { remembered?: string; history?: readonly StoredMessage[] }) {
  const { profile } = await chooseModel(deps.config.models, {
    requested: req.model,
    remembered: conversation.remembered,
    agent: resolved.agent,
    command,
    ...(conversation.history ? { history: conversation.history } : {}),
  });
  const tokenizer = await loadTokenizer(tokenizerFor(profile.model, profile.tokenizer));
  const budget: ContextBudget = { profile: profile.name, contextWindow: profile.contextWindow, maxOutputTokens: profile.maxOutputTokens };
  return { profile, tokenizer, budget };
}

/**
 * The turn's tools and its system prompt, built once: the prompt depends on the agent, its tools
 * and whether the conversation starts with an activation's context, never on the history after it.
 * A message that cannot fit beside them alone is refused before it is stored.
 */
async function frameTurn(deps: ChatDeps, resolved: ResolvedAgent, place: TurnWorkspace | undefined, chosen: { tokenizer: Tokenizer; budget: ContextBudget }, message: string, activated: boolean) {
  const tools = await turnTools(deps, resolved, place);
  const ws = resolved.workspace;
  const systemPrompt = buildSystemPrompt({
    agent: resolved.agent,
    bundleName: ws.name,
    toolNames: tools.definitions.map((d) => d.function.name),
    activated,
    ...(ws.writable ? { project: { writable: ws.writable, ...(ws.inCheckout ? { everywhere: true } : {}) } } : {}),
  });
  const tooLarge = await checkMessageFitsAsync(chosen.tokenizer, chosen.budget, { systemPrompt, message, tools: tools.definitions });
  if (tooLarge) throw tooLarge;
  return { tools, systemPrompt };
}

/** The user's message, and the note about the command it picked: several menu items fit (the agent asks), or a prompt item's prompt. */
function userMessages(req: ChatRequest, deps: ChatDeps, id: string, text: string, command: CommandResolution, withUser: boolean): StoredMessage[] {
  const stamp = clock(deps)().toISOString();
  const out: StoredMessage[] = [];
  if (withUser) out.push({ id, role: 'user', content: text, timestamp: stamp, ...(req.messageAuthor ? { author: req.messageAuthor } : {}) });
  const note = commandNote(command);
  if (note) out.push({ id: newId('sys'), role: 'system', content: note, timestamp: stamp });
  return out;
}

/** The earlier exchange a new conversation starts from: its user messages written by the turn's author. */
function earlierMessages(req: ChatRequest, deps: ChatDeps): StoredMessage[] {
  const stamp = clock(deps)().toISOString();
  return (req.earlier ?? []).map((m): StoredMessage =>
    m.role === 'user'
      ? { id: newId('msg'), role: 'user', content: m.content, timestamp: stamp, ...(req.messageAuthor ? { author: req.messageAuthor } : {}) }
      : { id: newId('msg'), role: 'assistant', content: m.content, timestamp: stamp },
  );
}

async function openNew(deps: ChatDeps, req: ChatRequest, resolved: ResolvedAgent, place: TurnWorkspace | undefined): Promise<OpenedTurn> {
  const conversationId = newConversationId();
  const text = req.message ?? '';
  const command = resolveCommand(resolved.agent, text);
  const chosen = await chooseProfile(deps, req, resolved, command, {});
  const audit = openAuditLog(deps.auditDir, conversationId, req.author);
  try {
    // Before anything is stored: a missing critical file fails the request, not a half-made conversation.
    const activation = await activate(deps, resolved, conversationId, audit);
    const framed = await frameTurn(deps, resolved, place, chosen, text, !!activation.context);
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
    // The user message (and its command's note) goes in with the lock: one commit.
    const userMessageId = newId('msg');
    const lease = await deps.store.beginTurn(conversationId, [...earlierMessages(req, deps), ...userMessages(req, deps, userMessageId, text, command, true)]);
    if (!lease) throw busy(conversationId);
    const history = await deps.store.messages(conversationId);
    return { resolved, conversationId, userMessageId, command, lease, audit, ...chosen, ...framed, history, variables: activation.variables, ...(req.author ? { author: req.author } : {}), ...(place ? { place } : {}) };
  } catch (e) {
    void audit.close();
    throw e;
  }
}

async function openExisting(deps: ChatDeps, req: ChatRequest, resolved: ResolvedAgent, place: TurnWorkspace | undefined, conversationId: string, rewrite: Rewrite): Promise<OpenedTurn> {
  const existing = await deps.store.get(conversationId);
  if (!existing) throw new AppError('E_CONVERSATION_NOT_FOUND', `No conversation with id "${conversationId}".`);
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

  // The lock comes before the history is read: read under it, the history is the one this turn
  // changes and answers, and nothing needs reading twice.
  const lease = await deps.store.beginTurn(conversationId);
  if (!lease) throw busy(conversationId);
  const audit = openAuditLog(deps.auditDir, conversationId, req.author);
  let opened: OpenedTurn;
  try {
    const stored = await deps.store.messages(conversationId);
    let text = req.message ?? '';
    let userMessageId = newId('msg');
    // What stays of the history, and the first message a rewrite drops.
    let keep = stored.length;
    if (rewrite === 'regenerate') {
      const at = lastUserIndex(stored);
      if (at < 0) throw nothingToRegenerate(conversationId);
      const user = stored[at] as Extract<StoredMessage, { role: 'user' }>;
      text = user.content;
      userMessageId = user.id;
      keep = at + 1;
    } else if (rewrite === 'edit') {
      keep = stored.findIndex((m) => m.id === req.editMessageId && m.role === 'user');
      if (keep < 0) throw notAUserMessage(conversationId, req.editMessageId!);
    }
    const command = resolveCommand(resolved.agent, text);
    const chosen = await chooseProfile(deps, req, resolved, command, { remembered: existing.model, history: stored });
    // The activation's context is the conversation's first stored message when there is one.
    const framed = await frameTurn(deps, resolved, place, chosen, text, stored[0]?.role === 'system');

    // Accepted: from here on the conversation changes.
    const dropped = stored[keep];
    if (dropped) await deps.store.truncateFrom(conversationId, dropped.id);
    if (req.model !== undefined && req.model !== existing.model) await deps.store.setModel(conversationId, req.model);
    const added = userMessages(req, deps, userMessageId, text, command, rewrite !== 'regenerate');
    if (added.length) await deps.store.commit(conversationId, { messages: added });
    const history = [...stored.slice(0, keep), ...added];
    opened = { resolved, conversationId, userMessageId, command, lease, audit, ...chosen, ...framed, history, variables: existing.variables, ...(req.author ? { author: req.author } : {}), ...(place ? { place } : {}) };
  } catch (e) {
    void audit.close();
    await deps.store.endTurn(lease, unchanged(existing));
    throw e;
  }
  if (existing.status === 'interrupted') {
    // Never throws: the lock is held and must reach the turn's own cleanup.
    const removed = await sweepTempFiles(resolved.workspace.outputRoot(conversationId)).catch(() => 0);
    if (removed) log.warn('outputs.swept', { conversationId, tempFiles: removed });
  }
  return opened;
}

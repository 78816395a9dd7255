import type { ChatCompletion } from 'openai/resources/chat/completions';
import { roleAllows, type Caller } from '../core/access';
import { AppError } from '../core/errors';
import { log } from '../core/log';
import type { AgentListing } from '../content/agents';
import type { TurnEvent } from '../engine/chat';
import { getRuntime } from '../engine/runtime';
import { sseBody, type SseEncoder } from '../model/stream/sse-body';
import { visibleProjects } from './access';
import { openChatTurn, type TurnInput } from './turns';
import { chunkView, completionView, finishReasonOf, modelListView, modelView, openAIErrorView, usageChunkView, type AgentModel, type CompletionMeta, type ModelView } from './presenters/openai';
import { AnswerText } from './openai/answer';
import { chatScope, dialogueOf, HistoryDigest, withoutDetails, type ChatKeys, type ChatScope, type ClientMessage, type Line } from './openai/dialogue';

export { openAIErrorView, type OpenAIErrorView } from './presenters/openai';
export type { ChatKeys, ClientMessage } from './openai/dialogue';

/**
 * The OpenAI-compatible endpoint's use cases (GET /v1/models, POST /v1/chat/completions): BMAD
 * agents served as models to OpenAI clients (Open WebUI, LibreChat, the SDKs). docs/openai-api.md
 * is the reference.
 */

/**
 * A request body of POST /v1/chat/completions may be this large: a client sends the whole chat
 * every time, so it grows with the conversation (our own API takes 256 KB).
 */
export const OPENAI_MAX_BODY_BYTES = 2 * 1024 * 1024;

/** GET /v1/models: every agent the caller may chat with, as a model. */
export async function listOpenAIModels(caller: Caller) {
  return modelListView(await agentModels(caller));
}

/** GET /v1/models/{model}: one of them (a profile suffix names the same agent). */
export async function openAIModel(caller: Caller, model: string): Promise<ModelView> {
  return modelView((await resolveModel(caller, model)).target);
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

const modelNotFound = (model: string, why = 'GET /v1/models lists the models you may use.') =>
  new AppError('E_MODEL_NOT_FOUND', `The model "${String(model).slice(0, 200)}" does not exist or you do not have access to it. ${why}`, { field: 'model' });

/**
 * Agents served as models. A model is an agent the caller may chat with: `<project>/<agent>` for
 * the agents of every project they may write in (chatting writes), `<bundle>/<agent>` for the
 * server's bundle agents (not for a token limited to projects, which chats in its projects only).
 * A bundle model whose id a project model has too is left out: the project's agent answers it.
 * `@<profile>` after the id picks a model profile (`acme/bmad-agent-pm@fast`).
 */
async function agentModels(caller: Caller): Promise<AgentModel[]> {
  const rt = getRuntime();
  const projects = (await visibleProjects(caller)).filter((p) => roleAllows(p.role, 'write'));
  const lists = await Promise.all(projects.map((p) => rt.projects.agents(p.project)));
  const out: AgentModel[] = [];
  const taken = new Set<string>();
  projects.forEach(({ project }, i) => {
    for (const agent of lists[i]!) {
      const id = `${project.id}/${agent.id}`;
      taken.add(id.toLowerCase());
      out.push({ id, projectId: project.id, home: project.id, agent });
    }
  });
  if (!caller.projectIds) {
    for (const agent of await rt.catalog.listAgents()) {
      const id = `${agent.bundleName}/${agent.id}`;
      if (!taken.has(id.toLowerCase())) out.push({ id, home: agent.bundleName, agent });
    }
  }
  return out;
}

/** The model a request names, and the profile its suffix picks; E_MODEL_NOT_FOUND for what the caller may not use. */
async function resolveModel(caller: Caller, model: string): Promise<{ target: AgentModel; profile?: string }> {
  const rt = getRuntime();
  // Agent ids and profile names hold neither "/" nor "@"; a bundle's name may.
  const slash = model.lastIndexOf('/');
  const home = model.slice(0, Math.max(slash, 0));
  let agentId = model.slice(slash + 1);
  let profile: string | undefined;
  const at = agentId.lastIndexOf('@');
  if (at >= 0) {
    profile = agentId.slice(at + 1);
    agentId = agentId.slice(0, at);
  }
  if (slash <= 0 || !agentId) throw modelNotFound(model, 'Models are named <project>/<agent> or <bundle>/<agent>; GET /v1/models lists them.');
  if (profile !== undefined && !rt.config.models.profiles.has(profile)) {
    throw modelNotFound(model, `There is no model profile "${profile.slice(0, 64)}" (GET /api/models lists them).`);
  }
  const found = (await projectAgent(caller, home, agentId)) ?? (await bundleAgent(caller, home, agentId));
  if (!found) throw modelNotFound(model);
  return { target: found, ...(profile !== undefined ? { profile } : {}) };
}

async function projectAgent(caller: Caller, projectId: string, agentId: string): Promise<AgentModel | null> {
  const rt = getRuntime();
  const project = await rt.projects.get(projectId);
  if (!project) return null;
  const role = await rt.access.projectRole(caller, project.id);
  if (!role || !roleAllows(role, 'write')) return null;
  const agent = (await rt.projects.agents(project)).find((a) => same(a.id, agentId));
  return agent ? { id: `${project.id}/${agent.id}`, projectId: project.id, home: project.id, agent } : null;
}

async function bundleAgent(caller: Caller, bundleName: string, agentId: string): Promise<AgentModel | null> {
  if (caller.projectIds) return null;
  const agent: AgentListing | undefined = (await getRuntime().catalog.listAgents()).find((a) => a.bundleName === bundleName && same(a.id, agentId));
  return agent ? { id: `${agent.bundleName}/${agent.id}`, home: agent.bundleName, agent } : null;
}

/**
 * One chat completion of an OpenAI client: the agent its model names answers the request's last
 * user message, in the conversation the client's chat has with it (found by the chat's key or its
 * history, see dialogue.ts), through the same turn as our own chat (openChatTurn).
 */
export interface CompletionInput {
  model: string;
  messages: ClientMessage[];
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage. */
  includeUsage?: boolean;
  keys?: ChatKeys;
  /** A model profile named by the `X-BMAD-Profile` header; a `@profile` suffix of the model wins. */
  profile?: string;
}

export type CompletionAnswer =
  | { kind: 'stream'; conversationId: string; body: ReadableStream<Uint8Array>; headers: Record<string, string> }
  | { kind: 'answer'; conversationId: string; completion: ChatCompletion };

export const OPENAI_STREAM_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** Where a request's turn goes: on in a conversation (from one of its user messages, for an edit), or a new one. */
interface Place {
  conversationId: string;
  /** The stored user message the client's history no longer has: the turn replaces it and what follows, as an edit does. */
  editMessageId?: string;
}

export async function chatCompletion(caller: Caller, input: CompletionInput, signal?: AbortSignal): Promise<CompletionAnswer> {
  const rt = getRuntime();
  const { target, profile: suffix } = await resolveModel(caller, input.model);
  const profile = suffix ?? input.profile;
  if (suffix === undefined && profile !== undefined && !rt.config.models.profiles.has(profile)) {
    throw new AppError('E_VALIDATION', `There is no model profile "${profile.slice(0, 64)}" (GET /api/models lists them).`, { field: 'X-BMAD-Profile' });
  }
  const { prior, ask } = dialogueOf(input.messages);
  const scope = chatScope(input.keys ?? {});
  const digest = HistoryDigest.of(target.id.toLowerCase());
  for (const line of prior) if (line.role === 'user' || !scope.usersOnly) digest.add(line.role, line.text);
  const place = prior.length ? await placeOf(caller, scope, digest.hex(), target) : null;

  const turnInput: TurnInput = {
    agentId: target.agent.id,
    ...(target.projectId ? { projectId: target.projectId } : {}),
    message: ask,
    ...(profile !== undefined ? { model: profile } : {}),
    ...(place ? { conversationId: place.conversationId, ...(place.editMessageId ? { editMessageId: place.editMessageId } : {}) } : { earlier: earlierOf(prior) }),
  };
  const { turn, abort, done } = await openChatTurn(caller, turnInput, signal);
  const mark = (history: string) =>
    rt.store.markClientChat({ owner: caller.id, chat: scope.chat, history, conversationId: turn.conversationId, messageId: turn.userMessageId }).catch((e: unknown) => {
      log.warn('openai.mark_failed', { conversationId: turn.conversationId, error: (e as Error)?.name ?? 'unknown' });
    });
  digest.add('user', ask);
  // Keyed by its user messages, the chat's next request finds this turn whatever the answer; by
  // the whole history, it needs the answer as the client got it, so only a turn that answered.
  if (scope.usersOnly) await mark(digest.hex());
  const events = scope.usersOnly ? turn.events : markedAtFinish(turn.events, (answer) => mark(digest.add('assistant', answer).hex()));

  const meta: CompletionMeta = { id: `chatcmpl-${turn.messageId}`, created: Math.floor(Date.now() / 1000), model: input.model };
  if (!input.stream) {
    return { kind: 'answer', conversationId: turn.conversationId, completion: await collect(events, meta).finally(done) };
  }
  const body = sseBody({
    messageId: turn.messageId,
    conversationId: turn.conversationId,
    events,
    encoder: chunkEncoder(meta, !!input.includeUsage),
    onTextWritten: turn.reportTextSent,
    onCancel: abort,
    ...(signal ? { readerGone: signal } : {}),
    onEnd: done,
  });
  return { kind: 'stream', conversationId: turn.conversationId, body, headers: { ...OPENAI_STREAM_HEADERS } };
}

/**
 * The conversation a mark names, when it is still the caller's conversation with this agent and
 * still holds the marked turn (an edit since may have cut it): the turn goes on after it, or, when
 * the conversation went further than the client's history, replaces the next user message.
 */
async function placeOf(caller: Caller, scope: ChatScope, history: string, target: AgentModel): Promise<Place | null> {
  const rt = getRuntime();
  const found = await rt.store.findClientChat(caller.id, scope.chat, history);
  if (!found) return null;
  const conversation = await rt.store.get(found.conversationId);
  if (!conversation || conversation.agentId !== target.agent.id || (conversation.projectId ?? undefined) !== target.projectId) return null;
  if (caller.kind !== 'local' && conversation.ownerId !== caller.id) return null;
  const messages = await rt.store.messages(conversation.id);
  const at = messages.findIndex((m) => m.id === found.messageId && m.role === 'user');
  if (at < 0) return null;
  let next: string | undefined;
  for (let i = at + 1; i < messages.length && !next; i++) if (messages[i]!.role === 'user') next = messages[i]!.id;
  return { conversationId: conversation.id, ...(next ? { editMessageId: next } : {}) };
}

/** A history no conversation of ours continues starts a new one that holds it (without the tool blocks we once sent in it). */
function earlierOf(prior: Line[]): { role: 'user' | 'assistant'; content: string }[] {
  return prior.flatMap((l) => {
    const content = withoutDetails(l.text).trim();
    return content ? [{ role: l.role, content }] : [];
  });
}

/** The events, with `onAnswer` called (and awaited) with the whole answer before a turn's normal end goes out. */
async function* markedAtFinish(events: AsyncIterable<TurnEvent>, onAnswer: (answer: string) => Promise<void>): AsyncGenerator<TurnEvent> {
  const answer = new AnswerText();
  for await (const event of events) {
    answer.push(event);
    if (event.type === 'finish' && event.stopReason !== 'aborted') await onAnswer(answer.content);
    yield event;
  }
}

/** Reads the turn to its end: one completion, or the error that ended it. */
async function collect(events: AsyncIterable<TurnEvent>, meta: CompletionMeta): Promise<ChatCompletion> {
  const answer = new AnswerText();
  let finish: Extract<TurnEvent, { type: 'finish' }> | undefined;
  let error: AppError | undefined;
  for await (const event of events) {
    answer.push(event);
    if (event.type === 'finish') finish = event;
    else if (event.type === 'error') error = event.error;
  }
  if (error || !finish) throw error ?? new AppError('E_INTERNAL', 'The turn ended without an answer.');
  return completionView(meta, answer.content, finish.stopReason, finish.usage);
}

const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

/** The turn's events as OpenAI's chunks: the role first, the answer's pieces, the finish, the usage when asked for, [DONE]. */
function chunkEncoder(meta: CompletionMeta, includeUsage: boolean): SseEncoder {
  const answer = new AnswerText();
  return {
    begin: () => [frame(chunkView(meta, { role: 'assistant', content: '' }, null, includeUsage))],
    encode(event) {
      if (event.type === 'text-delta' || event.type === 'tool-result') {
        const piece = answer.push(event);
        return { frames: piece ? [frame(chunkView(meta, { content: piece }, null, includeUsage))] : [], continues: event.type === 'text-delta' };
      }
      if (event.type === 'finish') {
        const frames = [frame(chunkView(meta, {}, finishReasonOf(event.stopReason), includeUsage))];
        if (includeUsage) frames.push(frame(usageChunkView(meta, event.usage)));
        return { frames, continues: false };
      }
      // OpenAI's way to fail a stream that has begun: an error object where a chunk would be.
      if (event.type === 'error') return { frames: [frame(openAIErrorView(event.error))], continues: false };
      return { frames: [], continues: false };
    },
    end: () => ['data: [DONE]\n\n'],
  };
}

import type { Caller } from '../core/access';
import { collectTurn, startTurn, workspaceTurn, type TurnHandle, type TurnWorkspace } from '../engine/chat';
import { isValidConversationId } from '../store/conversations';
import { AppError } from '../core/errors';
import type { Project } from '../content/projects';
import { getRuntime } from '../engine/runtime';
import { trackTurn } from '../engine/runtime/shutdown';
import { UI_STREAM_HEADERS } from '../model/stream';
import { sseBody } from '../model/stream/sse-body';
import type { Person, Workspace } from '../engine/workspaces';
import type { ChatResponseData } from '../../types/api';
import { committerOf, projectOf, turnAccess } from './access';
import { setupOf } from './setup';

/** A setup still `running` in the store that no process runs any more (its server went down) blocks nothing past this. */
const STALE_SETUP_MS = 60_000;

/** Refuses a workspace a turn cannot run in: merged, discarded, or still running its setup. */
function usable(ws: Workspace, timeoutMs: number): void {
  if (ws.status !== 'open') throw new AppError('E_CONFLICT', `Workspace "${ws.name}" is ${ws.status}; agents work only in open workspaces.`, { field: 'workspaceId' });
  if (ws.setup?.status !== 'running') return;
  const stale = !setupOf(ws.id) && Date.now() - Date.parse(ws.setup.at) > timeoutMs + STALE_SETUP_MS;
  if (!stale) throw new AppError('E_CONFLICT', `Workspace "${ws.name}" is still running its setup; try again when it is done (GET .../workspaces/${ws.id} shows it).`, { field: 'workspaceId' });
}

/** The turn's place in a workspace of `project`, for the person it is for. */
export async function placeIn(project: Project, ws: Workspace, person: Person): Promise<TurnWorkspace> {
  const rt = getRuntime();
  usable(ws, rt.config.commands.timeoutMs);
  const build = await rt.workspaces.getBuild(project.id);
  return workspaceTurn(rt, { id: project.id, root: project.root }, ws, build, person);
}

/**
 * Where a chat turn runs: the workspace named by `workspaceId`, or the one its conversation
 * remembers; none for the project folder. A workspace of a project the caller cannot write in,
 * of another project, or unknown is a 404 like the project's; build off is a 409.
 */
export async function turnWorkspace(caller: Caller, target: { projectId?: string; conversationId?: string; workspaceId?: string }): Promise<TurnWorkspace | undefined> {
  const rt = getRuntime();
  let projectId = target.projectId;
  let workspaceId = target.workspaceId;
  if (workspaceId === undefined && target.conversationId && isValidConversationId(target.conversationId)) {
    const conversation = await rt.store.get(target.conversationId);
    // Access to the conversation itself is decided by the turn's own check; only its place is read here.
    if (conversation?.workspaceId && conversation.projectId) {
      workspaceId = conversation.workspaceId;
      projectId = conversation.projectId;
    }
  }
  if (workspaceId === undefined) return undefined;
  if (!projectId) throw new AppError('E_VALIDATION', 'workspaceId needs the projectId of its project.', { field: 'projectId' });
  const project = await projectOf(caller, projectId, 'write');
  const ws = await rt.workspaces.find({ id: project.id, root: project.root }, workspaceId);
  return placeIn(project, ws, committerOf(caller));
}

/** What a caller asks one turn to do (the body of POST /api/chat; the MCP chat tool sends a part of it). */
export interface TurnInput {
  agentId: string;
  projectId?: string;
  conversationId?: string;
  /** Ignored with `regenerate`, which answers the stored message again. */
  message?: string;
  regenerate?: boolean;
  editMessageId?: string;
  model?: string;
  workspaceId?: string;
  /** A new conversation only: what a client said before this message elsewhere (see ChatRequest.earlier). */
  earlier?: { role: 'user' | 'assistant'; content: string }[];
}

export interface TurnOptions {
  /** Stream the turn's events (UI message stream SSE) instead of answering once it has ended. */
  stream: boolean;
  /** The caller going away: stops the turn, which stores its partial answer. */
  signal?: AbortSignal;
}

/** A turn whose events go out as they happen: the body to send and its headers. */
export interface StreamedTurn {
  kind: 'stream';
  conversationId: string;
  body: ReadableStream<Uint8Array>;
  headers: Record<string, string>;
}

/** A turn run to its end: its answer as POST /api/chat's JSON gives it. */
export interface AnsweredTurn {
  kind: 'answer';
  view: ChatResponseData;
}

/**
 * One turn for a caller, the one way every surface runs one (POST /api/chat, the MCP chat tool):
 * the access check, where it runs, the stop on `signal` and on shutdown, the turn itself, and its
 * answer collected or its events streamed. A turn that fails once started throws its error with
 * the conversation and user message it left (`details.response`).
 */
export async function chatTurn(caller: Caller, input: TurnInput, options: TurnOptions & { stream: true }): Promise<StreamedTurn>;
export async function chatTurn(caller: Caller, input: TurnInput, options: TurnOptions & { stream: false }): Promise<AnsweredTurn>;
export async function chatTurn(caller: Caller, input: TurnInput, options: TurnOptions): Promise<StreamedTurn | AnsweredTurn>;
export async function chatTurn(caller: Caller, input: TurnInput, options: TurnOptions): Promise<StreamedTurn | AnsweredTurn> {
  const { turn, abort, done } = await openChatTurn(caller, input, options.signal);
  if (!options.stream) return { kind: 'answer', view: await answerOf(turn, done) };
  const body = sseBody({
    messageId: turn.messageId,
    conversationId: turn.conversationId,
    userMessageId: turn.userMessageId,
    model: { profile: turn.profile, model: turn.model, ...(turn.price ? { price: turn.price } : {}) },
    events: turn.events,
    onTextWritten: turn.reportTextSent,
    onCancel: abort,
    // The caller gone is a cancel even where the server never cancels the body.
    ...(options.signal ? { readerGone: options.signal } : {}),
    onEnd: done,
  });
  return { kind: 'stream', conversationId: turn.conversationId, body, headers: { ...UI_STREAM_HEADERS } };
}

/** A started turn whose events its surface reads in a format of its own; `done` once they ended. */
export interface OpenedChatTurn {
  turn: TurnHandle;
  /** Stops the turn, as the caller going away does. */
  abort: () => void;
  /** Call once when the turn's events ended (however): the turn is no longer tracked. */
  done: () => void;
}

/**
 * A turn started for a caller, the part every surface shares (chatTurn, the OpenAI-compatible
 * endpoint): the access check, where it runs, the stop on `signal` and on shutdown, the turn itself.
 */
export async function openChatTurn(caller: Caller, input: TurnInput, signal?: AbortSignal): Promise<OpenedChatTurn> {
  const owner = await turnAccess(caller, input);
  const workspace = await turnWorkspace(caller, input);

  // One controller for the whole turn: the caller going away or the stream being cancelled stops it.
  const controller = new AbortController();
  const abort = () => controller.abort();
  signal?.addEventListener('abort', abort, { once: true });
  const untrack = trackTurn(controller);
  const done = () => {
    untrack();
    signal?.removeEventListener('abort', abort);
  };

  try {
    const turn = await startTurn(
      getRuntime(),
      {
        agentId: input.agentId,
        conversationId: input.conversationId,
        ...(input.regenerate ? { regenerate: true } : { message: input.message }),
        ...(input.editMessageId !== undefined ? { editMessageId: input.editMessageId } : {}),
        ...(input.projectId ? { projectId: input.projectId } : {}),
        ...(input.model ? { model: input.model } : {}),
        ...(input.earlier?.length && !input.conversationId ? { earlier: input.earlier } : {}),
        ...owner,
        ...(workspace ? { workspace } : {}),
      },
      controller.signal,
    );
    return { turn, abort, done };
  } catch (e) {
    done();
    throw e;
  }
}

/** Reads the turn to its end: its answer, or its error naming what it left in the store. */
async function answerOf(turn: TurnHandle, done: () => void): Promise<ChatResponseData> {
  const summary = await collectTurn(turn.events, { price: turn.price }).finally(done);
  if (summary.error) {
    throw new AppError(summary.error.code, summary.error.message, { response: { conversationId: turn.conversationId, userMessageId: turn.userMessageId } });
  }
  return {
    conversationId: turn.conversationId,
    userMessageId: turn.userMessageId,
    message: {
      id: turn.messageId,
      role: 'assistant',
      content: summary.content,
      timestamp: new Date().toISOString(),
      functionCalls: summary.functionCalls,
      profile: turn.profile,
      model: turn.model,
    },
    usage: summary.usage,
    iterations: summary.iterations,
    stopReason: summary.stopReason,
    ...(summary.compactions.length ? { compactions: summary.compactions } : {}),
  };
}

/** A turn's answer as a model calling the app reads it (the MCP chat tool): the text, the tools it called, how it ended. */
export function turnBrief(view: ChatResponseData) {
  return {
    conversationId: view.conversationId,
    answer: view.message.content,
    toolCalls: view.message.functionCalls.map((c) => ({ name: c.name, arguments: c.arguments, result: c.result })),
    stopReason: view.stopReason,
    usage: view.usage,
  };
}

'use client';

import { useCallback, useEffect, useReducer, useRef } from 'react';
import type { ChatResponseData } from '@/types/api';
import { api, readApiError } from './api';
import { WRITING_TOOLS, chatReducer, initialChatState, type ChatAction } from './chatReducer';
import { historyToMessages, jsonResponseToMessage } from './history';
import { consumeUiMessageStream, readBodyText } from './sse';
import type { ChatState, UIMessage } from './types';

export interface ChatSessionOptions {
  agentId: string | null;
  /** The project the agent belongs to; read at send time, so a project learned late still counts. */
  projectId?: string | null;
  /** The workspace the turn runs in (its checkout is the project root); read at send time. */
  workspaceId?: string | null;
  /** The model profile to answer with; read at send time. Absent: the server's default. */
  model?: string | null;
  /** The server named the conversation this turn belongs to (first turn of a new one). */
  onConversationId?: (id: string) => void;
  /** A tool changed a file; `path` is the virtual path it wrote, when known. */
  onOutputsChanged?: (path?: string) => void;
  /** The turn ended, however it ended. */
  onTurnEnd?: () => void;
}

export function newId(prefix: string): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return `${prefix}-${c?.randomUUID ? c.randomUUID() : Math.random().toString(36).slice(2) + Date.now().toString(36)}`;
}

/** Ids the browser made up for messages it has not seen stored yet. */
export const isLocalId = (id: string) => /^(user|assistant)-/.test(id);

type TurnBody = { message: string } | { regenerate: true } | { editMessageId: string; message: string };

/**
 * One conversation's client state: sends a turn to POST /api/chat, reads the UI message stream
 * and folds every chunk through the pure `chatReducer`. The server keeps the history, so only the
 * new message travels; Retry and Regenerate ask the server to answer its stored message again.
 */
export function useChatSession(options: ChatSessionOptions) {
  const [state, dispatch] = useReducer(chatReducer, initialChatState);
  const stateRef = useRef<ChatState>(state);
  stateRef.current = state;
  const optsRef = useRef(options);
  optsRef.current = options;
  const abortRef = useRef<AbortController | null>(null);

  useEffect(() => () => abortRef.current?.abort(), []);

  const load = useCallback((conversationId: string | null, messages: UIMessage[]) => {
    abortRef.current?.abort();
    abortRef.current = null;
    dispatch({ type: 'load', conversationId, messages });
  }, []);

  const run = useCallback(async (turn: TurnBody, start: ChatAction) => {
    const { agentId, projectId, model, workspaceId } = optsRef.current;
    if (!agentId || abortRef.current) return false;
    const controller = new AbortController();
    abortRef.current = controller;
    const conversationId = stateRef.current.conversationId;
    dispatch(start);

    const toolInputs = new Map<string, { name?: string; input?: unknown }>();
    let announcedId = conversationId;
    try {
      const res = await fetch('/api/chat', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify({
          ...(projectId ? { projectId } : {}),
          ...(projectId && workspaceId ? { workspaceId } : {}),
          agentId,
          ...(conversationId ? { conversationId } : {}),
          ...turn,
          ...(model ? { model } : {}),
          stream: true,
        }),
        signal: controller.signal,
      });
      if (!res.ok) {
        const err = await readApiError(res);
        dispatch({ type: 'request-failed', error: { kind: 'http', message: err.message, code: err.code, status: err.status } });
        return true;
      }
      const type = res.headers.get('content-type') ?? '';
      if (type.includes('application/json')) {
        // A server that answered with one JSON body instead of a stream: still show the answer.
        const body = (await res.json()) as { success?: boolean; data?: ChatResponseData };
        if (body?.success && body.data) {
          const msg = jsonResponseToMessage(body.data);
          const current = stateRef.current;
          const messages = current.messages.filter((m) => m.id !== current.activeMessageId);
          dispatch({ type: 'load', conversationId: body.data.conversationId, messages: [...messages, msg] });
          if (body.data.conversationId !== conversationId) optsRef.current.onConversationId?.(body.data.conversationId);
        } else {
          dispatch({ type: 'end', reason: 'complete' });
        }
        return true;
      }
      if (!res.body) {
        dispatch({ type: 'end', reason: 'complete' });
        return true;
      }
      await consumeUiMessageStream(readBodyText(res.body), (chunk) => {
        dispatch({ type: 'chunk', chunk });
        if (chunk.type === 'data-conversation') {
          const id = (chunk.data as { conversationId?: unknown } | undefined)?.conversationId;
          if (typeof id === 'string' && id !== announcedId) {
            announcedId = id;
            optsRef.current.onConversationId?.(id);
          }
        } else if (chunk.type === 'tool-input-available' || chunk.type === 'tool-input-start') {
          if (typeof chunk.toolCallId === 'string') {
            const prev = toolInputs.get(chunk.toolCallId) ?? {};
            toolInputs.set(chunk.toolCallId, { name: typeof chunk.toolName === 'string' ? chunk.toolName : prev.name, input: chunk.input ?? prev.input });
          }
        } else if (chunk.type === 'tool-output-available' && typeof chunk.toolCallId === 'string' && chunk.preliminary !== true) {
          const call = toolInputs.get(chunk.toolCallId);
          if (WRITING_TOOLS.has(call?.name ?? '')) optsRef.current.onOutputsChanged?.(writtenPath(call?.input, chunk.output));
        } else if (chunk.type === 'data-subagent') {
          // A subagent writes into the same output folder.
          const d = chunk.data as { toolName?: unknown; state?: unknown; input?: unknown } | undefined;
          if (d?.state === 'done' && WRITING_TOOLS.has(String(d.toolName))) optsRef.current.onOutputsChanged?.(writtenPath(d.input, undefined));
        }
      });
      dispatch({ type: 'end', reason: 'complete' });
    } catch (e) {
      if (controller.signal.aborted || (e as Error)?.name === 'AbortError') {
        dispatch({ type: 'end', reason: 'aborted' });
        const stoppedIn = stateRef.current.conversationId ?? announcedId;
        if (stoppedIn) void takeStoredAnswer(stoppedIn, dispatch);
      } else dispatch({ type: 'end', reason: 'network', message: 'The connection to the server failed.' });
    } finally {
      if (abortRef.current === controller) abortRef.current = null;
      optsRef.current.onTurnEnd?.();
    }
    return true;
  }, []);

  const stamp = () => new Date().toISOString();

  const send = useCallback(
    async (text: string) => {
      const message = text.trim();
      if (!message) return false;
      return run({ message }, { type: 'submit', text: message, userMessageId: newId('user'), assistantMessageId: newId('assistant'), createdAt: stamp(), model: optsRef.current.model ?? undefined });
    },
    [run],
  );

  /** Answers the stored last user message again (Regenerate, and Retry once the server has it). */
  const regenerate = useCallback(
    () => run({ regenerate: true }, { type: 'regenerate', assistantMessageId: newId('assistant'), createdAt: stamp(), model: optsRef.current.model ?? undefined }),
    [run],
  );

  /**
   * Replaces a user message and answers it; the server drops what came after it. A message sent in
   * this view has no stored id yet, so the stored one at the same position is looked up first.
   */
  const edit = useCallback(
    async (messageId: string, text: string) => {
      const message = text.trim();
      const { conversationId, messages } = stateRef.current;
      if (!message || !conversationId || abortRef.current) return false;
      let storedId = messageId;
      if (isLocalId(messageId)) {
        const position = messages.filter((m) => m.role === 'user').findIndex((m) => m.id === messageId);
        try {
          const detail = await api.conversation(conversationId);
          storedId = detail.messages.filter((m) => m.role === 'user')[position]?.id ?? '';
        } catch {
          storedId = '';
        }
        if (!storedId) return false;
      }
      return run(
        { editMessageId: storedId, message },
        { type: 'edit', messageId, text: message, userMessageId: newId('user'), assistantMessageId: newId('assistant'), createdAt: stamp(), model: optsRef.current.model ?? undefined },
      );
    },
    [run],
  );

  /**
   * Aborting the fetch stops the turn on the instance serving the stream (first, so the answer is
   * kept as far as the screen showed it); the Stop request reaches it through the database too,
   * from whichever instance the load balancer picks.
   */
  const stop = useCallback(() => {
    const id = abortRef.current ? stateRef.current.conversationId : null;
    abortRef.current?.abort();
    if (id) void fetch(`/api/conversations/${encodeURIComponent(id)}/stop`, { method: 'POST' }).catch(() => undefined);
  }, []);

  /**
   * After a failure: a turn the server accepted has the user message stored, so it is answered
   * again (never stored twice); a request it refused is sent again as it was. When the connection
   * failed before anything came back, the stored conversation says which of the two happened.
   */
  const retry = useCallback(async () => {
    const { lastUserText, turnAccepted, conversationId, error } = stateRef.current;
    if (abortRef.current) return;
    if ((turnAccepted || !lastUserText) && conversationId) {
      void regenerate();
      return;
    }
    if (!lastUserText) return;
    if (conversationId && error && error.kind !== 'http') {
      try {
        const stored = (await api.conversation(conversationId)).messages ?? [];
        const last = stored[stored.length - 1];
        if (last?.role === 'user' && last.content === lastUserText) {
          void regenerate();
          return;
        }
      } catch {
        /* unknown: sending it again is the lesser harm than losing it */
      }
    }
    dispatch({ type: 'discard-failed-turn' });
    void send(lastUserText);
  }, [send, regenerate]);

  const dismissError = useCallback(() => dispatch({ type: 'dismiss-error' }), []);

  return { state, send, stop, retry, regenerate, edit, load, dismissError };
}

/**
 * After a Stop: the server stores the answer only as far as it was delivered, and text still in
 * flight when the reader went away never reached the screen. Once the server has ended the turn
 * (a stopped turn releases its lock at once), its stored answer replaces the one on screen, so
 * both say the same words, and a reload shows them again.
 */
async function takeStoredAnswer(conversationId: string, dispatch: (a: ChatAction) => void): Promise<void> {
  for (let i = 0; i < 50; i++) {
    try {
      const detail = await api.conversation(conversationId);
      if (detail.status !== 'running') {
        dispatch({ type: 'stored-answer', conversationId, messages: historyToMessages(detail.messages ?? []) });
        return;
      }
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The virtual path a writing tool wrote: its result's `path`, else the argument it was given. */
function writtenPath(input: unknown, output: unknown): string | undefined {
  const o = output && typeof output === 'object' ? (output as { path?: unknown; ok?: unknown }) : {};
  if (o.ok === false) return undefined;
  if (typeof o.path === 'string') return o.path;
  const i = input && typeof input === 'object' ? (input as { file_path?: unknown; path?: unknown }) : {};
  return typeof i.file_path === 'string' ? i.file_path : typeof i.path === 'string' ? i.path : undefined;
}

'use client';

import { useCallback, useEffect, useReducer, useRef } from 'react';
import type { ChatResponseData } from '@/types/api';
import { readApiError } from './api';
import { WRITING_TOOLS, chatReducer, initialChatState } from './chatReducer';
import { jsonResponseToMessage } from './history';
import { consumeUiMessageStream, readBodyText } from './sse';
import type { ChatState, UIMessage } from './types';

export interface ChatSessionOptions {
  agentId: string | null;
  /** The project the agent belongs to; read at send time, so a project learned late still counts. */
  projectId?: string | null;
  /** The server named the conversation this turn belongs to (first turn of a new one). */
  onConversationId?: (id: string) => void;
  /** A tool changed the output files. */
  onOutputsChanged?: () => void;
  /** The turn ended, however it ended. */
  onTurnEnd?: () => void;
}

export function newId(prefix: string): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return `${prefix}-${c?.randomUUID ? c.randomUUID() : Math.random().toString(36).slice(2) + Date.now().toString(36)}`;
}

/**
 * One conversation's client state: sends a message to POST /api/chat, reads the UI message
 * stream and folds every chunk through the pure `chatReducer`. The server keeps the history, so
 * only the new message travels.
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

  const send = useCallback(async (text: string) => {
    const message = text.trim();
    const { agentId, projectId } = optsRef.current;
    if (!message || !agentId || abortRef.current) return false;
    const controller = new AbortController();
    abortRef.current = controller;
    const conversationId = stateRef.current.conversationId;
    dispatch({ type: 'submit', text: message, userMessageId: newId('user'), assistantMessageId: newId('assistant'), createdAt: new Date().toISOString() });

    const toolNames = new Map<string, string>();
    let announcedId = conversationId;
    try {
      const res = await fetch('/api/chat', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify({ ...(projectId ? { projectId } : {}), agentId, message, ...(conversationId ? { conversationId } : {}), stream: true }),
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
          if (typeof chunk.toolCallId === 'string' && typeof chunk.toolName === 'string') toolNames.set(chunk.toolCallId, chunk.toolName);
        } else if (chunk.type === 'tool-output-available' && typeof chunk.toolCallId === 'string') {
          if (WRITING_TOOLS.has(toolNames.get(chunk.toolCallId) ?? '')) optsRef.current.onOutputsChanged?.();
        } else if (chunk.type === 'data-subagent') {
          // A subagent writes into the same output folder.
          const d = chunk.data as { toolName?: unknown; state?: unknown } | undefined;
          if (d?.state === 'done' && WRITING_TOOLS.has(String(d.toolName))) optsRef.current.onOutputsChanged?.();
        }
      });
      dispatch({ type: 'end', reason: 'complete' });
    } catch (e) {
      if (controller.signal.aborted || (e as Error)?.name === 'AbortError') dispatch({ type: 'end', reason: 'aborted' });
      else dispatch({ type: 'end', reason: 'network', message: 'The connection to the server failed.' });
    } finally {
      if (abortRef.current === controller) abortRef.current = null;
      optsRef.current.onTurnEnd?.();
    }
    return true;
  }, []);

  /** Aborting the fetch is the whole protocol: the server cancels the turn when the client goes. */
  const stop = useCallback(() => {
    abortRef.current?.abort();
  }, []);

  const retry = useCallback(() => {
    const text = stateRef.current.lastUserText;
    if (!text || abortRef.current) return;
    dispatch({ type: 'discard-failed-turn' });
    void send(text);
  }, [send]);

  const dismissError = useCallback(() => dispatch({ type: 'dismiss-error' }), []);

  return { state, send, stop, retry, load, dismissError };
}

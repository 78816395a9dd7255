'use client';

import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import type { AgentSummary, ConversationDetail } from '@/types/api';
import { ApiError, api } from '../_lib/api';
import { runningTool } from '../_lib/chatReducer';
import { historyToMessages } from '../_lib/history';
import { toolStatusText } from '../_lib/toolLabels';
import type { ChatState, WithProject } from '../_lib/types';
import { useChatSession } from '../_lib/useChatSession';
import { CommandChips } from './CommandChips';
import { Composer, type ComposerHandle } from './Composer';
import { MessageList } from './MessageList';
import { AlertIcon, RefreshIcon, Spinner } from './icons';

export interface ChatViewProps {
  /** The conversation to open, or null for a new one with `agentId`. */
  conversationId: string | null;
  agentId: string | null;
  /** The project the conversation works in; its agents are only found among that project's. */
  projectId?: string | null;
  agents: AgentSummary[];
  onConversationCreated: (id: string) => void;
  onDetailLoaded: (detail: WithProject<ConversationDetail>) => void;
  onOutputsChanged: () => void;
  onTurnEnd: () => void;
  onNewConversation: () => void;
}

function statusText(state: ChatState, agentName: string): string {
  if (state.status === 'submitted') return `Sending to ${agentName}…`;
  if (state.status === 'streaming') {
    const tool = runningTool(state);
    return tool ? toolStatusText(tool.toolName) : 'Assistant is responding';
  }
  if (state.error) return 'The answer failed.';
  if (state.stopReason === 'aborted') return 'Stopped.';
  if (state.stopReason === 'max_iterations') return 'The agent paused at its step limit.';
  return '';
}

export function ChatView(props: ChatViewProps) {
  const { conversationId, agents } = props;
  const [detail, setDetail] = useState<WithProject<ConversationDetail> | null>(null);
  // The conversation knows its project best; the page may learn it a render later.
  const projectId = detail?.projectId ?? props.projectId ?? null;
  const [loadState, setLoadState] = useState<'idle' | 'loading' | 'error'>(conversationId ? 'loading' : 'idle');
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [finishedNote, setFinishedNote] = useState('');
  // The URL moves from ?agent= to ?c= after the first answer; the view keeps its agent.
  const [initialAgentId] = useState(props.agentId);
  const agentId = initialAgentId ?? detail?.agentId ?? null;
  // Agent ids are unique within a project only, so a bundle's agent must not answer for a project's.
  const agent = agents.find((a) => a.id === agentId && (a.projectId ?? null) === projectId);
  const agentName = agent?.name ?? 'Assistant';

  const cbs = useRef(props);
  cbs.current = props;
  const chat = useChatSession({
    agentId,
    projectId,
    onConversationId: (id) => cbs.current.onConversationCreated(id),
    onOutputsChanged: () => cbs.current.onOutputsChanged(),
    onTurnEnd: () => {
      setFinishedNote('Assistant finished responding.');
      cbs.current.onTurnEnd();
    },
  });
  const { state, send, stop, retry, load, dismissError } = chat;
  const busy = state.status !== 'idle';

  const scrollRef = useRef<HTMLDivElement>(null);
  const stickRef = useRef(true);
  const composerRef = useRef<ComposerHandle>(null);

  const fetchDetail = useCallback(
    async (id: string, signal?: AbortSignal) => {
      setLoadState('loading');
      setLoadError(null);
      try {
        const d = await api.conversation(id, signal);
        setDetail(d);
        load(d.id, historyToMessages(d.messages ?? []));
        setLoadState('idle');
        cbs.current.onDetailLoaded(d);
        stickRef.current = true;
      } catch (e) {
        if ((e as Error)?.name === 'AbortError') return;
        setLoadError(e instanceof ApiError ? e : new ApiError('Could not load the conversation.', 'E_UNKNOWN', 0));
        setLoadState('error');
      }
    },
    [load],
  );

  // The view is keyed per opened conversation, so this runs once per open; a conversation
  // created by this view's own first message is not reloaded (that would drop the live stream).
  useEffect(() => {
    if (!conversationId) return;
    const ctrl = new AbortController();
    void fetchDetail(conversationId, ctrl.signal);
    return () => ctrl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    if (loadState === 'idle') composerRef.current?.focus();
  }, [loadState]);

  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (el && stickRef.current) el.scrollTop = el.scrollHeight;
  }, [state.messages, state.error, state.stopReason, loadState]);

  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    // Follow the stream only while the reader is at the bottom; scrolling up to read stops it.
    stickRef.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };

  const doSend = (text: string) => {
    if (busy || !agentId) return false;
    stickRef.current = true;
    setFinishedNote('');
    void send(text);
    return true;
  };

  const status = statusText(state, agentName) || finishedNote;
  const commands = agent?.commands ?? [];

  if (loadState === 'error') {
    const notFound = loadError?.status === 404;
    return (
      <section className="chat chat-empty">
        <div className="notice notice-error" role="alert">
          <AlertIcon />
          <div>
            <p>{notFound ? 'This conversation does not exist (it may have been deleted).' : loadError?.message}</p>
            <div className="notice-actions">
              {!notFound && conversationId ? (
                <button type="button" className="button" onClick={() => void fetchDetail(conversationId)}>
                  <RefreshIcon /> Try again
                </button>
              ) : null}
              <button type="button" className="button button-primary" onClick={props.onNewConversation}>
                Start a new conversation
              </button>
            </div>
          </div>
        </div>
      </section>
    );
  }

  return (
    <section className="chat" aria-label={`Conversation with ${agentName}`}>
      <div className="transcript-scroll" ref={scrollRef} onScroll={onScroll}>
        <div className="transcript" role="log" aria-label="Conversation" aria-busy={busy || loadState === 'loading'} data-testid="transcript">
          {loadState === 'loading' ? (
            <p className="msg-pending">
              <Spinner /> Loading conversation…
            </p>
          ) : null}
          {!agent && agentId && agents.length > 0 && loadState === 'idle' ? (
            <p className="notice notice-warn">The agent “{agentId}” is no longer available; the history is shown read-only.</p>
          ) : null}
          <MessageList messages={state.messages} activeMessageId={state.activeMessageId} agentName={agentName} greeting={loadState === 'idle' ? agent?.greeting : undefined} />
          {!busy && detail?.status === 'running' && state.lastUserText === null ? (
            <div className="notice notice-info">
              <p>A reply is still being produced in this conversation.</p>
              <button type="button" className="button" onClick={() => conversationId && void fetchDetail(conversationId)}>
                <RefreshIcon /> Refresh
              </button>
            </div>
          ) : null}
          {!busy && detail?.status === 'interrupted' && state.lastUserText === null ? (
            <p className="notice notice-info">The last turn was interrupted before it finished. Send a message to carry on.</p>
          ) : null}
          {!busy && state.stopReason === 'aborted' && !state.error ? (
            <p className="turn-note" data-testid="stopped-notice">
              Stopped.
            </p>
          ) : null}
          {!busy && state.stopReason === 'max_iterations' && !state.error ? (
            <div className="notice notice-info" data-testid="max-iterations-notice">
              <p>The agent reached its step limit for this turn.</p>
              <button type="button" className="button button-primary" data-testid="continue-button" onClick={() => doSend('continue')}>
                Continue
              </button>
            </div>
          ) : null}
          {state.error && !busy ? (
            <div className="notice notice-error" role="alert" data-testid="chat-error">
              <AlertIcon />
              <div>
                <p>
                  {state.error.kind === 'dropped' || state.error.kind === 'network' ? 'Connection lost: ' : ''}
                  {state.error.message}
                  {state.error.code ? <span className="error-code"> ({state.error.code})</span> : null}
                </p>
                {state.error.code === 'E_CONVERSATION_BUSY' ? <p>Another reply is still running here; wait for it, then retry.</p> : null}
                <div className="notice-actions">
                  {state.lastUserText ? (
                    <button type="button" className="button button-primary" data-testid="retry-button" onClick={() => { stickRef.current = true; retry(); }}>
                      <RefreshIcon /> Retry
                    </button>
                  ) : null}
                  <button type="button" className="button" onClick={dismissError}>
                    Dismiss
                  </button>
                </div>
              </div>
            </div>
          ) : null}
        </div>
      </div>
      <div className="composer-area">
        <p className="chat-status" role="status" aria-live="polite" data-testid="chat-status">
          {busy ? <Spinner /> : null}
          <span>{status}</span>
        </p>
        <CommandChips commands={commands} disabled={busy || !agent} onPick={(t) => doSend(t)} />
        <Composer
          ref={composerRef}
          commands={commands}
          busy={busy}
          disabled={!agent || loadState !== 'idle'}
          placeholder={agent ? `Message ${agent.name}…` : undefined}
          onSend={doSend}
          onStop={stop}
        />
      </div>
    </section>
  );
}

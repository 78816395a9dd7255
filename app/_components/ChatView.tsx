'use client';

import { useCallback, useEffect, useId, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { AgentSummary, CommandSummary, ConversationDetail, ModelProfileView } from '@/types/api';
import { personLabel } from '../_lib/accounts';
import { ApiError, api } from '../_lib/api';
import { runningTool } from '../_lib/chatReducer';
import { cannotRun, commandOfMessage, commandText, problemMark } from '../_lib/commands';
import { formatCost } from '../_lib/format';
import { useEscape } from '../_lib/escape';
import { historyToMessages } from '../_lib/history';
import { toolStatusText } from '../_lib/toolLabels';
import type { ChatState } from '../_lib/types';
import { WorkspaceBadge } from './WorkspaceBadge';
import { useChatSession } from '../_lib/useChatSession';
import { CommandChips } from './CommandChips';
import { Composer, type ComposerHandle } from './Composer';
import { ErrorMessage } from './ErrorMessage';
import { MessageList, type MessageActions } from './MessageList';
import { ModelPicker } from './ModelPicker';
import { AlertIcon, RefreshIcon } from './icons';
import { useMe } from './AuthGate';

export interface ChatViewProps {
  /** The conversation to open, or null for a new one with `agentId`. */
  conversationId: string | null;
  agentId: string | null;
  /** The project the conversation works in; its agents are only found among that project's. */
  projectId?: string | null;
  agents: AgentSummary[];
  /** The agents are still being read: a restored turn's notice waits for them, so its Retry does not appear late. */
  agentsLoading?: boolean;
  /** The server's model profiles; the picker shows only when there is a choice. */
  models?: ModelProfileView[];
  onConversationCreated: (id: string) => void;
  onDetailLoaded: (detail: ConversationDetail) => void;
  /** A tool wrote a file (its virtual path, when known). */
  onOutputsChanged: (path?: string) => void;
  onTurnEnd: () => void;
  onNewConversation: () => void;
  /** Opens a file a tool wrote (virtual path); absent where documents cannot be shown. */
  onOpenFile?: (path: string) => void;
  canOpenFile?: (path: string) => boolean;
  /** A project's help command (`*bmad-help`): "What next?" sends it in this conversation. */
  helpCommand?: string | null;
  /** Starts a new conversation with another agent of the project (the documents stay shared). */
  onSwitchAgent?: (agentId: string) => void;
  /** Sent once as the first message of a new conversation (a journey step's command). */
  initialMessage?: string | null;
  /** A new conversation's workspace: its turns run in that checkout (a stored one remembers its own). */
  workspaceId?: string | null;
  /** Opens another conversation (the copy "Continue in a copy" made). */
  onOpenConversation?: (id: string) => void;
}

function statusText(state: ChatState, agentName: string): string {
  if (state.status === 'submitted') return `Sending to ${agentName}…`;
  if (state.status === 'streaming') {
    const tool = runningTool(state);
    return tool ? toolStatusText(tool.toolName) : `${agentName} is responding…`;
  }
  if (state.error) return 'The answer failed.';
  if (state.stopReason === 'aborted') return 'Stopped.';
  if (state.stopReason === 'max_iterations') return 'The agent paused at its step limit.';
  return '';
}

export function ChatView(props: ChatViewProps) {
  const { conversationId, agents, models = [] } = props;
  const [detail, setDetail] = useState<ConversationDetail | null>(null);
  const { me } = useMe();
  // The conversation knows its project best; the page may learn it a render later.
  const projectId = detail?.projectId ?? props.projectId ?? null;
  const [loadState, setLoadState] = useState<'idle' | 'loading' | 'error'>(conversationId ? 'loading' : 'idle');
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [finishedNote, setFinishedNote] = useState('');
  /** A command picked or typed whose target is broken: explained here instead of run. */
  const [broken, setBroken] = useState<CommandSummary | null>(null);
  // undefined: untouched here, the stored conversation's choice holds; null: Automatic.
  const [model, setModel] = useState<string | null | undefined>(undefined);
  // The URL moves from ?agent= to ?c= after the first answer; the view keeps its agent.
  const [initialAgentId] = useState(props.agentId);
  const agentId = initialAgentId ?? detail?.agentId ?? null;
  // Agent ids are unique within a project only, so a bundle's agent must not answer for a project's.
  const agent = agents.find((a) => a.id === agentId && (a.projectId ?? null) === projectId);
  const agentName = agent?.name ?? 'Assistant';
  const chosenModel = model !== undefined ? model : (detail?.model ?? null);

  const cbs = useRef(props);
  cbs.current = props;
  // Like the agent: the URL loses `ws=` once the conversation has its id; the view keeps it.
  const [initialWorkspaceId] = useState(props.workspaceId ?? null);
  const workspaceId = (detail as { workspaceId?: string | null } | null)?.workspaceId ?? initialWorkspaceId;
  const chat = useChatSession({
    agentId,
    projectId,
    workspaceId,
    model: chosenModel,
    onConversationId: (id) => cbs.current.onConversationCreated(id),
    onOutputsChanged: (path) => cbs.current.onOutputsChanged(path),
    onTurnEnd: () => {
      setFinishedNote('Answer complete.');
      cbs.current.onTurnEnd();
    },
  });
  const { state, send, stop, retry, regenerate, edit, load, dismissError } = chat;
  const busy = state.status !== 'idle';
  const liveConversationId = state.conversationId ?? conversationId;

  const scrollRef = useRef<HTMLDivElement>(null);
  const contentRef = useRef<HTMLDivElement>(null);
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

  const toBottom = useCallback(() => {
    const el = scrollRef.current;
    if (el && stickRef.current) el.scrollTop = el.scrollHeight;
  }, []);

  useLayoutEffect(toBottom, [state.messages, state.error, state.stopReason, loadState, detail, toBottom]);

  // Content that settles later (highlighted code, diagrams, the command chips under the
  // transcript) changes heights after the render: stay at the bottom while the reader is there.
  useEffect(() => {
    const RO = (globalThis as { ResizeObserver?: typeof ResizeObserver }).ResizeObserver;
    if (!RO || !scrollRef.current || !contentRef.current) return;
    const ro = new RO(() => toBottom());
    ro.observe(scrollRef.current);
    ro.observe(contentRef.current);
    return () => ro.disconnect();
  }, [toBottom, loadState]);

  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    // Follow the stream only while the reader is at the bottom; scrolling up to read stops it.
    stickRef.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };

  const doSend = (text: string) => {
    if (busy || !agentId) return false;
    // Known broken before it runs: say why and what to do, rather than fail on a missing file.
    const command = commandOfMessage(agent?.commands ?? [], text);
    if (command && cannotRun(command)) {
      setBroken(command);
      return false;
    }
    setBroken(null);
    stickRef.current = true;
    setFinishedNote('');
    void send(text);
    return true;
  };

  const startTurn = (fn: () => unknown) => {
    stickRef.current = true;
    setFinishedNote('');
    void fn();
  };

  // A journey step opens a new conversation that starts on its command at once.
  const initialSent = useRef(false);
  useEffect(() => {
    if (initialSent.current || !props.initialMessage || conversationId || !agent || busy || loadState !== 'idle') return;
    initialSent.current = true;
    doSend(props.initialMessage);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [agent, busy, loadState, conversationId, props.initialMessage]);

  // Someone else's conversation (shared with the reader, or an admin's look): read, never written.
  const readOnly = detail?.canWrite === false && liveConversationId === detail.id;
  // Until an opened conversation's detail says whether the reader may write, no composer (it
  // would flash and vanish for a read-only one).
  const awaitingDetail = !!conversationId && loadState !== 'idle' && detail?.id !== conversationId;
  const canAct = !busy && !!agent && loadState === 'idle' && !readOnly;
  const actions = useMemo<MessageActions>(
    () => ({
      canAct: canAct && !!liveConversationId,
      onRegenerate: () => startTurn(regenerate),
      onEdit: async (id, text) => {
        stickRef.current = true;
        setFinishedNote('');
        return edit(id, text);
      },
      onOpenFile: props.onOpenFile,
      canOpenFile: props.canOpenFile,
    }),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [canAct, liveConversationId, regenerate, edit, props.onOpenFile, props.canOpenFile],
  );

  const changeModel = (name: string | null) => {
    setModel(name);
    // The conversation remembers it; a new one learns it with its first message.
    if (liveConversationId) void api.setModel(liveConversationId, name).catch(() => undefined);
  };

  const status = statusText(state, agentName) || finishedNote;
  // The conversation's total: what its answers cost, as each shows it (stored, so it survives a reload).
  const priced = state.messages.filter((m) => m.cost !== undefined);
  const totalCost = priced.length ? priced.reduce((sum, m) => sum + (m.cost ?? 0), 0) : undefined;
  const commands = agent?.commands ?? [];
  // What the stored conversation says about its last turn, until this view runs one of its own.
  const fresh = state.lastUserText === null && !busy && !state.error && state.stopReason === null;
  const restored = fresh && detail ? detail : null;
  const lastTurn = restored?.lastTurn;
  const restoredStatus = props.agentsLoading
    ? null
    : (lastTurn?.status ??
      (restored?.status === 'running' ? 'running' : restored?.status === 'interrupted' ? 'interrupted' : restored?.status === 'stopped' || restored?.status === 'failed' ? restored.status : null));
  const empty = state.messages.length === 0 && loadState === 'idle';

  if (loadState === 'error') {
    const notFound = loadError?.status === 404;
    return (
      <section className="chat chat-empty">
        <h1 className="visually-hidden">Conversation</h1>
        <div className="notice notice-error" role="alert">
          <AlertIcon />
          <div>
            {notFound ? <p>This conversation does not exist (it may have been deleted).</p> : <ErrorMessage message={loadError?.message ?? 'Could not load the conversation.'} code={loadError?.code} />}
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

  const retryLabel = (
    <>
      <RefreshIcon /> Retry
    </>
  );

  const otherAgents = projectId && props.onSwitchAgent ? agents.filter((a) => a.id !== agentId && (a.projectId ?? null) === projectId) : [];
  const helpCommand = readOnly ? null : (props.helpCommand ?? null);
  const showHeader = !!projectId && (!!helpCommand || otherAgents.length > 0);

  return (
    <section className="chat" aria-label={`Conversation with ${agentName}`}>
      <h1 className="visually-hidden">{detail?.title ? `${detail.title} — ${agentName}` : `Conversation with ${agentName}`}</h1>
      {projectId && workspaceId ? <WorkspaceBadge projectId={projectId} workspaceId={workspaceId} /> : null}
      {showHeader ? (
        <ConversationHeader
          agentName={agentName}
          others={otherAgents}
          helpCommand={helpCommand}
          helpDisabled={busy || !agent || loadState !== 'idle'}
          onHelp={() => helpCommand && doSend(helpCommand)}
          onSwitch={(id) => props.onSwitchAgent?.(id)}
        />
      ) : null}
      <div className="transcript-scroll" ref={scrollRef} onScroll={onScroll}>
        <div className="transcript" role="log" aria-label="Conversation" aria-busy={busy || loadState === 'loading'} data-testid="transcript" ref={contentRef}>
          {loadState === 'loading' ? <p className="msg-pending">Loading conversation…</p> : null}
          {!agent && agentId && agents.length > 0 && loadState === 'idle' ? (
            <p className="notice notice-warn">The agent “{agentId}” is no longer available; the history is shown read-only.</p>
          ) : null}
          <MessageList
            messages={state.messages}
            activeMessageId={state.activeMessageId}
            agentName={agentName}
            greeting={loadState === 'idle' ? agent?.greeting : undefined}
            actions={actions}
            authors={me ? { myId: me.id, ...(detail?.owner ? { owner: detail.owner } : {}) } : undefined}
          />
          {empty && commands.length > 0 && !readOnly ? (
            <section className="command-cards" aria-labelledby="command-cards-title" data-testid="command-cards">
              <h2 id="command-cards-title" className="command-cards-title">
                What {agentName} can do
              </h2>
              <ul>
                {commands.map((c) => (
                  <li key={c.cmd}>
                    <button
                      type="button"
                      className={c.problem ? 'command-card is-broken' : 'command-card'}
                      data-testid="command-card"
                      data-broken={cannotRun(c) ? 'true' : undefined}
                      data-warning={c.problem && !cannotRun(c) ? 'true' : undefined}
                      disabled={busy || !agent}
                      onClick={() => doSend(commandText(c.cmd))}
                    >
                      <span className="command-card-name">
                        {commandText(c.cmd)}
                        {c.problem ? (
                          <span className="command-broken-mark" data-testid="command-broken-mark">
                            <AlertIcon /> {problemMark(c)}
                          </span>
                        ) : null}
                      </span>
                      <span className="command-card-desc">{c.description}</span>
                      {c.problem ? <span className="command-card-problem">{c.problem}</span> : null}
                    </button>
                  </li>
                ))}
              </ul>
            </section>
          ) : null}
          {restoredStatus === 'running' ? (
            <div className="notice notice-info" data-testid="running-notice">
              <p>A reply is still being produced in this conversation.</p>
              <button type="button" className="button" onClick={() => conversationId && void fetchDetail(conversationId)}>
                <RefreshIcon /> Refresh
              </button>
            </div>
          ) : null}
          {restoredStatus === 'interrupted' ? (
            <div className="notice notice-info" data-testid="interrupted-notice">
              <p>The last answer was cut off: the server stopped before it finished.</p>
              {agent && !readOnly ? (
                <button type="button" className="button" data-testid="retry-button" onClick={() => startTurn(regenerate)}>
                  {retryLabel}
                </button>
              ) : null}
            </div>
          ) : null}
          {restoredStatus === 'stopped' ? (
            <p className="turn-note" data-testid="stopped-notice">
              Stopped.
            </p>
          ) : null}
          {restoredStatus === 'failed' ? (
            <div className="notice notice-error" data-testid="chat-error">
              <AlertIcon />
              <div>
                <ErrorMessage message={lastTurn?.error?.message ?? 'The last answer failed.'} code={lastTurn?.error?.code} />
                {agent && !readOnly ? (
                  <div className="notice-actions">
                    <button type="button" className="button button-primary" data-testid="retry-button" onClick={() => startTurn(regenerate)}>
                      {retryLabel}
                    </button>
                  </div>
                ) : null}
              </div>
            </div>
          ) : null}
          {broken ? (
            <div className="notice notice-warn" role="alert" data-testid="broken-command">
              <AlertIcon />
              <div>
                <p>
                  <strong>{commandText(broken.cmd)}</strong> cannot run: {broken.problem}
                </p>
                <div className="notice-actions">
                  <button type="button" className="button" onClick={() => setBroken(null)}>
                    Dismiss
                  </button>
                </div>
              </div>
            </div>
          ) : null}
          {!busy && totalCost !== undefined ? (
            <p className="turn-note conversation-cost" data-testid="conversation-cost">
              Conversation cost {formatCost(totalCost)}
            </p>
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
                <ErrorMessage
                  message={state.error.message}
                  code={state.error.code}
                  prefix={state.error.kind === 'dropped' || state.error.kind === 'network' ? 'Connection lost: ' : undefined}
                />
                {state.error.code === 'E_CONVERSATION_BUSY' ? <p>Another reply is still running here; wait for it, then retry.</p> : null}
                <div className="notice-actions">
                  {state.lastUserText ? (
                    <button type="button" className="button button-primary" data-testid="retry-button" onClick={() => startTurn(retry)}>
                      {retryLabel}
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
        <p className="visually-hidden" role="status" aria-live="polite" data-testid="chat-status">
          {status}
        </p>
        {awaitingDetail ? null : readOnly && detail ? (
          <ReadOnlyBar detail={detail} {...(me ? { myId: me.id } : {})} onOpenConversation={props.onOpenConversation} />
        ) : (
          <>
            {!empty ? <CommandChips commands={commands} disabled={busy || !agent} onPick={(t) => doSend(t)} /> : null}
            <Composer
              ref={composerRef}
              commands={commands}
              busy={busy}
              disabled={!agent || loadState !== 'idle'}
              placeholder={agent ? `Message ${agent.name}…` : undefined}
              onSend={doSend}
              onStop={stop}
              tools={<ModelPicker models={models} value={chosenModel} disabled={busy} onChange={changeModel} />}
            />
          </>
        )}
      </div>
    </section>
  );
}

/**
 * The header of a project conversation: "What next?" runs the project's help here, with the
 * journey as its context; "Switch agent" starts a new conversation with another of the project's
 * agents (the documents stay shared).
 */
function ConversationHeader(props: {
  agentName: string;
  others: AgentSummary[];
  helpCommand: string | null;
  helpDisabled: boolean;
  onHelp: () => void;
  onSwitch: (agentId: string) => void;
}) {
  const [open, setOpen] = useState(false);
  const menuId = useId();
  const buttonRef = useRef<HTMLButtonElement>(null);
  const listRef = useRef<HTMLUListElement>(null);
  useEffect(() => {
    if (open) listRef.current?.querySelector('button')?.focus();
  }, [open]);
  // On the page's Escape stack: one Escape closes this menu, not the viewer docked beside it too.
  useEscape(open, () => {
    setOpen(false);
    buttonRef.current?.focus();
  });
  return (
    <div className="chat-header" data-testid="conversation-header">
      {props.helpCommand ? (
        <button type="button" className="button chat-header-button" data-testid="what-next" disabled={props.helpDisabled} onClick={props.onHelp}>
          What next?
        </button>
      ) : null}
      {props.others.length ? (
        <div className="switch-agent">
          <button
            ref={buttonRef}
            type="button"
            className="button chat-header-button"
            aria-expanded={open}
            aria-controls={menuId}
            data-testid="switch-agent"
            onClick={() => setOpen((o) => !o)}
          >
            Switch agent
          </button>
          {open ? (
            <ul id={menuId} ref={listRef} className="switch-agent-list" aria-label={`Start a new conversation instead of ${props.agentName}`}>
              {props.others.map((a) => (
                <li key={a.id}>
                  <button type="button" className="switch-agent-item" data-testid="switch-agent-item" data-agent-id={a.id} onClick={() => props.onSwitch(a.id)}>
                    <span className="switch-agent-name">{a.name}</span>
                    {a.title ? <span className="switch-agent-title">{a.title}</span> : null}
                  </button>
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

/**
 * In place of the composer when the reader may not write here: whose conversation it is, and
 * "Continue in a copy", which makes a conversation of their own with these messages and opens it.
 */
export function ReadOnlyBar({ detail, myId, onOpenConversation }: { detail: ConversationDetail; myId?: string; onOpenConversation?: (id: string) => void }) {
  const [copying, setCopying] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const owner = detail.owner ? personLabel(detail.owner) : 'someone else';
  // One's own conversation read-only: the project role no longer allows chatting, and a copy
  // (a conversation in the same project) would be refused for the same reason.
  if (myId && detail.owner?.id === myId) {
    return (
      <div className="read-only-bar" data-testid="read-only-bar">
        <p className="read-only-line" data-testid="read-only-line">
          Your conversation · read-only: your role in this project no longer lets you chat. A project owner or an admin can change it.
        </p>
      </div>
    );
  }
  const copy = async () => {
    setCopying(true);
    setError(null);
    try {
      const { id } = await api.copy(detail.id);
      onOpenConversation?.(id);
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError('Could not make the copy.', 'E_UNKNOWN', 0));
    } finally {
      setCopying(false);
    }
  };
  return (
    <div className="read-only-bar" data-testid="read-only-bar">
      <p className="read-only-line" data-testid="read-only-line">
        {detail.shared ? `Shared by ${owner}` : `${owner}’s private conversation`} · read-only
      </p>
      {onOpenConversation ? (
        <button type="button" className="button button-primary" data-testid="continue-in-copy" disabled={copying} onClick={() => void copy()}>
          {copying ? 'Copying…' : 'Continue in a copy'}
        </button>
      ) : null}
      {error ? (
        <div className="read-only-error" role="alert">
          <ErrorMessage message={error.message} />
        </div>
      ) : null}
    </div>
  );
}

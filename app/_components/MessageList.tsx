'use client';

import { memo, useId, useState, type FormEvent, type KeyboardEvent } from 'react';
import { WRITING_TOOLS, messageText } from '../_lib/chatReducer';
import { personLabel } from '../_lib/accounts';
import { copyText } from '../_lib/clipboard';
import { formatCost, formatTokens, plural } from '../_lib/format';
import { toolLabel } from '../_lib/toolLabels';
import type { MessagePart, ToolPart, UIMessage } from '../_lib/types';
import { Markdown } from './Markdown';
import { ToolActivity } from './ToolActivity';
import { AlertIcon, CheckIcon, CopyIcon, FilesIcon, PencilIcon, RefreshIcon, Spinner } from './icons';

/** Consecutive tool calls from this many on fold into one line with a counter. */
export const TOOL_GROUP_MIN = 3;

type Item = { kind: 'part'; part: MessagePart } | { kind: 'tools'; parts: ToolPart[] };

export function groupParts(parts: MessagePart[]): Item[] {
  const out: Item[] = [];
  let run: ToolPart[] = [];
  const flush = () => {
    if (run.length >= TOOL_GROUP_MIN) out.push({ kind: 'tools', parts: run });
    else run.forEach((part) => out.push({ kind: 'part', part }));
    run = [];
  };
  for (const part of parts) {
    if (part.type === 'tool') run.push(part);
    else {
      flush();
      out.push({ kind: 'part', part });
    }
  }
  flush();
  return out;
}

export interface MessageActions {
  /** Idle, with an agent that can answer: the actions that start a turn are offered. */
  canAct: boolean;
  onRegenerate?: () => void;
  /** Resolves false when the edit could not be sent. */
  onEdit?: (messageId: string, text: string) => Promise<boolean> | boolean;
  onOpenFile?: (path: string) => void;
  canOpenFile?: (path: string) => boolean;
}

function CopyMessageButton({ text }: { text: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="icon-button msg-action"
      aria-label={done ? 'Copied' : 'Copy message'}
      title="Copy message"
      data-testid="copy-message"
      onClick={async () => {
        if (await copyText(text)) {
          setDone(true);
          window.setTimeout(() => setDone(false), 1500);
        }
      }}
    >
      {done ? <CheckIcon /> : <CopyIcon />}
    </button>
  );
}

function EditForm({ initial, truncates, onCancel, onSubmit }: { initial: string; truncates: boolean; onCancel: () => void; onSubmit: (text: string) => void }) {
  const id = useId();
  const [value, setValue] = useState(initial);
  const submit = (e?: FormEvent) => {
    e?.preventDefault();
    if (value.trim()) onSubmit(value);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.nativeEvent.isComposing || e.keyCode === 229) return;
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      onCancel();
    } else if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      submit();
    }
  };
  return (
    <form className="msg-edit" onSubmit={submit} data-testid="edit-form">
      <label htmlFor={`${id}-t`} className="visually-hidden">
        Edit your message
      </label>
      <textarea id={`${id}-t`} className="msg-edit-input" value={value} autoFocus rows={3} onChange={(e) => setValue(e.target.value)} onKeyDown={onKeyDown} aria-describedby={truncates ? `${id}-n` : undefined} />
      {truncates ? (
        <p id={`${id}-n`} className="msg-edit-note" data-testid="edit-note">
          <AlertIcon /> Editing will remove the messages after this one.
        </p>
      ) : null}
      <div className="msg-edit-actions">
        <button type="button" className="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="button button-primary" disabled={!value.trim()} data-testid="edit-send">
          Send
        </button>
      </div>
    </form>
  );
}

/**
 * Who a user message is by, as the transcript labels it: "You" for one's own, the person's name
 * for anyone else's. `mine` is known with accounts only; without them every message is the reader's.
 */
export function authorLabel(message: UIMessage, who: Authors | undefined): { name: string; mine: boolean } {
  const id = message.author?.id;
  if (who?.myId && id && id !== who.myId) return { name: personLabel(message.author!), mine: false };
  // A message stored without an author (before accounts) in someone else's conversation is theirs.
  if (who?.myId && !id && who.owner && who.owner.id !== who.myId) return { name: personLabel(who.owner), mine: false };
  return { name: 'You', mine: true };
}

export interface Authors {
  /** The reader's id, with accounts. */
  myId?: string;
  /** The conversation's owner (who wrote its messages stored without an author). */
  owner?: { id: string; name: string; status?: 'active' | 'deactivated' | 'removed' };
  /** Label one's own messages "You" visibly too: the transcript holds other people's words. */
  showYou?: boolean;
}

function UserMessage({ message, last, actions, authors }: { message: UIMessage; last: boolean; actions?: MessageActions; authors?: Authors }) {
  const text = messageText(message);
  const by = authorLabel(message, authors);
  const [editing, setEditing] = useState(false);
  if (editing && actions?.onEdit) {
    return (
      <div className="msg msg-user msg-editing" data-testid="message-user">
        <EditForm
          initial={text}
          truncates={!last}
          onCancel={() => setEditing(false)}
          onSubmit={async (next) => {
            setEditing(false);
            if ((await actions.onEdit?.(message.id, next)) === false) setEditing(true);
          }}
        />
      </div>
    );
  }
  return (
    <div className="msg msg-user" data-testid="message-user" data-message-id={message.id}>
      <div className="msg-stack">
        {!by.mine || authors?.showYou ? (
          <span className="msg-author" data-testid="message-author">
            {by.name}
            <span className="visually-hidden"> said:</span>
          </span>
        ) : (
          <span className="visually-hidden">You said:</span>
        )}
        <div className="msg-bubble">{text}</div>
        <div className="msg-actions">
          <CopyMessageButton text={text} />
          {actions?.onEdit && actions.canAct ? (
            <button type="button" className="icon-button msg-action" aria-label="Edit message" title="Edit and send again" data-testid="edit-message" onClick={() => setEditing(true)}>
              <PencilIcon />
            </button>
          ) : null}
        </div>
      </div>
    </div>
  );
}

function ToolGroup({ parts, onOpenFile, canOpenFile }: { parts: ToolPart[]; onOpenFile?: (path: string) => void; canOpenFile?: (path: string) => boolean }) {
  const running = parts.find((p) => p.state === 'running');
  const failed = parts.filter((p) => p.state === 'failed').length;
  const current = running ? toolLabel(running.toolName, running.input, 'running') : null;
  return (
    <details className={`tool-group${running ? ' tool-group-running' : ''}`} data-testid="tool-group" data-count={parts.length}>
      <summary>
        <span className="tool-icon">{running ? <Spinner /> : failed ? <AlertIcon /> : <CheckIcon />}</span>
        <span className="tool-label">
          {plural(parts.length, 'tool call')}
          {failed ? ` · ${failed} failed` : ''}
          {current ? (
            <>
              {` · ${current.verb}`}
              {/* A command's spaces are part of it: kept as written. */}
              {current.target ? <span className="command-text">{` ${current.target}`}</span> : null}…
            </>
          ) : null}
        </span>
      </summary>
      <div className="tool-group-body">
        {parts.map((p) => (
          <ToolActivity key={p.toolCallId} part={p} onOpenFile={onOpenFile} canOpenFile={canOpenFile} />
        ))}
      </div>
    </details>
  );
}

/** Files a folded run wrote, kept in sight: the documents are what the person came for. */
function GroupFiles({ parts, onOpenFile, canOpenFile }: { parts: ToolPart[]; onOpenFile?: (path: string) => void; canOpenFile?: (path: string) => boolean }) {
  if (!onOpenFile) return null;
  const files = new Map<string, string>();
  for (const p of parts) {
    if (p.state !== 'done') continue;
    const l = toolLabel(p.toolName, p.input, 'done', p.output);
    if (l.path && WRITING_TOOLS.has(p.toolName) && (canOpenFile?.(l.path) ?? true)) files.set(l.path, l.target ?? l.path);
  }
  if (files.size === 0) return null;
  return (
    <ul className="tool-group-files">
      {[...files].map(([path, name]) => (
        <li key={path}>
          <button type="button" className="button button-small tool-open" data-testid="tool-open" onClick={() => onOpenFile(path)}>
            <FilesIcon /> Open {name}
          </button>
        </li>
      ))}
    </ul>
  );
}

function AnswerMeta({ message: full }: { message: UIMessage }) {
  // An answer stopped before the model reported usage has none to show ("0 tokens" says nothing).
  const counted = full.usage && full.usage.promptTokens + full.usage.completionTokens > 0 ? full.usage : undefined;
  const message = { ...full, usage: counted };
  const model = message.model?.profile ?? message.model?.model;
  if (!message.usage && !model) return null;
  const title = message.usage
    ? `${message.usage.promptTokens.toLocaleString('en-US')} prompt + ${message.usage.completionTokens.toLocaleString('en-US')} completion tokens${message.usage.cachedTokens ? ` (${message.usage.cachedTokens.toLocaleString('en-US')} cached)` : ''}${message.model?.model && message.model.model !== model ? ` · ${message.model.model}` : ''}`
    : undefined;
  return (
    <span className="msg-meta" data-testid="answer-meta" title={title}>
      {model ? <span data-testid="answer-model">{model}</span> : null}
      {model && message.usage ? ' · ' : null}
      {message.usage ? <span data-testid="answer-tokens">{formatTokens(message.usage)}</span> : null}
      {message.cost !== undefined ? <span data-testid="answer-cost"> · cost {formatCost(message.cost)}</span> : null}
    </span>
  );
}

const AssistantMessage = memo(function AssistantMessage({
  message,
  active,
  agentName,
  last,
  actions,
}: {
  message: UIMessage;
  active: boolean;
  agentName: string;
  last: boolean;
  actions?: MessageActions;
}) {
  const visible = message.parts.filter((p) => p.type !== 'text' || p.text !== '' || p.state === 'streaming');
  const text = message.parts
    .filter((p) => p.type === 'text')
    .map((p) => (p.type === 'text' ? p.text : ''))
    .join('\n\n');
  const onOpenFile = actions?.onOpenFile;
  const canOpenFile = actions?.canOpenFile;
  return (
    <div className="msg msg-assistant" data-testid="message-assistant" data-streaming={active ? 'true' : undefined}>
      <span className="visually-hidden">{agentName} said:</span>
      <div className="msg-body">
        {groupParts(visible).map((item, i) => {
          if (item.kind === 'tools') {
            return (
              <div key={`g-${item.parts[0].toolCallId}`} className="tool-group-wrap">
                <ToolGroup parts={item.parts} onOpenFile={onOpenFile} canOpenFile={canOpenFile} />
                <GroupFiles parts={item.parts} onOpenFile={onOpenFile} canOpenFile={canOpenFile} />
              </div>
            );
          }
          const part = item.part;
          if (part.type === 'tool') return <ToolActivity key={`tool-${part.toolCallId}`} part={part} onOpenFile={onOpenFile} canOpenFile={canOpenFile} />;
          if (part.type === 'reasoning') {
            return (
              <details key={`r-${part.id}-${i}`} className="reasoning">
                <summary>{part.state === 'streaming' ? 'Thinking…' : 'Thoughts'}</summary>
                <div className="reasoning-text">{part.text}</div>
              </details>
            );
          }
          return <Markdown key={`t-${part.id}-${i}`} text={part.text} streaming={part.state === 'streaming'} />;
        })}
        {active && visible.length === 0 ? (
          <p className="msg-pending">
            <Spinner /> Thinking…
          </p>
        ) : null}
        {active && visible.length > 0 ? <span className="stream-caret" aria-hidden="true" /> : null}
        {!active ? (
          <div className="msg-footer">
            <AnswerMeta message={message} />
            <div className="msg-actions">
              {text.trim() ? <CopyMessageButton text={text} /> : null}
              {last && actions?.onRegenerate && actions.canAct ? (
                <button type="button" className="icon-button msg-action" aria-label="Regenerate answer" title="Answer again" data-testid="regenerate" onClick={actions.onRegenerate}>
                  <RefreshIcon />
                </button>
              ) : null}
            </div>
          </div>
        ) : null}
      </div>
    </div>
  );
});

export interface MessageListProps {
  messages: UIMessage[];
  activeMessageId: string | null;
  agentName: string;
  greeting?: string;
  actions?: MessageActions;
  /** With accounts: who reads, and whose conversation it is, to label user messages by author. */
  authors?: Omit<Authors, 'showYou'>;
}

/** The transcript, parts in the order they arrived: text, tools, text again. */
export function MessageList({ messages, activeMessageId, agentName, greeting, actions, authors }: MessageListProps) {
  const lastIndex = messages.length - 1;
  // One's own messages are named "You" visibly once someone else's words are in the transcript.
  const labelled: Authors | undefined = authors
    ? { ...authors, showYou: messages.some((m) => m.role === 'user' && !authorLabel(m, authors).mine) }
    : undefined;
  return (
    <>
      {greeting ? (
        <div className="msg msg-assistant msg-greeting" data-testid="message-greeting">
          <span className="visually-hidden">{agentName} said:</span>
          <div className="msg-body">
            <Markdown text={greeting} />
          </div>
        </div>
      ) : null}
      {messages.map((m, i) =>
        m.role === 'user' ? (
          <UserMessage key={m.id} message={m} last={i === lastIndex} actions={actions} authors={labelled} />
        ) : (
          <AssistantMessage key={m.id} message={m} active={m.id === activeMessageId} agentName={agentName} last={i === lastIndex} actions={actions} />
        ),
      )}
    </>
  );
}

'use client';

import { memo } from 'react';
import type { UIMessage } from '../_lib/types';
import { Markdown } from './Markdown';
import { ToolActivity } from './ToolActivity';
import { Spinner } from './icons';

function UserMessage({ message }: { message: UIMessage }) {
  const text = message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
  return (
    <div className="msg msg-user" data-testid="message-user">
      <span className="visually-hidden">You said:</span>
      <div className="msg-bubble">{text}</div>
    </div>
  );
}

const AssistantMessage = memo(function AssistantMessage({ message, active, agentName }: { message: UIMessage; active: boolean; agentName: string }) {
  const visible = message.parts.filter((p) => p.type !== 'text' || p.text !== '' || p.state === 'streaming');
  return (
    <div className="msg msg-assistant" data-testid="message-assistant" data-streaming={active ? 'true' : undefined}>
      <span className="visually-hidden">{agentName} said:</span>
      <div className="msg-body">
        {visible.map((part, i) => {
          if (part.type === 'tool') return <ToolActivity key={`tool-${part.toolCallId}`} part={part} />;
          if (part.type === 'reasoning') {
            return (
              <details key={`r-${part.id}-${i}`} className="reasoning">
                <summary>{part.state === 'streaming' ? 'Thinking…' : 'Thoughts'}</summary>
                <div className="reasoning-text">{part.text}</div>
              </details>
            );
          }
          return <Markdown key={`t-${part.id}-${i}`} text={part.text} />;
        })}
        {active && visible.length === 0 ? (
          <p className="msg-pending">
            <Spinner /> Thinking…
          </p>
        ) : null}
        {active && visible.length > 0 ? <span className="stream-caret" aria-hidden="true" /> : null}
      </div>
    </div>
  );
});

export interface MessageListProps {
  messages: UIMessage[];
  activeMessageId: string | null;
  agentName: string;
  greeting?: string;
}

/** The transcript, parts in the order they arrived: text, tools, text again. */
export function MessageList({ messages, activeMessageId, agentName, greeting }: MessageListProps) {
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
      {messages.map((m) =>
        m.role === 'user' ? (
          <UserMessage key={m.id} message={m} />
        ) : (
          <AssistantMessage key={m.id} message={m} active={m.id === activeMessageId} agentName={agentName} />
        ),
      )}
    </>
  );
}

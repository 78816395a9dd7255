'use client';

import { memo } from 'react';
import type { ToolPart } from '../_lib/types';
import { shortJson, toolLabel, toolResultSummary } from '../_lib/toolLabels';
import { AlertIcon, CheckIcon, Spinner } from './icons';
import { SubagentActivity } from './SubagentActivity';

const STATE_TEXT = { running: 'running', done: 'done', failed: 'failed' } as const;

/** One tool call: a live line while it runs, then done/failed; details show arguments and result. */
export const ToolActivity = memo(function ToolActivity({ part }: { part: ToolPart }) {
  if (part.toolName === 'spawn_subagent') return <SubagentActivity part={part} />;
  const label = toolLabel(part.toolName, part.input);
  const summary = part.state === 'done' ? toolResultSummary(part.toolName, part.output) : undefined;
  return (
    <details className={`tool tool-${part.state}`} data-testid="tool-activity" data-state={part.state} data-tool={part.toolName}>
      <summary>
        <span className="tool-icon">
          {part.state === 'running' ? <Spinner /> : part.state === 'done' ? <CheckIcon /> : <AlertIcon />}
        </span>
        <span className="tool-label">
          {label.verb}
          {label.target ? (
            <>
              {' '}
              <code>{label.target}</code>
            </>
          ) : null}
          {label.suffix ? ` ${label.suffix}` : null}
        </span>
        <span className="tool-state">{STATE_TEXT[part.state]}</span>
      </summary>
      <div className="tool-body">
        {part.state === 'failed' && part.errorText ? <p className="tool-error">{part.errorText}</p> : null}
        {summary ? <p className="tool-summary">{summary}</p> : null}
        <p className="tool-heading">
          Tool <code>{part.toolName}</code> — arguments
        </p>
        <pre className="tool-pre">{part.input === undefined ? '(waiting for arguments)' : shortJson(part.input)}</pre>
        {part.output !== undefined ? (
          <>
            <p className="tool-heading">Result</p>
            <pre className="tool-pre">{shortJson(part.output)}</pre>
          </>
        ) : null}
      </div>
    </details>
  );
});

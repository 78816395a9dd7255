'use client';

import './build.css';
import { memo } from 'react';
import { WRITING_TOOLS } from '../_lib/chatReducer';
import type { ToolPart } from '../_lib/types';
import { shortJson, toolLabel, toolResultSummary } from '../_lib/toolLabels';
import { ErrorMessage } from './ErrorMessage';
import { AlertIcon, CheckIcon, FilesIcon, Spinner } from './icons';
import { SubagentActivity } from './SubagentActivity';
import { asCommandResult, changedPath, commandOf, commandOutcome } from '../_lib/workspaces';
import { ToolLabelText } from './ToolLabelText';
import { CommandOutput } from './CommandOutput';

export interface ToolActivityProps {
  part: ToolPart;
  /** Opens a file the call wrote (virtual path); absent where files cannot be opened. */
  onOpenFile?: (path: string) => void;
  /** Whether a path can be opened here (a file outside the output folder cannot). */
  canOpenFile?: (path: string) => boolean;
}

/** One tool call: a live line while it runs, then what it did; details show arguments and result. */
export const ToolActivity = memo(function ToolActivity({ part, onOpenFile, canOpenFile }: ToolActivityProps) {
  if (part.toolName === 'spawn_subagent') return <SubagentActivity part={part} />;
  if (part.toolName === 'run_command') return <CommandActivity part={part} />;
  const label = toolLabel(part.toolName, part.input, part.state, part.output);
  const summary = part.state === 'done' ? toolResultSummary(part.toolName, part.output) : undefined;
  const written = part.state === 'done' && WRITING_TOOLS.has(part.toolName) && label.path && onOpenFile && (canOpenFile?.(label.path) ?? true) ? label.path : null;
  return (
    <div className="tool-row">
      <details className={`tool tool-${part.state}`} data-testid="tool-activity" data-state={part.state} data-tool={part.toolName}>
        <summary>
          <span className="tool-icon">
            {part.state === 'running' ? <Spinner /> : part.state === 'done' ? <CheckIcon /> : <AlertIcon />}
          </span>
          <span className="tool-label" data-testid="tool-label">
            <ToolLabelText label={label} running={part.state === 'running'} />
          </span>
          {part.state === 'failed' ? <span className="tool-state">failed</span> : null}
        </summary>
        <div className="tool-body">
          {part.state === 'failed' && part.errorText ? <ErrorMessage className="tool-error" message={part.errorText} code={part.errorCode} /> : null}
          {summary ? <p className="tool-summary">{summary}</p> : null}
          {label.path ? (
            <p className="tool-path">
              <span className="tool-heading-inline">Path</span> <code>{label.path}</code>
            </p>
          ) : null}
          <p className="tool-heading">
            Tool <code>{part.toolName}</code> — arguments
          </p>
          <pre className="tool-pre" tabIndex={0}>{part.input === undefined ? '(waiting for arguments)' : shortJson(part.input)}</pre>
          {part.output !== undefined ? (
            <>
              <p className="tool-heading">Result</p>
              <pre className="tool-pre" tabIndex={0}>{shortJson(part.output)}</pre>
            </>
          ) : null}
        </div>
      </details>
      {written ? (
        <button type="button" className="button button-small tool-open" data-testid="tool-open" onClick={() => onOpenFile?.(written)}>
          <FilesIcon /> Open<span className="visually-hidden"> {label.target}</span>
        </button>
      ) : null}
    </div>
  );
});

/**
 * A command the agent ran in its workspace: the line and its outcome (exit code, time) at a glance,
 * the output on demand, in the order it came.
 */
export function CommandActivity({ part }: { part: ToolPart }) {
  const label = toolLabel(part.toolName, part.input, part.state, part.output);
  const result = part.state === 'done' ? asCommandResult(part.output) : null;
  // The line as it ran when the result says it (variables resolved), else as the model wrote it.
  const command = result?.command ?? commandOf(part.input);
  const bad = !!result && (!!result.stopped || (typeof result.exit_code === 'number' && result.exit_code !== 0));
  const files = result?.files_changed ?? [];
  return (
    <div className="tool-row">
      <details className={`tool tool-${part.state} tool-command`} data-testid="tool-activity" data-state={part.state} data-tool={part.toolName}>
        <summary>
          <span className="tool-icon">{part.state === 'running' ? <Spinner /> : part.state === 'done' && !bad ? <CheckIcon /> : <AlertIcon />}</span>
          <span className="tool-label" data-testid="tool-label">
            <ToolLabelText label={label} running={part.state === 'running'} />
          </span>
          {result ? (
            <span className={`tool-state ${bad ? 'command-bad' : 'command-ok'}`} data-testid="command-outcome">
              {commandOutcome(result)}
            </span>
          ) : part.state === 'failed' ? (
            <span className="tool-state">failed</span>
          ) : null}
        </summary>
        <div className="tool-body">
          {part.state === 'failed' && part.errorText ? <ErrorMessage className="tool-error" message={part.errorText} code={part.errorCode} /> : null}
          <p className="tool-heading">Command</p>
          <pre className="tool-pre command-text" tabIndex={0} data-testid="command-line">
            {command || '(waiting for the command)'}
          </pre>
          {result?.hint ? <p className="tool-summary">{result.hint}</p> : null}
          {result ? (
            <>
              <CommandOutput result={result} />
              {files.length ? (
                <>
                  <p className="tool-heading">Files changed</p>
                  <ul className="tool-files">
                    {files.slice(0, 50).map((f) => (
                      <li key={changedPath(f)}>
                        <code>{changedPath(f)}</code>
                      </li>
                    ))}
                    {files.length > 50 ? <li>and {files.length - 50} more</li> : null}
                  </ul>
                </>
              ) : null}
            </>
          ) : part.output !== undefined ? (
            <>
              <p className="tool-heading">Result</p>
              <pre className="tool-pre" tabIndex={0}>{shortJson(part.output)}</pre>
            </>
          ) : null}
        </div>
      </details>
    </div>
  );
}

'use client';

import { memo } from 'react';
import type { NestedToolCall, ToolPart } from '../_lib/types';
import { shortJson, toolLabel } from '../_lib/toolLabels';
import { ErrorMessage } from './ErrorMessage';
import { AlertIcon, CheckIcon, Spinner } from './icons';
import { ToolLabelText } from './ToolLabelText';

const STATE_TEXT = { running: 'running', done: 'done', failed: 'failed' } as const;
const MAX_TITLE = 90;

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function title(input: unknown): string {
  const instructions = obj(input).instructions;
  const line = typeof instructions === 'string' ? (instructions.split('\n').find((l) => l.trim()) ?? '').trim() : '';
  if (!line) return 'sub-task';
  return line.length > MAX_TITLE ? `${line.slice(0, MAX_TITLE)}…` : line;
}

/** What the finished call reported: `{ steps, result, tool_calls }`, at the top or, on failure, in error.details. */
function report(output: unknown): { steps?: number; result?: string; calls?: NestedToolCall[] } {
  const o = obj(output);
  const r = o.ok === false ? obj(obj(o.error).details) : o;
  const calls = Array.isArray(r.tool_calls)
    ? r.tool_calls.map((c, i): NestedToolCall => {
        const call = obj(c);
        return {
          id: String(i),
          toolName: typeof call.name === 'string' ? call.name : 'tool',
          input: call.args,
          state: call.ok === false ? 'failed' : 'done',
          ...(typeof call.error === 'string' ? { errorText: call.error } : {}),
        };
      })
    : undefined;
  return {
    steps: typeof r.steps === 'number' ? r.steps : undefined,
    result: typeof r.result === 'string' && r.result ? r.result : undefined,
    calls,
  };
}

function StateIcon({ state }: { state: NestedToolCall['state'] }) {
  return state === 'running' ? <Spinner /> : state === 'done' ? <CheckIcon /> : <AlertIcon />;
}

/**
 * A spawn_subagent call as one line, "Subagent: <first line of its task> — N steps", that opens
 * onto the subagent's own tool calls: live from the stream while it runs, from the stored result
 * once it is done (so a reloaded conversation shows the same).
 */
export const SubagentActivity = memo(function SubagentActivity({ part }: { part: ToolPart }) {
  const done = report(part.output);
  const live = part.nested ?? [];
  const calls = (done.calls ?? live).map((c) =>
    // A call still open when its turn ended never got an answer.
    part.state !== 'running' && c.state === 'running' ? { ...c, state: 'failed' as const, errorText: c.errorText ?? 'stopped' } : c,
  );
  const steps = done.steps ?? live.reduce((n, c) => Math.max(n, c.step ?? 0), 0);
  return (
    <details className={`tool tool-${part.state} subagent`} data-testid="subagent-activity" data-state={part.state} data-tool={part.toolName}>
      <summary>
        <span className="tool-icon">
          <StateIcon state={part.state} />
        </span>
        <span className="tool-label">
          Subagent: {title(part.input)}
          {steps ? ` — ${steps} ${steps === 1 ? 'step' : 'steps'}` : null}
        </span>
        <span className="tool-state">{STATE_TEXT[part.state]}</span>
      </summary>
      <div className="tool-body">
        {part.state === 'failed' && part.errorText ? <ErrorMessage className="tool-error" message={part.errorText} code={part.errorCode} /> : null}
        {calls.length ? (
          <ol className="subagent-calls" aria-label="Subagent tool calls">
            {calls.map((c) => {
              const label = toolLabel(c.toolName, c.input, c.state);
              return (
                <li key={c.id} className={`tool-${c.state}`} data-state={c.state}>
                  <span className="tool-icon">
                    <StateIcon state={c.state} />
                  </span>
                  <span className="tool-label">
                    <ToolLabelText label={label} {...(c.state === 'failed' && c.errorText ? { error: c.errorText } : {})} />
                  </span>
                </li>
              );
            })}
          </ol>
        ) : (
          <p className="tool-summary">{part.state === 'running' ? 'Working…' : 'No tool calls.'}</p>
        )}
        {done.result ? (
          <>
            <p className="tool-heading">Result</p>
            <pre className="tool-pre">{shortJson(done.result)}</pre>
          </>
        ) : null}
      </div>
    </details>
  );
});

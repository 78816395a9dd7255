'use client';

import './build.css';
import { memo, useMemo } from 'react';
import { ansiClass, ansiRuns, PLAIN, type AnsiStyle } from '../_lib/ansi';
import { outputBlocks, type RunCommandResult } from '../_lib/workspaces';

/** Terminal text with its colours: each styled run a span of text (React escapes it; no HTML is made). */
export const AnsiText = memo(function AnsiText({ text, start = PLAIN }: { text: string; start?: AnsiStyle }) {
  const runs = useMemo(() => ansiRuns(text, start).runs, [text, start]);
  return (
    <>
      {runs.map((r, i) => {
        const cls = ansiClass(r.style);
        return cls ? (
          <span key={i} className={cls}>
            {r.text}
          </span>
        ) : (
          r.text
        );
      })}
    </>
  );
});

/**
 * A command's output in one box, in the order it came (stdout and stderr interleaved as the
 * command wrote them, when the server kept the order), stderr's lines marked at their left and
 * named for screen readers. Stderr is a stream, not a verdict: passing test runners write there.
 */
export function CommandOutput({ result, testId = 'command-output' }: { result: Pick<RunCommandResult, 'stdout' | 'stderr' | 'transcript' | 'cut'>; testId?: string }) {
  const { blocks, ordered, omitted } = useMemo(() => outputBlocks(result), [result]);
  // Each stream keeps its own colour state across its blocks, as it would in its own terminal.
  const starts = useMemo(() => {
    const state: Record<'stdout' | 'stderr', AnsiStyle> = { stdout: PLAIN, stderr: PLAIN };
    return blocks.map((b) => {
      const start = state[b.stream];
      state[b.stream] = ansiRuns(b.text, start).end;
      return start;
    });
  }, [blocks]);
  const hasErr = blocks.some((b) => b.stream === 'stderr');
  return (
    <>
      <p className="tool-heading">
        Output{result.cut ? ' (cut: its head and tail)' : ''}
        {hasErr ? <span className="output-legend"> · lines marked at the left came on stderr{ordered ? '' : ' (shown after stdout: this result does not keep their order)'}</span> : null}
      </p>
      <pre className="tool-pre command-output" tabIndex={0} data-testid={testId} data-ordered={ordered ? 'true' : 'false'}>
        {omitted ? `… (${omitted} earlier characters not shown)\n` : null}
        {blocks.length
          ? blocks.map((b, i) =>
              b.stream === 'stderr' ? (
                <span key={i} className="out-stderr" data-stream="stderr">
                  <span className="visually-hidden">[stderr] </span>
                  <AnsiText text={b.text} start={starts[i]} />
                  <span className="visually-hidden"> [end of stderr]</span>
                </span>
              ) : (
                <span key={i} data-stream="stdout">
                  <AnsiText text={b.text} start={starts[i]} />
                </span>
              ),
            )
          : '(no output)'}
      </pre>
    </>
  );
}

'use client';

import type { ToolLabel } from '../_lib/toolLabels';

/** A tool call's line in words: verb, what it is about, and any extra words. */
export function ToolLabelText({ label, running, error }: { label: ToolLabel; running?: boolean; error?: string }) {
  return (
    <>
      {label.verb}
      {label.target ? (
        <>
          {' '}
          <span className="tool-target">{label.target}</span>
        </>
      ) : null}
      {label.suffix ? ` ${label.suffix}` : null}
      {running ? '…' : null}
      {error ? <span className="tool-error"> — {error}</span> : null}
    </>
  );
}

'use client';

import { useEffect, useRef, type MouseEvent } from 'react';

export interface NotFoundProps {
  title: string;
  /** What happened and what to do, in plain words. */
  children: React.ReactNode;
  backHref: string;
  backLabel: string;
  onBack: () => void;
}

/** A page for something the address names that is not there for this person: words, and a way back. */
export function NotFound({ title, children, backHref, backLabel, onBack }: NotFoundProps) {
  const headingRef = useRef<HTMLHeadingElement>(null);
  useEffect(() => headingRef.current?.focus(), []);
  const back = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    onBack();
  };
  return (
    <section className="not-found" aria-labelledby="not-found-title" data-testid="not-found">
      <h1 id="not-found-title" ref={headingRef} tabIndex={-1}>
        {title}
      </h1>
      <div className="not-found-body">{children}</div>
      <p>
        <a className="button button-primary" href={backHref} onClick={back} data-testid="not-found-back">
          {backLabel}
        </a>
      </p>
    </section>
  );
}

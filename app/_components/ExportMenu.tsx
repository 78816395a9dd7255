'use client';

import { useEffect, useRef } from 'react';
import { exportUrl } from '../_lib/api';
import { ExportIcon } from './icons';

/** Download the conversation as Markdown or JSON; closes on a pick, Escape or a click elsewhere. */
export function ExportMenu({ conversationId }: { conversationId: string }) {
  const ref = useRef<HTMLDetailsElement>(null);
  useEffect(() => {
    const close = (e: Event) => {
      const el = ref.current;
      if (!el?.open) return;
      if (e instanceof KeyboardEvent) {
        if (e.key !== 'Escape') return;
        el.open = false;
        el.querySelector('summary')?.focus();
        return;
      }
      if (!el.contains(e.target as Node)) el.open = false;
    };
    document.addEventListener('mousedown', close);
    document.addEventListener('keydown', close);
    return () => {
      document.removeEventListener('mousedown', close);
      document.removeEventListener('keydown', close);
    };
  }, []);
  const picked = () => {
    if (ref.current) ref.current.open = false;
  };
  return (
    <details ref={ref} className="menu export-menu" data-testid="export-menu">
      <summary className="icon-button" aria-label="Export conversation" title="Export conversation">
        <ExportIcon />
      </summary>
      <div className="menu-list">
        <a className="menu-item" href={exportUrl(conversationId, 'md')} download onClick={picked} data-testid="export-md">
          Markdown (.md)
        </a>
        <a className="menu-item" href={exportUrl(conversationId, 'json')} download onClick={picked} data-testid="export-json">
          JSON (.json)
        </a>
      </div>
    </details>
  );
}

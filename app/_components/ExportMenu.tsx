'use client';

import { useEffect, useRef, useState } from 'react';
import { exportUrl } from '../_lib/api';
import { useEscape } from '../_lib/escape';
import { ExportIcon } from './icons';

/** Download the conversation as Markdown or JSON; closes on a pick, Escape or a click elsewhere. */
export function ExportMenu({ conversationId }: { conversationId: string }) {
  const ref = useRef<HTMLDetailsElement>(null);
  const [open, setOpen] = useState(false);
  // On the page's Escape stack: one Escape closes this menu, not the viewer docked beside it too.
  useEscape(open, () => {
    const el = ref.current;
    if (!el) return;
    el.open = false;
    el.querySelector('summary')?.focus();
  });
  useEffect(() => {
    const close = (e: Event) => {
      const el = ref.current;
      if (el?.open && !el.contains(e.target as Node)) el.open = false;
    };
    document.addEventListener('mousedown', close);
    return () => document.removeEventListener('mousedown', close);
  }, []);
  const picked = () => {
    if (ref.current) ref.current.open = false;
  };
  return (
    <details ref={ref} className="menu export-menu" data-testid="export-menu" onToggle={(e) => setOpen(e.currentTarget.open)}>
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

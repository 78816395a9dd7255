'use client';

import { useEffect, useRef, useState } from 'react';
import { readFileContent } from '../_lib/api';
import { Markdown } from './Markdown';
import { Spinner } from './icons';

type Content = { state: 'loading' } | { state: 'markdown' | 'text'; text: string } | { state: 'binary' | 'error'; message: string };

/** Loads a file's content for display; `reloadKey` changing reads it again (the file was rewritten). */
export function useFileContent(url: string, path: string, reloadKey: unknown, opts: { keepWhileLoading?: boolean } = {}): Content {
  const [content, setContent] = useState<Content>({ state: 'loading' });
  const shown = useRef<string | null>(null);
  const keep = !!opts.keepWhileLoading;
  useEffect(() => {
    const ctrl = new AbortController();
    // Reading the same file again (it was rewritten) keeps the old text up until the new one is in.
    const same = keep && shown.current === url;
    shown.current = url;
    if (!same) setContent((c) => (c.state === 'loading' ? c : { state: 'loading' }));
    readFileContent(url, path, ctrl.signal).then(
      (c) => setContent(c.kind === 'binary' ? { state: 'binary', message: 'This file cannot be shown here; download it instead.' } : { state: c.kind, text: c.text }),
      (e: Error) => {
        if (e?.name !== 'AbortError') setContent({ state: 'error', message: e?.message || 'Could not reach the server.' });
      },
    );
    return () => ctrl.abort();
  }, [url, path, reloadKey, keep]);
  return content;
}

/** Markdown rendered, other text as is, anything else as a note. */
export function FileContentView({ content }: { content: Content }) {
  switch (content.state) {
    case 'loading':
      return (
        <p className="msg-pending">
          <Spinner /> Loading…
        </p>
      );
    case 'markdown':
      return <Markdown text={content.text} />;
    case 'text':
      return <pre className="viewer-pre">{content.text}</pre>;
    default:
      return <p className={content.state === 'error' ? 'notice notice-error' : 'notice notice-info'}>{content.message}</p>;
  }
}

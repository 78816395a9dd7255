'use client';

import { memo, useRef, useState, type ReactNode } from 'react';
import ReactMarkdown, { type Components } from 'react-markdown';
import remarkGfm from 'remark-gfm';
import { CheckIcon, CopyIcon } from './icons';

async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    /* fall through to the selection-based copy (insecure origins, denied permission) */
  }
  try {
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    const ok = document.execCommand?.('copy') ?? false;
    ta.remove();
    return ok;
  } catch {
    return false;
  }
}

function CodeBlock({ children }: { children?: ReactNode }) {
  const ref = useRef<HTMLPreElement>(null);
  const [copied, setCopied] = useState<'idle' | 'done' | 'failed'>('idle');
  const onCopy = async () => {
    const ok = await copyText(ref.current?.textContent ?? '');
    setCopied(ok ? 'done' : 'failed');
    window.setTimeout(() => setCopied('idle'), 1500);
  };
  return (
    <div className="codeblock">
      <button type="button" className="icon-button codeblock-copy" onClick={onCopy} aria-label={copied === 'done' ? 'Copied' : 'Copy code'} title="Copy code">
        {copied === 'done' ? <CheckIcon /> : <CopyIcon />}
        <span className="codeblock-copy-text" aria-hidden="true">{copied === 'done' ? 'Copied' : copied === 'failed' ? 'Copy failed' : 'Copy'}</span>
      </button>
      <pre ref={ref} tabIndex={0}>{children}</pre>
    </div>
  );
}

const components: Components = {
  pre: ({ children }) => <CodeBlock>{children}</CodeBlock>,
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
  // Model output must not make the browser fetch remote images; show a link instead.
  img: ({ src, alt }) =>
    typeof src === 'string' && src ? (
      <a href={src} target="_blank" rel="noopener noreferrer" className="md-image-link">
        [image: {alt || src}]
      </a>
    ) : (
      <span>[image{alt ? `: ${alt}` : ''}]</span>
    ),
  table: ({ children }) => (
    <div className="table-wrap" tabIndex={0}>
      <table>{children}</table>
    </div>
  ),
};

const plugins = [remarkGfm];

/** Memoised on the text so streaming re-renders only the part that grows. */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={plugins} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});

'use client';

import { createContext, memo, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import ReactMarkdown, { type Components, type Options } from 'react-markdown';
import remarkGfm from 'remark-gfm';
import { copyText } from '../_lib/clipboard';
import { renderMermaid } from '../_lib/mermaid';
import { CheckIcon, CopyIcon } from './icons';

type Plugins = NonNullable<Options['rehypePlugins']>;
type HastNode = { type: string; tagName?: string; value?: string; properties?: Record<string, unknown>; children?: HastNode[] };

/** Set while the text is still arriving: diagrams wait for the whole source. */
const MarkdownContext = createContext({ streaming: false });
/** A task-list item's text, so its checkbox has a name. */
const TaskContext = createContext<string | null>(null);

function textOf(node: HastNode | undefined, skipLists = false): string {
  if (!node) return '';
  if (node.type === 'text') return node.value ?? '';
  if (skipLists && (node.tagName === 'ul' || node.tagName === 'ol')) return '';
  return (node.children ?? []).map((c) => textOf(c, skipLists)).join('');
}

function classes(node: HastNode | undefined): string[] {
  const c = node?.properties?.className;
  return Array.isArray(c) ? c.map(String) : typeof c === 'string' ? c.split(/\s+/) : [];
}

const SHORT_CELL = 32;
function cellClass(node: HastNode | undefined): string | undefined {
  return textOf(node).trim().length <= SHORT_CELL ? 'cell-short' : undefined;
}

function languageOf(pre: HastNode | undefined): string | null {
  const code = pre?.children?.find((c) => c.type === 'element' && c.tagName === 'code');
  const lang = classes(code).find((c) => c.startsWith('language-'));
  return lang ? lang.slice('language-'.length) : null;
}

// The highlighter (highlight.js grammars) is loaded the first time a code block shows up.
let highlightPlugins: Plugins | null = null;
let highlightLoading: Promise<Plugins | null> | null = null;
function loadHighlight(): Promise<Plugins | null> {
  highlightLoading ??= import('rehype-highlight').then(
    (m) => (highlightPlugins = [[m.default, { detect: false }]]),
    () => null,
  );
  return highlightLoading;
}
const FENCE = /(^|\n) {0,3}(```|~~~)/;

function useHighlight(text: string): Plugins | null {
  const needed = FENCE.test(text);
  const [plugins, setPlugins] = useState(highlightPlugins);
  useEffect(() => {
    if (!needed || plugins) return;
    let live = true;
    void loadHighlight().then((p) => live && p && setPlugins(p));
    return () => {
      live = false;
    };
  }, [needed, plugins]);
  return needed ? plugins : null;
}

function useDarkScheme(): boolean {
  const [dark, setDark] = useState(false);
  useEffect(() => {
    const mq = window.matchMedia?.('(prefers-color-scheme: dark)');
    if (!mq) return;
    setDark(mq.matches);
    const on = (e: MediaQueryListEvent) => setDark(e.matches);
    mq.addEventListener?.('change', on);
    return () => mq.removeEventListener?.('change', on);
  }, []);
  return dark;
}

function CopyButton({ getText, label }: { getText: () => string; label: string }) {
  const [copied, setCopied] = useState<'idle' | 'done' | 'failed'>('idle');
  const onCopy = async () => {
    const ok = await copyText(getText());
    setCopied(ok ? 'done' : 'failed');
    window.setTimeout(() => setCopied('idle'), 1500);
  };
  return (
    <button type="button" className="button button-small codeblock-copy" onClick={onCopy} title={label}>
      {copied === 'done' ? <CheckIcon /> : <CopyIcon />}
      <span>{copied === 'done' ? 'Copied' : copied === 'failed' ? 'Copy failed' : 'Copy'}</span>
      <span className="visually-hidden"> code</span>
    </button>
  );
}

function CodeBlock({ children, language }: { children?: ReactNode; language: string | null }) {
  const ref = useRef<HTMLPreElement>(null);
  return (
    <div className="codeblock" data-testid="codeblock" data-language={language ?? undefined}>
      <div className="codeblock-head">
        <span className="codeblock-lang">{language ?? 'code'}</span>
        <CopyButton getText={() => ref.current?.textContent ?? ''} label="Copy code" />
      </div>
      <pre ref={ref} tabIndex={0}>{children}</pre>
    </div>
  );
}

function MermaidDiagram({ source }: { source: string }) {
  const { streaming } = useContext(MarkdownContext);
  const dark = useDarkScheme();
  const [result, setResult] = useState<{ svg?: string; error?: boolean }>({});
  useEffect(() => {
    if (streaming) return;
    let live = true;
    renderMermaid(source, dark).then(
      (svg) => live && setResult({ svg }),
      () => live && setResult({ error: true }),
    );
    return () => {
      live = false;
    };
  }, [source, streaming, dark]);
  const kind = /^\s*(\w[\w-]*)/.exec(source)?.[1];
  return (
    <figure className="mermaid" data-testid="mermaid" data-state={result.svg ? 'rendered' : result.error ? 'error' : 'pending'}>
      {result.svg ? (
        // Mermaid's strict mode sanitises the SVG (DOMPurify); the source stays below as the text version.
        <div className="mermaid-svg" role="img" aria-label={`Diagram${kind ? ` (${kind})` : ''}`} dangerouslySetInnerHTML={{ __html: result.svg }} />
      ) : result.error ? (
        <p className="notice notice-warn">This diagram could not be drawn; its source is below.</p>
      ) : (
        <p className="msg-pending">Drawing the diagram…</p>
      )}
      <details className="mermaid-source" open={result.error ? true : undefined}>
        <summary>Diagram source</summary>
        <pre tabIndex={0}>{source}</pre>
      </details>
    </figure>
  );
}

const components: Components = {
  pre: ({ children, node }) => {
    const language = languageOf(node as HastNode | undefined);
    if (language === 'mermaid') return <MermaidDiagram source={textOf(node as HastNode).replace(/\n$/, '')} />;
    return <CodeBlock language={language}>{children}</CodeBlock>;
  },
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
    <div className="table-wrap" tabIndex={0} data-testid="table-wrap">
      <table>{children}</table>
    </div>
  ),
  // Short cells (names, dates, numbers) stay on one line; longer prose wraps between words.
  th: ({ children, node, style }) => (
    <th className={cellClass(node as HastNode)} style={style}>
      {children}
    </th>
  ),
  td: ({ children, node, style }) => (
    <td className={cellClass(node as HastNode)} style={style}>
      {children}
    </td>
  ),
  li: ({ children, node, className }) => {
    if (!classes(node as HastNode | undefined).includes('task-list-item')) return <li className={className}>{children}</li>;
    return (
      <TaskContext.Provider value={textOf(node as HastNode, true).trim()}>
        <li className={className}>{children}</li>
      </TaskContext.Provider>
    );
  },
  input: function TaskCheckbox({ type, checked }) {
    const label = useContext(TaskContext);
    if (type !== 'checkbox') return null;
    return <input type="checkbox" className="task-check" checked={!!checked} readOnly disabled aria-label={label ? `${label} (${checked ? 'done' : 'to do'})` : checked ? 'Done' : 'To do'} />;
  },
};

const remarkPlugins = [remarkGfm];

/** Memoised on the text so streaming re-renders only the part that grows. */
export const Markdown = memo(function Markdown({ text, streaming = false }: { text: string; streaming?: boolean }) {
  const rehypePlugins = useHighlight(text);
  return (
    <MarkdownContext.Provider value={streaming ? STREAMING : DONE}>
      <div className="markdown">
        <ReactMarkdown remarkPlugins={remarkPlugins} rehypePlugins={rehypePlugins ?? undefined} components={components}>
          {text}
        </ReactMarkdown>
      </div>
    </MarkdownContext.Provider>
  );
});
const STREAMING = { streaming: true };
const DONE = { streaming: false };

'use client';

import { memo, useEffect, useMemo, useState } from 'react';
import type { DiffFile, DiffLine } from '../_lib/workspaces';

/** Lines shown at first, and added by each "Show more": a huge diff never renders at once. */
export const DIFF_PAGE_LINES = 400;

type Highlighter = { highlight: (code: string, opts: { language: string; ignoreIllegals?: boolean }) => { value: string }; getLanguage: (name: string) => unknown };
let hljs: Highlighter | null = null;
let hljsLoading: Promise<Highlighter | null> | null = null;
// The grammars load the first time a diff shows, not with the page.
function loadHighlighter(): Promise<Highlighter | null> {
  hljsLoading ??= import('highlight.js/lib/common').then(
    (m) => (hljs = ((m as { default?: Highlighter }).default ?? (m as unknown as Highlighter))),
    () => null,
  );
  return hljsLoading;
}

const EXT_LANG: Record<string, string> = {
  js: 'javascript', mjs: 'javascript', cjs: 'javascript', jsx: 'javascript', ts: 'typescript', tsx: 'typescript',
  py: 'python', rb: 'ruby', rs: 'rust', go: 'go', java: 'java', kt: 'kotlin', c: 'c', h: 'c', cc: 'cpp', cpp: 'cpp', hpp: 'cpp',
  cs: 'csharp', php: 'php', sh: 'bash', bash: 'bash', zsh: 'bash', yml: 'yaml', yaml: 'yaml', json: 'json', md: 'markdown',
  css: 'css', scss: 'scss', html: 'xml', xml: 'xml', svg: 'xml', sql: 'sql', toml: 'ini', ini: 'ini', swift: 'swift',
};

export function languageOf(path: string): string | null {
  const name = path.split('/').pop() ?? '';
  if (name === 'Makefile') return 'makefile';
  if (name === 'Dockerfile') return 'dockerfile';
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  return ext ? (EXT_LANG[ext] ?? null) : null;
}

/** Very long lines are shown as text: highlighting them is the costly part, and no one reads them. */
const MAX_HIGHLIGHT_CHARS = 2000;

function CodeText({ text, language, hl }: { text: string; language: string | null; hl: Highlighter | null }) {
  if (!hl || !language || !hl.getLanguage(language) || text.length > MAX_HIGHLIGHT_CHARS) return <>{text}</>;
  // highlight.js escapes the code it is given; its output is its own spans around that text.
  return <span dangerouslySetInnerHTML={{ __html: hl.highlight(text, { language, ignoreIllegals: true }).value }} />;
}

const SIGN: Record<DiffLine['kind'], string> = { add: '+', del: '−', context: ' ', hunk: '', meta: '' };
const SPOKEN: Partial<Record<DiffLine['kind'], string>> = { add: 'added: ', del: 'removed: ' };

/** One file's diff as numbered lines, added and removed ones marked, at most `limit` of them until asked. */
export const FileDiff = memo(function FileDiff({ file, pageLines = DIFF_PAGE_LINES }: { file: DiffFile; pageLines?: number }) {
  const [limit, setLimit] = useState(pageLines);
  const [hl, setHl] = useState<Highlighter | null>(hljs);
  const language = useMemo(() => languageOf(file.path), [file.path]);
  useEffect(() => {
    if (hl || !language) return;
    let live = true;
    void loadHighlighter().then((h) => live && setHl(h));
    return () => {
      live = false;
    };
  }, [hl, language]);
  // The header lines git writes (index, mode, ---/+++) say nothing a reader needs here.
  const lines = useMemo(() => file.lines.filter((l) => l.kind !== 'meta' || /^(Binary files|new file mode|deleted file mode|rename from|rename to|similarity index)/.test(l.text)), [file.lines]);
  const shown = lines.slice(0, limit);
  const rest = lines.length - shown.length;
  return (
    <div className="diff-file" data-testid="diff-file" data-path={file.path}>
      <div className="diff-lines hljs" role="region" aria-label={`Changes in ${file.path}`} tabIndex={0}>
        {shown.map((l, i) => (
          <div key={i} className={`diff-line diff-${l.kind}`} data-kind={l.kind}>
            <span className="diff-no" aria-hidden="true">
              {l.oldNo ?? ''}
            </span>
            <span className="diff-no" aria-hidden="true">
              {l.newNo ?? ''}
            </span>
            <span className="diff-sign" aria-hidden="true">
              {SIGN[l.kind]}
            </span>
            <code className="diff-code">
              {SPOKEN[l.kind] ? <span className="visually-hidden">{SPOKEN[l.kind]}</span> : null}
              {l.kind === 'hunk' || l.kind === 'meta' ? l.text : <CodeText text={l.text} language={language} hl={hl} />}
            </code>
          </div>
        ))}
        {lines.length === 0 ? <p className="diff-empty">{file.binary ? 'A binary file: no lines to show.' : 'No line changes.'}</p> : null}
      </div>
      {rest > 0 ? (
        <p className="diff-more">
          Showing {shown.length} of {lines.length} lines.{' '}
          <button type="button" className="button button-small" onClick={() => setLimit((n) => n + pageLines)} data-testid="diff-show-more">
            Show more ({Math.min(rest, pageLines)} more lines)
          </button>
        </p>
      ) : null}
    </div>
  );
});

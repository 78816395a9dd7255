/**
 * Mermaid is large (a few MB with d3 and its layouts), so it is imported only when a diagram is
 * on screen. Renders run one at a time: mermaid keeps global state while it lays a diagram out.
 */
type MermaidApi = {
  initialize: (config: Record<string, unknown>) => void;
  render: (id: string, text: string) => Promise<{ svg: string }>;
};

let mermaidPromise: Promise<MermaidApi> | null = null;
let queue: Promise<unknown> = Promise.resolve();
let counter = 0;
let theme: string | null = null;

function loadMermaid(): Promise<MermaidApi> {
  mermaidPromise ??= import('mermaid').then((m) => (m.default ?? m) as unknown as MermaidApi);
  return mermaidPromise;
}

/** The diagram as sanitised SVG (mermaid's `strict` security level: no scripts, no click handlers). */
export function renderMermaid(source: string, dark: boolean): Promise<string> {
  const run = async () => {
    const mermaid = await loadMermaid();
    const wanted = dark ? 'dark' : 'default';
    if (theme !== wanted) {
      mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', suppressErrorRendering: true, theme: wanted, fontFamily: 'system-ui, sans-serif' });
      theme = wanted;
    }
    counter += 1;
    const { svg } = await mermaid.render(`mermaid-diagram-${counter}`, source);
    return svg;
  };
  const result = queue.then(run, run);
  queue = result.catch(() => undefined);
  return result;
}

import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// The module rules ARCHITECTURE.md states, checked on the code (lib's layers, then its rooms): every import counts, type-only
// imports and re-exports included, since each one couples two files.
const LIB = __dirname;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === '__fixtures__' ? [] : sourceFiles(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

function resolveLocal(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts')]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  return null;
}

const files = sourceFiles(LIB);
const imports = new Map<string, { spec: string; target: string | null }[]>(
  files.map((f) => [f, ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true).importedFiles.map((i) => ({ spec: i.fileName, target: resolveLocal(f, i.fileName) }))]),
);
const rel = (f: string) => path.relative(LIB, f).split(path.sep).join('/');
const isTest = (f: string) => /\.test\.tsx?$/.test(f);
/**
 * lib's floors, bottom to top: a file imports only from its own layer and the ones below. Each is
 * a folder of lib; its rooms (folders) are the modules ARCHITECTURE.md lists.
 */
const LAYERS = ['core', 'content', 'model', 'store', 'sandbox', 'engine', 'services'] as const;
/** lib/errors: the one errors module the web layer imports, a re-export of lib/core/errors. */
const ERRORS_FACADE = 'errors';

/** A file's room: the folder under its layer (`engine/chat/turn.ts` → `chat`); services is one room. */
const roomOf = (f: string) => {
  const [top, second] = rel(f).split('/');
  return (LAYERS as readonly string[]).includes(top) && top !== 'services' && second !== undefined ? second : top;
};
const layerIndex = (relPath: string) => (LAYERS as readonly string[]).indexOf(relPath.split('/')[0]);

/** Imports that go up a floor, from an edge list of lib-relative paths (`core/paths/x.ts` → `engine/tools/y.ts`). */
function upwardImports(edges: readonly { from: string; to: string }[]): string[] {
  return edges
    .filter((e) => {
      const from = layerIndex(e.from);
      const to = layerIndex(e.to);
      return from >= 0 && to >= 0 && to > from;
    })
    .map((e) => `${e.from} (${LAYERS[layerIndex(e.from)]}) → ${e.to} (${LAYERS[layerIndex(e.to)]})`);
}

/** Top-level folders of lib that are no layer: a new flat folder has to take its floor. */
function foldersOutsideLayers(folders: readonly string[]): string[] {
  return folders.filter((f) => !(LAYERS as readonly string[]).includes(f) && f !== ERRORS_FACADE);
}

describe('lib in layers', () => {
  it('every top-level folder of lib is a layer (or the errors facade)', () => {
    const folders = fs.readdirSync(LIB, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(foldersOutsideLayers(folders)).toEqual([]);
    for (const layer of LAYERS) expect(folders).toContain(layer);
  });

  // Tests are left out: one may reach up to exercise how floors meet (the errors test loads a
  // second copy of lib/content/versions to see its errors recognised by brand).
  it('a file imports only from its own layer and the ones below', () => {
    const edges = [...imports]
      .filter(([f]) => !isTest(f))
      .flatMap(([f, list]) => list.filter((i) => i.target && i.target.startsWith(LIB + path.sep)).map((i) => ({ from: rel(f), to: rel(i.target!) })));
    expect(edges.length).toBeGreaterThan(500);
    expect(upwardImports(edges)).toEqual([]);
  });

  it('the checks fail on a planted upward import and a planted flat folder', () => {
    const planted = [
      { from: 'core/paths/sandbox.ts', to: 'engine/tools/index.ts' },
      { from: 'store/conversations/sql-store.ts', to: 'services/turns.ts' },
      // Downward and sideways are fine.
      { from: 'engine/tools/index.ts', to: 'core/paths/sandbox.ts' },
      { from: 'content/agents/catalog.ts', to: 'content/skills/discover.ts' },
    ];
    expect(upwardImports(planted)).toEqual([
      'core/paths/sandbox.ts (core) → engine/tools/index.ts (engine)',
      'store/conversations/sql-store.ts (store) → services/turns.ts (services)',
    ]);
    expect(foldersOutsideLayers(['core', 'engine', 'errors', 'journey'])).toEqual(['journey']);
  });

  it('lib/errors only re-exports lib/core/errors, and nothing in lib imports it (the web layer does)', () => {
    const facade = path.join(LIB, ERRORS_FACADE);
    expect(fs.readdirSync(facade)).toEqual(['index.ts']);
    const source = ts.createSourceFile('index.ts', fs.readFileSync(path.join(facade, 'index.ts'), 'utf8'), ts.ScriptTarget.Latest);
    expect(source.statements.map((s) => (ts.isExportDeclaration(s) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier) ? s.moduleSpecifier.text : s.getText(source)))).toEqual(['../core/errors']);
    const offending = [...imports]
      .filter(([f]) => roomOf(f) !== ERRORS_FACADE)
      .flatMap(([f, list]) => list.filter((i) => i.target && rel(i.target).startsWith(`${ERRORS_FACADE}/`)).map((i) => `${rel(f)} → ${i.spec}`));
    expect(offending).toEqual([]);
  });
});

describe('architecture', () => {
  it('lib/ has no import cycle', () => {
    const graph = new Map([...imports].filter(([f]) => !isTest(f)).map(([f, list]) => [f, list.map((i) => i.target).filter((t): t is string => !!t && t.startsWith(LIB))]));
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, stack: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...stack.slice(stack.indexOf(f)), f].map(rel).join(' → '));
        return;
      }
      state.set(f, 'open');
      for (const t of graph.get(f) ?? []) visit(t, [...stack, f]);
      state.set(f, 'done');
    };
    for (const f of graph.keys()) visit(f, []);
    expect(cycles).toEqual([]);
  });

  // Two folders that import each other, through any files, are one module in two places: a change
  // in either may need the other. Folders are compared where their paths part (`a/b` and `a/c`; a
  // folder and one inside it), at every depth.
  it('lib/ has no import cycle between folders', () => {
    const folderOf = (f: string) => path.dirname(rel(f));
    const edges = new Map<string, Map<string, string>>();
    for (const [f, list] of imports) {
      if (isTest(f)) continue;
      for (const i of list) {
        if (!i.target || !i.target.startsWith(LIB)) continue;
        const from = folderOf(f).split('/');
        const to = folderOf(i.target).split('/');
        let k = 0;
        while (k < from.length && k < to.length && from[k] === to[k]) k++;
        const a = from.slice(0, k + 1).join('/');
        const b = to.slice(0, k + 1).join('/');
        if (a === b) continue;
        if (!edges.has(a)) edges.set(a, new Map());
        if (!edges.get(a)!.has(b)) edges.get(a)!.set(b, `${rel(f)} → ${i.spec}`);
      }
    }
    const state = new Map<string, 'open' | 'done'>();
    const loops: string[] = [];
    const visit = (folder: string, stack: string[]) => {
      if (state.get(folder) === 'done') return;
      if (state.get(folder) === 'open') {
        const loop = [...stack.slice(stack.indexOf(folder)), folder];
        loops.push(loop.slice(1).map((to, n) => `${loop[n]} → ${to} (${edges.get(loop[n])!.get(to)})`).join(', '));
        return;
      }
      state.set(folder, 'open');
      for (const to of edges.get(folder)?.keys() ?? []) visit(to, [...stack, folder]);
      state.set(folder, 'done');
    };
    for (const folder of edges.keys()) visit(folder, []);
    expect(loops).toEqual([]);
  });

  it.each([
    ['paths', ['tools', 'workflows', 'audit', 'chat', 'loop', 'agents']],
    ['audit', ['tools', 'chat', 'loop']],
    ['workflows', ['agents', 'tools', 'chat', 'loop']],
    ['results', ['tools', 'paths', 'audit', 'workflows', 'chat', 'loop', 'llm']],
    ['tools', ['loop', 'chat', 'runtime']],
    ['versions', ['tools', 'chat', 'loop', 'agents', 'workflows', 'conversations', 'runtime', 'llm', 'audit', 'prompt', 'stream', 'outputs', 'projects']],
    ['loop', ['chat', 'conversations', 'tools', 'runtime', 'context', 'models', 'prompt']],
    ['projects', ['chat', 'loop', 'tools', 'runtime', 'stream']],
    // BMAD's config files and TOML layers: read by agents, skills and workflows, knowing none of them.
    ['bmad-config', ['agents', 'skills', 'workflows', 'projects', 'tools', 'chat', 'loop', 'runtime', 'doctor', 'frontmatter']],
    ['frontmatter', ['bmad-config', 'paths', 'results', 'agents', 'skills', 'workflows', 'projects', 'tools', 'chat', 'loop', 'runtime', 'doctor']],
    ['skills', ['agents', 'workflows', 'tools', 'chat', 'loop', 'runtime', 'projects', 'conversations', 'stream', 'llm']],
    ['agents', ['workflows', 'skills', 'projects', 'tools', 'chat', 'loop', 'runtime']],
    ['llm', ['tools', 'loop', 'chat', 'conversations', 'context', 'models']],
    ['prompt', ['tools', 'loop', 'chat', 'runtime']],
    ['stream', ['tools', 'chat', 'conversations', 'runtime']],
    ['scripts', ['tools', 'chat', 'loop', 'runtime', 'agents', 'workflows', 'projects', 'conversations', 'commands']],
    // bubblewrap building blocks: what scripts and commands share, knowing neither.
    ['sandbox', ['scripts', 'commands', 'tools', 'chat', 'loop', 'runtime', 'agents', 'workflows', 'projects', 'conversations', 'paths']],
    ['commands', ['tools', 'chat', 'loop', 'runtime', 'agents', 'workflows', 'projects', 'conversations']],
    ['doctor', ['chat', 'tools', 'loop', 'runtime', 'conversations', 'llm', 'stream', 'audit']],
    // Profiles are configuration: they know no other room.
    ['models', ['config', 'llm', 'loop', 'chat', 'conversations', 'tools', 'runtime', 'context', 'prompt', 'stream', 'agents', 'projects']],
    // The context budget works on messages and counts; it neither runs turns nor stores anything itself.
    ['context', ['chat', 'runtime', 'tools', 'stream', 'agents', 'projects', 'config']],
    // The database connection and its schema: stores build on it, never the other way round.
    ['db', ['conversations', 'chat', 'loop', 'tools', 'runtime', 'agents', 'projects', 'stream', 'config']],
    // Accounts know who asks and what they may do, nothing of what is asked for.
    ['auth', ['chat', 'tools', 'loop', 'runtime', 'conversations', 'projects', 'stream', 'llm', 'agents', 'workflows', 'versions', 'audit']],
    ['access', ['auth', 'chat', 'tools', 'loop', 'runtime', 'conversations', 'projects', 'stream', 'llm', 'agents', 'workflows', 'versions', 'audit']],
    // Git on the server's side is a leaf: whoever needs git goes through its runner, it knows no one.
    ['git', ['workspaces', 'chat', 'tools', 'loop', 'runtime', 'conversations', 'projects', 'scripts', 'db', 'stream', 'llm', 'agents']],
    // Workspaces are used by tools, chat and runs, never the other way round.
    ['workspaces', ['chat', 'tools', 'loop', 'runtime', 'projects', 'stream', 'llm', 'agents', 'runs', 'workflows', 'remotes']],
    // The sprint engine works on git and files; routes and runs call it, it calls none of them (a remote it is handed, as SprintRemote).
    ['sprint', ['chat', 'tools', 'loop', 'runtime', 'stream', 'llm', 'agents', 'runs', 'workflows', 'workspaces', 'conversations', 'remotes']],
    // Remote repositories know git, the projects' folders and the database, never what uses them (sprint, workspaces, runs, turns).
    ['remotes', ['chat', 'tools', 'loop', 'runtime', 'stream', 'llm', 'agents', 'runs', 'workflows', 'workspaces', 'sprint', 'auth']],
    // Sealing secrets is a leaf of the store: it knows no store, no git, nothing that uses it.
    ['secrets', ['db', 'conversations', 'auth', 'budgets', 'audit', 'git', 'remotes', 'chat', 'tools', 'runtime']],
  ])('lib/%s never imports a higher room', (room, forbidden) => {
    const offending = [...imports]
      .filter(([f]) => roomOf(f) === room)
      .flatMap(([f, list]) => list.filter((i) => i.target && forbidden.includes(roomOf(i.target))).map((i) => `${rel(f)} → ${i.spec}`));
    expect(offending).toEqual([]);
  });

  // A tool that needs a model (spawn_subagent) gets a runner through its ToolContext instead.
  // The stream reads the loop's event types and the context budget implements its `prepare` hook.
  it('only the chat service runs the loop (the stream and the context budget read its types)', () => {
    const readsTypes = (f: string, spec: string) => ['stream', 'context'].includes(roomOf(f)) && /\/loop\/types$/.test(spec);
    const offending = [...imports]
      .filter(([f]) => !isTest(f) && !['loop', 'chat'].includes(roomOf(f)))
      .flatMap(([f, list]) => list.filter((i) => i.target && roomOf(i.target) === 'loop' && !readsTypes(f, i.spec)).map((i) => `${rel(f)} → ${i.spec}`));
    expect(offending).toEqual([]);
  });

  // The stores' database, the lease identity and the shared helpers are lib/store/db's; the conversations
  // add only their first SQLite history, which the runtime passes on (tests open files with it).
  it('runs, workspaces, remotes and accounts reach the database through lib/store/db, not the conversations', () => {
    const offending = [...imports]
      .filter(([f]) => !isTest(f) && ['runs', 'workspaces', 'remotes', 'auth'].includes(roomOf(f)))
      .flatMap(([f, list]) => list.filter((i) => i.target && roomOf(i.target) === 'conversations').map((i) => `${rel(f)} → ${i.spec}`));
    expect(offending).toEqual([]);
  });

  // The use cases sit on top: nothing in lib builds on them.
  it('nothing in lib imports lib/services', () => {
    const offending = [...imports]
      .filter(([f]) => roomOf(f) !== 'services')
      .flatMap(([f, list]) => list.filter((i) => i.target && roomOf(i.target) === 'services').map((i) => `${rel(f)} → ${i.spec}`));
    expect(offending).toEqual([]);
  });

  // The wire contract is what the use cases answer in; the engine below them speaks its own types,
  // so a change of the contract is made in lib/services and nowhere else.
  it('only lib/services imports the wire types (types/api.ts)', () => {
    const wire = path.join(LIB, '..', 'types', 'api.ts');
    const offending = [...imports]
      .filter(([f]) => roomOf(f) !== 'services')
      .flatMap(([f, list]) => list.filter((i) => i.target === wire || /^@\/types\/api(\.ts)?$/.test(i.spec)).map((i) => `${rel(f)} → ${i.spec}`));
    expect(offending).toEqual([]);
  });

  it('lib/ imports neither Next.js nor React', () => {
    const offending = [...imports].flatMap(([f, list]) => list.filter((i) => /^(next|react|react-dom)(\/|$)/.test(i.spec)).map((i) => `${rel(f)} → ${i.spec}`));
    expect(offending).toEqual([]);
  });

  it('lib/engine/chat/index.ts only re-exports', () => {
    const source = ts.createSourceFile('index.ts', fs.readFileSync(path.join(LIB, 'engine', 'chat', 'index.ts'), 'utf8'), ts.ScriptTarget.Latest);
    const other = source.statements.filter((s) => !(ts.isExportDeclaration(s) && s.moduleSpecifier));
    expect(other.map((s) => s.getText(source))).toEqual([]);
  });
});

import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// The rules for the web layer ARCHITECTURE.md states, checked on the code: routes and the MCP
// server are adapters (parse, call one use case of lib/services, map the error), so they import
// from lib only lib/services and lib/errors, stay short, and app/api/_lib keeps HTTP concerns only.
const API = __dirname;
const ROOT = path.resolve(API, '..', '..');

/** Not converted yet: the turn pipeline (chat, runs) moves into lib/services in its own step. */
const NOT_YET_CONVERTED = new Set(['chat/route.ts', 'runs/route.ts', 'runs/[id]/route.ts', 'runs/[id]/cancel/route.ts', 'runs/[id]/events/route.ts']);
/** Files of app/api/_lib and app/api/mcp that belong to the turn step, left out of the size budget. */
const TURN_FILES = new Set(['_lib/turns.ts']);
/** The MCP server's tools that run turns; they move with the turn pipeline. */
const TURN_TOOLS = new Set(['chat', 'start_run', 'get_run']);
/** The one import of a route's helper by the MCP server left (get_run's access to a run), until runs are a service. */
const MCP_ROUTE_IMPORTS_LEFT = new Set(['mcp/tools.ts → ../runs/_lib']);

const MAX_ROUTE_LINES = 60;
const MAX_HTTP_LAYER_LINES = 400;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [p] : [];
  });
}

const rel = (f: string) => path.relative(API, f).split(path.sep).join('/');
const lines = (f: string) => fs.readFileSync(f, 'utf8').replace(/\n$/, '').split('\n').length;
const importsOf = (f: string) => ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true).importedFiles.map((i) => i.fileName);

/** Where an import lands, as a path from the repository's root (`lib/runtime`), or null for a package. */
function landing(from: string, spec: string): string | null {
  if (spec.startsWith('@/')) return spec.slice(2);
  if (spec.startsWith('.')) return path.relative(ROOT, path.resolve(path.dirname(from), spec)).split(path.sep).join('/');
  return null;
}

const ALLOWED_FROM_LIB = /^lib\/(services|errors)(\/index)?$/;

function routeImportsBelowServices(files: string[]): string[] {
  return files.flatMap((f) =>
    importsOf(f)
      .filter((spec) => {
        const to = landing(f, spec);
        return to !== null && to.startsWith('lib/') && !ALLOWED_FROM_LIB.test(to);
      })
      .map((spec) => `${rel(f)} → ${spec}`),
  );
}

function routesOverLength(files: string[], max = MAX_ROUTE_LINES): string[] {
  return files.filter((f) => lines(f) > max).map((f) => `${rel(f)}: ${lines(f)} lines`);
}

/** The lines of the TURN_TOOLS entries of an MCP tools file (`tool({ name: 'chat', ... })`). */
function turnToolLines(f: string): number {
  const source = ts.createSourceFile(f, fs.readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
  let count = 0;
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'tool' && node.arguments[0] && ts.isObjectLiteralExpression(node.arguments[0])) {
      const name = node.arguments[0].properties.find((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(source) === 'name');
      if (name && ts.isStringLiteral(name.initializer) && TURN_TOOLS.has(name.initializer.text)) {
        const { line: start } = source.getLineAndCharacterOfPosition(node.getStart(source));
        const { line: end } = source.getLineAndCharacterOfPosition(node.getEnd());
        count += end - start + 1;
        return;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return count;
}

function httpLayerLines(files: string[]): number {
  return files.filter((f) => !TURN_FILES.has(rel(f))).reduce((sum, f) => sum + lines(f) - (rel(f).startsWith('mcp/') ? turnToolLines(f) : 0), 0);
}

const routes = sourceFiles(API).filter((f) => path.basename(f) === 'route.ts' && !NOT_YET_CONVERTED.has(rel(f)));
const httpLayer = [...sourceFiles(path.join(API, '_lib')), ...sourceFiles(path.join(API, 'mcp'))];

describe('app/api architecture', () => {
  it('knows every route it leaves out (a file converted or gone leaves the allow-list)', () => {
    for (const f of [...NOT_YET_CONVERTED, ...TURN_FILES]) expect(fs.existsSync(path.join(API, f))).toBe(true);
    expect(routes.length).toBeGreaterThan(30);
  });

  it('a route imports from lib only lib/services and lib/errors', () => {
    expect(routeImportsBelowServices(routes)).toEqual([]);
  });

  it(`a route is at most ${MAX_ROUTE_LINES} lines`, () => {
    expect(routesOverLength(routes)).toEqual([]);
  });

  it(`app/api/_lib and app/api/mcp stay within ${MAX_HTTP_LAYER_LINES} lines (the turn's files and tools aside)`, () => {
    expect(httpLayerLines(httpLayer)).toBeLessThanOrEqual(MAX_HTTP_LAYER_LINES);
  });

  it('the MCP server imports no route (nor a route folder\'s helper)', () => {
    const mcp = sourceFiles(path.join(API, 'mcp'));
    const offending = mcp.flatMap((f) =>
      importsOf(f)
        .filter((spec) => {
          const to = landing(f, spec);
          return to !== null && to.startsWith('app/api/') && !/^app\/api\/(_lib|mcp)\//.test(to);
        })
        .map((spec) => `${rel(f)} → ${spec}`)
        .filter((edge) => !MCP_ROUTE_IMPORTS_LEFT.has(edge)),
    );
    expect(offending).toEqual([]);
  });
});

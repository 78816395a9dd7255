import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// The rules for the web layer ARCHITECTURE.md states, checked on the code: routes and the MCP
// server are adapters (parse, call one use case of lib/services, map the error), so they import
// from lib only lib/services and lib/errors, stay short, and app/api/_lib keeps HTTP concerns only.
const API = __dirname;
const ROOT = path.resolve(API, '..', '..');

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

/** Where an import lands, as a path from the repository's root (`lib/engine/runtime`), or null for a package. */
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

function httpLayerLines(files: string[]): number {
  return files.reduce((sum, f) => sum + lines(f), 0);
}

// The OpenAI-compatible endpoint (app/v1) is routes of the same kind, held to the same rules.
const V1 = path.join(ROOT, 'app', 'v1');
const routes = [...sourceFiles(API), ...sourceFiles(V1)].filter((f) => path.basename(f) === 'route.ts');
const httpLayer = [...sourceFiles(path.join(API, '_lib')), ...sourceFiles(path.join(API, 'mcp'))];

describe('app/api architecture', () => {
  it('sees every route', () => {
    expect(routes.map(rel)).toEqual(expect.arrayContaining(['chat/route.ts', 'runs/route.ts', 'runs/[id]/events/route.ts', 'mcp/route.ts', '../v1/chat/completions/route.ts', '../v1/models/route.ts']));
    expect(routes.length).toBeGreaterThan(30);
  });

  it('a route imports from lib only lib/services and lib/errors', () => {
    expect(routeImportsBelowServices(routes)).toEqual([]);
  });

  it(`a route is at most ${MAX_ROUTE_LINES} lines`, () => {
    expect(routesOverLength(routes)).toEqual([]);
  });

  it(`app/api/_lib and app/api/mcp stay within ${MAX_HTTP_LAYER_LINES} lines`, () => {
    expect(httpLayerLines(httpLayer)).toBeLessThanOrEqual(MAX_HTTP_LAYER_LINES);
  });

  it('app/v1/_lib keeps HTTP concerns: from lib only lib/services, lib/errors and the log', () => {
    const offending = sourceFiles(path.join(V1, '_lib')).flatMap((f) =>
      importsOf(f)
        .filter((spec) => {
          const to = landing(f, spec);
          return to !== null && to.startsWith('lib/') && !ALLOWED_FROM_LIB.test(to) && to !== 'lib/core/log';
        })
        .map((spec) => `${rel(f)} → ${spec}`),
    );
    expect(offending).toEqual([]);
  });

  it('the MCP server imports no route (nor a route folder\'s helper)', () => {
    const mcp = sourceFiles(path.join(API, 'mcp'));
    const offending = mcp.flatMap((f) =>
      importsOf(f)
        .filter((spec) => {
          const to = landing(f, spec);
          return to !== null && to.startsWith('app/api/') && !/^app\/api\/(_lib|mcp)\//.test(to);
        })
        .map((spec) => `${rel(f)} → ${spec}`),
    );
    expect(offending).toEqual([]);
  });
});

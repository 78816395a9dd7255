import fs from 'node:fs';
import path from 'node:path';
import { AppError, errorBrand, isAppError } from './index';
import { isVersionError, VersionError } from '../../content/versions';

/**
 * The production server loads lib/ more than once: the runtime built by the instrumentation hook
 * comes from one module graph, each route handler from another. A second copy of a module, loaded
 * here with jest.isolateModules, has classes of its own exactly as a second bundle does.
 */
function secondCopy<T>(modulePath: string): T {
  let loaded: T | undefined;
  jest.isolateModules(() => {
    loaded = require(modulePath) as T;
  });
  return loaded!;
}

describe('AppError across copies of lib/errors', () => {
  const other = secondCopy<typeof import('./index')>('./index');

  it('is a separate class, as in a separate bundle (the reason instanceof cannot be used)', () => {
    expect(other.AppError).not.toBe(AppError);
    expect(new other.AppError('E_NOT_FOUND', 'x')).not.toBeInstanceOf(AppError);
  });

  it('is recognised by isAppError of either copy, with its code, status and details', () => {
    const e = new other.AppError('E_NOT_HEADLESS', 'no contract', { response: { skills: ['bmad-prd'] } });
    expect(isAppError(e)).toBe(true);
    expect(other.isAppError(new AppError('E_CONFLICT', 'taken'))).toBe(true);
    if (!isAppError(e)) throw new Error('unreachable');
    expect([e.code, e.status, e.message, e.details]).toEqual(['E_NOT_HEADLESS', 422, 'no contract', { response: { skills: ['bmad-prd'] } }]);
  });

  it('keeps its subclasses: a NotHeadlessError of another copy of lib/engine/runs is an AppError with its skills', () => {
    const runs = secondCopy<typeof import('../../engine/runs/target')>('../../engine/runs/target');
    const e = new runs.NotHeadlessError('bmad-help', 'p612', ['bmad-prd', 'bmad-ux']);
    expect(isAppError(e)).toBe(true);
    expect(e.details).toMatchObject({ response: { skills: ['bmad-prd', 'bmad-ux'] } });
  });

  it('takes nothing else for one: plain errors, look-alikes without the brand, a brand without a code', () => {
    expect(isAppError(new Error('boom'))).toBe(false);
    expect(isAppError(Object.assign(new Error('x'), { code: 'E_NOT_FOUND', status: 404 }))).toBe(false);
    expect(isAppError({ code: 'E_NOT_FOUND', status: 404, message: 'x' })).toBe(false);
    expect(isAppError(null)).toBe(false);
    expect(isAppError('E_NOT_FOUND')).toBe(false);
    const marked = new Error('x');
    Object.defineProperty(marked, Symbol.for('bmad-orchestrator.app-error'), { value: true });
    expect(isAppError(marked)).toBe(false);
    expect(isAppError(Object.assign(marked, { code: 'ENOENT', status: 404 }))).toBe(false);
  });

  it('the brand is not enumerable: a copy made by spreading an error is not taken for one', () => {
    const e = new AppError('E_NOT_FOUND', 'gone', { field: 'id' });
    const copy = { ...e, message: e.message };
    expect(Object.getOwnPropertySymbols(copy)).toEqual([]);
    expect(isAppError(copy)).toBe(false);
  });

  it('errorBrand: one brand per name, whichever copy asks', () => {
    const a = errorBrand('test-brand');
    const b = other.errorBrand('test-brand');
    const marked = new Error('x');
    a.mark(marked);
    expect(b.has(marked)).toBe(true);
    expect(errorBrand('another-brand').has(marked)).toBe(false);
  });
});

describe('VersionError across copies of lib/content/versions', () => {
  it('is recognised by isVersionError of either copy (stores are shared between copies)', () => {
    const other = secondCopy<typeof import('../../content/versions')>('../../content/versions');
    const e = new other.VersionError('E_UNKNOWN_VERSION', 'no such version');
    expect(e).not.toBeInstanceOf(VersionError);
    expect(isVersionError(e)).toBe(true);
    expect(other.isVersionError(new VersionError('E_INVALID_PATH', 'bad'))).toBe(true);
    expect(isVersionError(Object.assign(new Error('x'), { code: 'E_UNKNOWN_VERSION' }))).toBe(false);
    expect(isVersionError(new AppError('E_NOT_FOUND', 'x'))).toBe(false);
  });
});

describe('no instanceof on errors that cross module graphs', () => {
  // Errors of these classes are thrown by objects the runtime built (its stores, its run service,
  // its model clients), which a route handler's copy of the class does not know.
  const CROSSING = /\binstanceof\s+(AppError|NotHeadlessError|VersionError|APIError|APIConnectionError|APIConnectionTimeoutError|APIUserAbortError|RateLimitError|AuthenticationError|OpenAIError)\b/;
  const ROOT = path.resolve(__dirname, '../../..');

  function sources(dir: string): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) return e.name === '__fixtures__' || e.name === 'node_modules' ? [] : sources(p);
      return /\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [p] : [];
    });
  }

  it('lib/ and app/api/ recognise them through isAppError, isVersionError and upstreamErrorOf', () => {
    const offending = [...sources(path.join(ROOT, 'lib')), ...sources(path.join(ROOT, 'app/api')), path.join(ROOT, 'instrumentation.ts')].flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => (CROSSING.test(line) && !/^\s*(\/\/|\*)/.test(line) ? `${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}` : null))
        .filter((l): l is string => l !== null),
    );
    expect(offending).toEqual([]);
  });
});

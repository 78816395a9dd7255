import { toResponse } from './http';

/** A second copy of a module, with classes of its own, as a second bundle of the production server has. */
function secondCopy<T>(modulePath: string): T {
  let loaded: T | undefined;
  jest.isolateModules(() => {
    loaded = require(modulePath) as T;
  });
  return loaded!;
}

describe('the routes answer errors of another copy with their code', () => {
  const other = secondCopy<typeof import('@/lib/errors')>('@/lib/errors');

  it('maps an AppError of another copy to its status and body (not 500 E_INTERNAL)', async () => {
    const res = toResponse(new other.AppError('E_AGENT_NOT_FOUND', 'No agent "x".'), 'test');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ success: false, error: 'No agent "x".', code: 'E_AGENT_NOT_FOUND' });
  });

  it("shows what an error chooses to show beside its message: E_NOT_HEADLESS's skills, a validation's field", async () => {
    const runs = secondCopy<typeof import('@/lib/engine/runs/target')>('@/lib/engine/runs/target');
    const notHeadless = toResponse(new runs.NotHeadlessError('bmad-help', 'p612', ['bmad-prd']), 'test');
    expect(notHeadless.status).toBe(422);
    expect(await notHeadless.json()).toMatchObject({ success: false, code: 'E_NOT_HEADLESS', skills: ['bmad-prd'] });
    const invalid = toResponse(new other.AppError('E_VALIDATION', 'bad webhook', { field: 'webhook.url' }), 'test');
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ code: 'E_VALIDATION', field: 'webhook.url' });
  });

  it('still hides unknown errors behind 500 E_INTERNAL', async () => {
    const res = toResponse(Object.assign(new Error('/secret/path'), { code: 'E_NOT_FOUND', status: 404 }), 'test');
    expect(res.status).toBe(500);
    expect(JSON.stringify(await res.json())).not.toContain('/secret/path');
  });
});


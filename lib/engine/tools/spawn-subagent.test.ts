import { executeTool } from '.';
import { makeSandbox, type Sandbox } from '../../../test/sandbox';
import type { SubagentRequest } from './types';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(() => sb.cleanup());

const call = (args: unknown) => ({ id: 'c1', name: 'spawn_subagent', arguments: typeof args === 'string' ? args : JSON.stringify(args) });

describe('spawn_subagent', () => {
  it('hands the validated request and the call signal to the injected runner and returns its result', async () => {
    const seen: { request: SubagentRequest; signal?: AbortSignal }[] = [];
    const signal = new AbortController().signal;
    const ctx = {
      ...sb.ctx,
      signal,
      subagent: async (request: SubagentRequest, s?: AbortSignal) => {
        seen.push({ request, signal: s });
        return { ok: true as const, result: 'found it', steps: 2 };
      },
    };
    const r: Any = await executeTool(call({ task: '  Find the PRD  ', input: 'docs/', maxSteps: '4' }), ctx);
    expect(r).toEqual({ ok: true, result: 'found it', steps: 2 });
    expect(seen).toEqual([{ request: { instructions: 'Find the PRD', input: 'docs/', maxSteps: 4 }, signal }]);
  });

  it('refuses without a runner (inside a subagent) and validates its arguments', async () => {
    const nested: Any = await executeTool(call({ instructions: 'x' }), sb.ctx);
    expect(nested.error.code).toBe('E_INVALID_ARGS');
    expect(nested.error.message).toMatch(/cannot start another/);
    const ctx = { ...sb.ctx, subagent: async () => ({ ok: true as const }) };
    const empty: Any = await executeTool(call({ instructions: '  ' }), ctx);
    expect(empty.error.code).toBe('E_INVALID_ARGS');
    const tooMany: Any = await executeTool(call({ instructions: 'x', max_steps: 500 }), ctx);
    expect(tooMany.error.message).toContain('max_steps');
  });
});

import { APIConnectionTimeoutError, APIError } from 'openai';
import { reply, startScriptedModel, type ScriptedModel } from '../../../test/scripted-model';
import { AppError, isAppError } from '../../core/errors';
import { createLlmClient } from './client';
import { isAbortError, mapLlmError, redact, upstreamErrorOf } from './errors';
import { streamChat } from './stream';

const KEY = 'sk-test-SECRETSECRETSECRET1234';

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(() => model.close());
beforeEach(() => {
  model.reset();
  model.setScript(undefined);
});

async function callError(opts: { baseURL: string; apiKey?: string; model?: string; maxRetries?: number }): Promise<AppError> {
  const client = createLlmClient({ baseURL: opts.baseURL, apiKey: opts.apiKey, model: 'x', configured: true }, { maxRetries: opts.maxRetries });
  const gen = streamChat({ client, model: opts.model ?? 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
  try {
    for (;;) if ((await gen.next()).done) break;
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    return e as AppError;
  }
  throw new Error('expected the call to fail');
}

function expectNoKey(e: AppError) {
  const all = `${e.message} ${JSON.stringify(e.details ?? {})}`;
  expect(all).not.toContain(KEY);
  expect(all).not.toContain('SECRET');
  expect(all).not.toContain('1234');
}

describe('mapLlmError with real HTTP failures', () => {
  it('401 with a wrong key: says the key was rejected, never shows it (not even the masked part upstream quotes)', async () => {
    const guarded = await startScriptedModel({ apiKey: 'sk-the-right-one-000000' });
    try {
      const e = await callError({ baseURL: guarded.url, apiKey: KEY });
      expect(e.code).toBe('E_LLM_UPSTREAM');
      expect(e.status).toBe(502);
      expect(e.message).toMatch(/rejected the API key \(401\)/);
      expect(e.message).toContain('OPENAI_API_KEY');
      expectNoKey(e);
      // 401 is not retried.
      expect(guarded.chatRequests()).toHaveLength(1);
    } finally {
      await guarded.close();
    }
  });

  it('401 without a key: says none is configured', async () => {
    const guarded = await startScriptedModel({ apiKey: 'sk-the-right-one-000000' });
    try {
      const e = await callError({ baseURL: guarded.url });
      expect(e.message).toMatch(/requires an API key \(401\) and none is configured/);
    } finally {
      await guarded.close();
    }
  });

  it('403: permission', async () => {
    model.setScript([reply.error(403)]);
    const e = await callError({ baseURL: model.url, apiKey: KEY });
    expect(e.message).toMatch(/refused access \(403\)/);
    expectNoKey(e);
  });

  it('404: names the model', async () => {
    model.setScript([reply.error(404)]);
    const e = await callError({ baseURL: model.url, apiKey: KEY, model: 'gpt-nope' });
    expect(e.code).toBe('E_LLM_UPSTREAM');
    expect(e.message).toMatch(/^Model "gpt-nope" was not found at 127\.0\.0\.1:\d+ \(404\)/);
    expect(e.details).toMatchObject({ status: 404, upstreamCode: 'model_not_found' });
  });

  it('404 for an unknown scripted scenario comes from the server itself', async () => {
    const e = await callError({ baseURL: model.url, model: 'scripted:does-not-exist' });
    expect(e.message).toContain('"scripted:does-not-exist"');
  });

  it('429: rate limited, retried once', async () => {
    model.setScript([reply.error(429, { headers: { 'retry-after-ms': '5' } }), reply.error(429, { headers: { 'retry-after-ms': '5' } })]);
    const e = await callError({ baseURL: model.url, apiKey: KEY });
    expect(e.message).toMatch(/rate limiting requests \(429\)/);
    expect(model.chatRequests()).toHaveLength(2);
  });

  it('429 insufficient_quota: out of quota', async () => {
    const quota = reply.error(429, {
      message: 'You exceeded your current quota, please check your plan and billing details.',
      code: 'insufficient_quota',
      headers: { 'retry-after-ms': '5' },
    });
    model.setScript([quota, quota]);
    const e = await callError({ baseURL: model.url, apiKey: KEY });
    expect(e.message).toMatch(/out of quota \(429\)/);
  });

  it('a retried 429 that then succeeds is invisible to the caller', async () => {
    model.setScript([reply.error(429, { headers: { 'retry-after-ms': '5' } }), reply.text('fine')]);
    const client = createLlmClient({ baseURL: model.url, model: 'x', configured: true });
    const gen = streamChat({ client, model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    let r = await gen.next();
    while (!r.done) r = await gen.next();
    expect(r.value.content).toBe('fine');
  });

  it('400: includes the upstream message, trimmed', async () => {
    model.setScript([reply.error(400, { message: `Invalid 'messages[3].tool_calls': ${'x'.repeat(1000)}` })]);
    const e = await callError({ baseURL: model.url, apiKey: KEY });
    expect(e.message).toMatch(/rejected the request \(400\)\. Upstream said: Invalid 'messages\[3\]\.tool_calls'/);
    expect(e.message.length).toBeLessThan(500);
  });

  it('500: upstream failure, retried once', async () => {
    model.setScript([reply.error(500, { headers: { 'retry-after-ms': '5' } }), reply.error(500, { headers: { 'retry-after-ms': '5' } })]);
    const e = await callError({ baseURL: model.url, apiKey: KEY });
    expect(e.code).toBe('E_LLM_UPSTREAM');
    expect(e.message).toMatch(/failed \(500\)/);
    expect(model.chatRequests()).toHaveLength(2);
  });

  it('connection refused: could not reach the endpoint, naming the host but not the key', async () => {
    const gone = await startScriptedModel();
    const url = gone.url;
    await gone.close();
    const e = await callError({ baseURL: url, apiKey: KEY, maxRetries: 0 });
    expect(e.code).toBe('E_LLM_UPSTREAM');
    expect(e.message).toBe(`Could not reach the model endpoint at ${new URL(url).host}: connection refused (is the server running?). Check OPENAI_BASE_URL.`);
    expectNoKey(e);
  });

  it('unknown host: could not reach the endpoint; credentials in the URL are not shown', async () => {
    const e = await callError({ baseURL: 'http://user:hunter2@no-such-host.invalid/v1', maxRetries: 0 });
    expect(e.message).toMatch(/^Could not reach the model endpoint at no-such-host\.invalid: /);
    expect(e.message).not.toContain('hunter2');
  });
});

describe('mapLlmError without a network', () => {
  it('a deadline on the signal is E_LLM_TIMEOUT (504)', () => {
    const ctl = new AbortController();
    ctl.abort(new DOMException('late', 'TimeoutError'));
    const e = mapLlmError(new Error('aborted'), ctl.signal);
    expect(e.code).toBe('E_LLM_TIMEOUT');
    expect(e.status).toBe(504);
  });

  it("the SDK's own timeout is E_LLM_TIMEOUT", () => {
    expect(mapLlmError(new APIConnectionTimeoutError()).code).toBe('E_LLM_TIMEOUT');
  });

  it('passes AppErrors through', () => {
    const original = new AppError('E_LLM_NOT_CONFIGURED', 'no model');
    expect(mapLlmError(original)).toBe(original);
  });

  it('redacts keys, bearer tokens and the configured key', () => {
    expect(redact('Incorrect API key provided: sk-ab***wxyz.')).toBe('Incorrect API key provided: [redacted].');
    expect(redact('auth Bearer abc.def')).toBe('auth Bearer [redacted]');
    expect(redact('key=my-local-key-123 here', 'my-local-key-123')).toBe('key=[redacted] here');
  });

  it('an unknown error keeps its message, minus secrets', () => {
    const e = mapLlmError(new Error(`weird ${KEY}`), { apiKey: KEY, baseURL: 'https://api.example.com/v1' });
    expect(e.message).toBe('Calling the model at api.example.com failed: weird [redacted]');
  });
});

/**
 * The production server builds its model clients in one module graph (the runtime the
 * instrumentation hook makes) and maps their errors in another (a route handler's turn), each with
 * its own copy of the SDK. Here the client comes from a second copy of lib/model/llm (and so of the SDK),
 * loaded with jest.isolateModules, and the mapping from this one.
 */
describe('errors thrown by a client of another copy of the SDK', () => {
  let other: { createLlmClient: typeof createLlmClient; sdk: typeof import('openai') };
  beforeAll(() => {
    jest.isolateModules(() => {
      other = { createLlmClient: require('./client').createLlmClient, sdk: require('openai') };
    });
  });

  async function otherError(opts: { baseURL: string; apiKey?: string; maxRetries?: number }): Promise<AppError> {
    const client = other.createLlmClient({ baseURL: opts.baseURL, apiKey: opts.apiKey, model: 'x', configured: true }, { maxRetries: opts.maxRetries ?? 0 });
    const gen = streamChat({ client, model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    try {
      for (;;) if ((await gen.next()).done) break;
    } catch (e) {
      expect(isAppError(e)).toBe(true);
      return e as AppError;
    }
    throw new Error('expected the call to fail');
  }

  it('is a separate SDK, as in a separate bundle', () => {
    expect(other.sdk.APIError).not.toBe(APIError);
    expect(new other.sdk.RateLimitError(429, undefined, undefined, new Headers())).not.toBeInstanceOf(APIError);
  });

  it('429 is the rate-limit message, not the generic failure', async () => {
    model.setScript([reply.error(429, { headers: { 'retry-after-ms': '5' } })]);
    const e = await otherError({ baseURL: model.url, apiKey: KEY });
    expect(e.code).toBe('E_LLM_UPSTREAM');
    expect(e.message).toMatch(/^The model endpoint at 127\.0\.0\.1:\d+ is rate limiting requests \(429\)\. Wait a moment and try again\./);
    expect(e.details).toMatchObject({ status: 429, upstreamCode: 'rate_limit_exceeded' });
  });

  it('401 is the API-key message, without the key', async () => {
    const guarded = await startScriptedModel({ apiKey: 'sk-the-right-one-000000' });
    try {
      const e = await otherError({ baseURL: guarded.url, apiKey: KEY });
      expect(e.message).toMatch(/rejected the API key \(401\)/);
      expectNoKey(e);
      const none = await otherError({ baseURL: guarded.url });
      expect(none.message).toMatch(/requires an API key \(401\) and none is configured/);
    } finally {
      await guarded.close();
    }
  });

  it('a model without tools is E_MODEL_NO_TOOLS', async () => {
    model.setScript([reply.error(400, { message: 'registry.ollama.ai/library/gemma:2b does not support tools' })]);
    const e = await otherError({ baseURL: model.url });
    expect(e.code).toBe('E_MODEL_NO_TOOLS');
  });

  it('connection refused names the reason', async () => {
    const gone = await startScriptedModel();
    const url = gone.url;
    await gone.close();
    const e = await otherError({ baseURL: url });
    expect(e.message).toBe(`Could not reach the model endpoint at ${new URL(url).host}: connection refused (is the server running?). Check OPENAI_BASE_URL.`);
  });

  it("the other SDK's timeout, abort, mid-stream error and statuses map as this one's do", () => {
    const { sdk } = other;
    expect(mapLlmError(new sdk.APIConnectionTimeoutError()).code).toBe('E_LLM_TIMEOUT');
    expect(mapLlmError(new sdk.APIUserAbortError())).toMatchObject({ code: 'E_LLM_UPSTREAM', message: 'The model request was cancelled.' });
    expect(isAbortError(new sdk.APIUserAbortError())).toBe(true);
    const midStream = mapLlmError(new sdk.APIError(undefined, { message: 'overloaded' }, undefined, new Headers()), { baseURL: 'https://api.example.com/v1' });
    expect(midStream.message).toBe('The model endpoint at api.example.com reported an error mid-answer: overloaded');
    const quota = new sdk.RateLimitError(429, { message: 'You exceeded your current quota.', code: 'insufficient_quota' }, undefined, new Headers());
    expect(mapLlmError(quota).message).toMatch(/out of quota \(429\)/);
    expect(mapLlmError(new sdk.NotFoundError(404, { message: 'nope' }, undefined, new Headers()), { model: 'gpt-x' }).message).toMatch(/^Model "gpt-x" was not found/);
  });

  it('upstreamErrorOf reads the shape and nothing else: a look-alike without the fields is not one', () => {
    expect(upstreamErrorOf(new other.sdk.InternalServerError(503, undefined, undefined, new Headers()))).toMatchObject({ kind: 'status', status: 503 });
    expect(upstreamErrorOf(Object.assign(new Error('x'), { status: 429 }))).toBeNull();
    expect(upstreamErrorOf({ status: 429, headers: {}, error: {} })).toBeNull();
    expect(upstreamErrorOf(new AppError('E_LLM_UPSTREAM', 'x'))).toBeNull();
  });
});

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { scenarioFor, scenarioNames } from './scenarios';
import type {
  ChatRequestBody,
  ErrorReply,
  MessageReply,
  RecordedRequest,
  Reply,
  Script,
  ScriptContext,
  ScriptFn,
  ScriptedToolCall,
} from './types';

export interface ScriptedModelOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** What to answer; defaults to the scenario chosen per request (see `scenario`). */
  script?: Script;
  /** Scenario for requests whose model name does not pick one (`scripted:<name>`). Default `plain`. */
  scenario?: string;
  /** Time to first token (stream) or to the response (non-stream). */
  latencyMs?: number;
  /** Delay between streamed chunks. */
  tokenDelayMs?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get OpenAI's 401. */
  apiKey?: string;
  /** Keep at most this many recorded requests (oldest dropped); benchmarks send thousands. Default 1000. */
  maxRecorded?: number;
}

export interface ScriptedModel {
  /** Base URL ending in /v1, for OPENAI_BASE_URL. */
  url: string;
  port: number;
  /** Every /v1 request, live: entries are updated as responses finish or connections close. */
  requests: RecordedRequest[];
  /** Only the POST /v1/chat/completions requests. */
  chatRequests(): RecordedRequest[];
  /** Replaces the script (a queue starts over); `undefined` returns to scenarios. */
  setScript(script?: Script): void;
  /** Forgets recorded requests and restarts the call counter. */
  reset(): void;
  /** Resolves once `predicate` holds (polling), rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_ERRORS: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  401: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { message: 'You are not allowed to sample from this model.', type: 'invalid_request_error', code: null },
  404: { message: 'The model does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' },
  429: { message: 'Rate limit reached for requests. Please try again shortly.', type: 'requests', code: 'rate_limit_exceeded' },
  500: { message: 'The server had an error while processing your request.', type: 'server_error', code: null },
  503: { message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null },
};

function maskKey(key: string): string {
  return key.length <= 8 ? '***' : `${key.slice(0, 3)}***${key.slice(-4)}`;
}

function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

/** Text split into deltas: fixed-size pieces, or words (keeping their spaces) when size is 0. */
function splitText(text: string, size: number): string[] {
  if (!text) return [];
  if (size <= 0) return text.match(/\S+\s*|\s+/g) ?? [text];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function splitInto(s: string, pieces: number): string[] {
  if (!s) return [];
  const n = Math.max(1, Math.min(pieces, s.length));
  const size = Math.ceil(s.length / n);
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

function argumentsText(call: ScriptedToolCall): string {
  if (call.arguments === undefined) return '{}';
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

type Delta = Record<string, unknown>;

/** Tool-call deltas the way OpenAI streams them, bent by the reply's quirks. */
function toolCallDeltas(reply: MessageReply, idPrefix: string): Delta[][] {
  const q = reply.quirks ?? {};
  const perCall = (reply.toolCalls ?? []).map((call, index) => {
    const head: Record<string, unknown> = { type: 'function' };
    if (!q.omitIndex) head.index = index;
    if (!q.omitIds) head.id = call.id ?? `${idPrefix}_${index}`;
    const args = argumentsText(call);
    if (q.wholeCalls) return [{ ...head, function: { name: call.name, arguments: args } }];
    const deltas: Delta[] = [{ ...head, function: { name: call.name, arguments: '' } }];
    for (const piece of splitInto(args, reply.argumentChunks ?? 3)) {
      const d: Delta = { function: { arguments: piece } };
      if (!q.omitIndex) d.index = index;
      deltas.push(d);
    }
    return deltas;
  });
  if (!q.interleave) return perCall.flat().map((d) => [d]);
  const merged: Delta[][] = [];
  for (let i = 0; perCall.some((c) => i < c.length); i++) for (const c of perCall) if (i < c.length) merged.push([c[i]]);
  return merged;
}

interface Exchange {
  rec: RecordedRequest;
  res: ServerResponse;
  /** Aborted when the client goes away, so pending waits stop at once. */
  closed: AbortSignal;
}

function sleep(ms: number, ex: Exchange): Promise<void> {
  if (ms <= 0 || ex.closed.aborted) return Promise.resolve();
  const start = performance.now();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      ex.closed.removeEventListener('abort', done);
      ex.rec.scriptedDelayMs += performance.now() - start;
      resolve();
    };
    const timer = setTimeout(done, ms);
    ex.closed.addEventListener('abort', done, { once: true });
  });
}

function sendJson(ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}) {
  if (ex.res.destroyed) return;
  const text = JSON.stringify(body);
  ex.rec.status = status;
  ex.res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  ex.res.end(text);
}

function sendError(ex: Exchange, reply: ErrorReply, model?: string) {
  const d = DEFAULT_ERRORS[reply.status] ?? DEFAULT_ERRORS[reply.status >= 500 ? 500 : 400];
  let message = reply.message ?? d.message;
  if (reply.message === undefined && reply.status === 404 && model) {
    message = `The model \`${model}\` does not exist or you do not have access to it.`;
  }
  sendJson(
    ex,
    reply.status,
    { error: { message, type: reply.errorType ?? d.type, param: null, code: reply.code === undefined ? d.code : reply.code } },
    reply.headers,
  );
}

export async function startScriptedModel(options: ScriptedModelOptions = {}): Promise<ScriptedModel> {
  const host = options.host ?? '127.0.0.1';
  const latencyMs = options.latencyMs ?? 0;
  const tokenDelayMs = options.tokenDelayMs ?? 0;
  const maxRecorded = options.maxRecorded ?? 1000;
  let defaultScenario = options.scenario ?? 'plain';
  let script: Script | undefined = options.script;
  let queue: Reply[] = Array.isArray(script) ? [...script] : [];
  let seq = 0;
  let callIndex = 0;
  const requests: RecordedRequest[] = [];

  function setScript(next?: Script) {
    script = next;
    queue = Array.isArray(next) ? [...next] : [];
  }

  function scenarioName(body: ChatRequestBody, req: IncomingMessage): string {
    const header = req.headers['x-scripted-scenario'];
    if (typeof header === 'string' && header) return header;
    const model = typeof body.model === 'string' ? body.model : '';
    if (model.startsWith('scripted:')) return model.slice('scripted:'.length);
    return typeof script === 'string' ? script : defaultScenario;
  }

  async function decide(body: ChatRequestBody, req: IncomingMessage, ctx: ScriptContext): Promise<Reply> {
    const model = typeof body.model === 'string' ? body.model : '';
    // A model name that picks a scenario wins over the script, so one server serves many e2e flows.
    if (!model.startsWith('scripted:') && !req.headers['x-scripted-scenario']) {
      if (typeof script === 'function') return script({ body, headers: req.headers }, ctx);
      if (Array.isArray(script)) {
        return queue.shift() ?? { type: 'error', status: 500, message: 'scripted model: the script has no reply left for this request' };
      }
    }
    const fn: ScriptFn | undefined = scenarioFor(ctx.scenario);
    if (!fn) return { type: 'error', status: 404, message: `The model \`${model}\` does not exist or you do not have access to it.` };
    return fn({ body, headers: req.headers }, ctx);
  }

  async function streamMessage(ex: Exchange, body: ChatRequestBody, reply: MessageReply, id: string) {
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? 'scripted';
    const base = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_scripted' };
    const choice = (delta: Delta, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    const text = reply.text ?? '';
    const chunks: unknown[] = [choice({ role: 'assistant', content: '' })];
    for (const piece of splitText(text, reply.chunkSize ?? 8)) chunks.push(choice({ content: piece }));
    for (const deltas of toolCallDeltas(reply, `call_${id.slice(-6)}`)) chunks.push(choice({ tool_calls: deltas }));
    const hasCalls = (reply.toolCalls?.length ?? 0) > 0;
    chunks.push(choice({}, reply.finishReason ?? (hasCalls ? 'tool_calls' : 'stop')));
    if (body.stream_options?.include_usage && reply.usage !== false) {
      chunks.push({ ...base, choices: [], usage: usageOf(body, reply) });
    }

    ex.rec.status = 200;
    ex.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    ex.res.flushHeaders();
    const perChunk = reply.tokenDelayMs ?? tokenDelayMs;
    await sleep(reply.latencyMs ?? latencyMs, ex);
    for (let i = 0; i < chunks.length; i++) {
      if (ex.res.destroyed) return;
      if (reply.disconnectAfterChunks !== undefined && i >= reply.disconnectAfterChunks) {
        ex.res.socket?.destroy();
        return;
      }
      if (reply.errorAfterChunks !== undefined && i >= reply.errorAfterChunks) {
        ex.res.end(`data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } })}\n\n`);
        return;
      }
      // Chunk 0 (role) and 1 (first token) leave together after the latency: that is time to first token.
      if (i > 1 && i < chunks.length - 1) await sleep(perChunk, ex);
      if (ex.res.destroyed) return;
      ex.res.write(`data: ${JSON.stringify(chunks[i])}\n\n`);
    }
    ex.res.end('data: [DONE]\n\n');
  }

  function usageOf(body: ChatRequestBody, reply: MessageReply) {
    if (reply.usage) {
      const { cached_tokens, ...counts } = reply.usage;
      return {
        ...counts,
        total_tokens: counts.prompt_tokens + counts.completion_tokens,
        ...(cached_tokens !== undefined ? { prompt_tokens_details: { cached_tokens } } : {}),
      };
    }
    const prompt = estimateTokens(JSON.stringify(body.messages ?? []).length);
    const out = (reply.text ?? '').length + (reply.toolCalls ?? []).reduce((n, c) => n + c.name.length + argumentsText(c).length, 0);
    const completion = estimateTokens(out);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }

  async function answerMessage(ex: Exchange, body: ChatRequestBody, reply: MessageReply, id: string) {
    await sleep(reply.latencyMs ?? latencyMs, ex);
    const calls = (reply.toolCalls ?? []).map((c, i) => ({
      ...(reply.quirks?.omitIds ? {} : { id: c.id ?? `call_${id.slice(-6)}_${i}` }),
      type: 'function',
      function: { name: c.name, arguments: argumentsText(c) },
    }));
    sendJson(ex, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? 'scripted',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: reply.text ?? (calls.length ? null : ''), refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
          logprobs: null,
          finish_reason: reply.finishReason ?? (calls.length ? 'tool_calls' : 'stop'),
        },
      ],
      ...(reply.usage === false ? {} : { usage: usageOf(body, reply) }),
    });
  }

  async function chat(ex: Exchange, req: IncomingMessage, raw: string) {
    let body: ChatRequestBody;
    try {
      body = JSON.parse(raw) as ChatRequestBody;
    } catch {
      return sendError(ex, { type: 'error', status: 400, message: 'We could not parse the JSON body of your request.' });
    }
    ex.rec.body = body;
    if (options.apiKey) {
      const auth = req.headers.authorization ?? '';
      if (auth !== `Bearer ${options.apiKey}`) {
        const given = auth.replace(/^Bearer\s+/i, '');
        const message = given
          ? `Incorrect API key provided: ${maskKey(given)}. You can find your API key at https://platform.openai.com/account/api-keys.`
          : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth.";
        return sendError(ex, { type: 'error', status: 401, message, code: 'invalid_api_key' });
      }
    }
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return sendError(ex, { type: 'error', status: 400, message: "'messages' is a required property and must not be empty." });
    }
    const ctx: ScriptContext = { callIndex: callIndex++, scenario: scenarioName(body, req), latencyMs, tokenDelayMs };
    let reply: Reply;
    try {
      reply = await decide(body, req, ctx);
    } catch (e) {
      return sendError(ex, { type: 'error', status: 500, message: `scripted model: the script threw: ${(e as Error).message}` });
    }
    const id = `chatcmpl-scripted${String(ctx.callIndex).padStart(6, '0')}`;
    if (reply.type === 'hang') return; // the 'close' handler records the end
    if (reply.type === 'error') {
      await sleep(reply.latencyMs ?? 0, ex);
      return sendError(ex, reply, body.model);
    }
    if (body.stream) return streamMessage(ex, body, reply, id);
    return answerMessage(ex, body, reply, id);
  }

  function control(ex: Exchange, method: string, url: URL, raw: string) {
    const route = url.pathname.slice('/__scripted/'.length);
    if (route === 'requests') {
      const withBodies = url.searchParams.get('bodies') !== '0';
      return sendJson(ex, 200, { requests: requests.map((r) => (withBodies ? r : { ...r, body: null })) });
    }
    if (route === 'stats') {
      const done = requests.filter((r) => r.done && r.path === '/v1/chat/completions');
      const pick = (k: 'serviceMs' | 'overheadMs') => done.map((r) => r[k] ?? 0).sort((a, b) => a - b);
      const pct = (xs: number[], p: number) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : 0);
      const summary = (xs: number[]) => ({ sum: xs.reduce((a, b) => a + b, 0), p50: pct(xs, 50), p99: pct(xs, 99), max: xs[xs.length - 1] ?? 0 });
      return sendJson(ex, 200, { count: done.length, serviceMs: summary(pick('serviceMs')), overheadMs: summary(pick('overheadMs')) });
    }
    if (route === 'reset' && method === 'POST') {
      requests.length = 0;
      callIndex = 0;
      return sendJson(ex, 200, { ok: true });
    }
    if (route === 'scenario' && method === 'POST') {
      let name: unknown;
      try {
        name = (JSON.parse(raw) as { name?: unknown }).name;
      } catch {
        name = undefined;
      }
      if (typeof name !== 'string' || !scenarioFor(name)) {
        return sendJson(ex, 400, { error: { message: `unknown scenario; known: ${scenarioNames().join(', ')}` } });
      }
      defaultScenario = name;
      setScript(undefined);
      return sendJson(ex, 200, { ok: true, scenario: name });
    }
    return sendJson(ex, 404, { error: { message: 'unknown control route' } });
  }

  const server = http.createServer((req, res) => {
    const t0 = performance.now();
    const url = new URL(req.url ?? '/', 'http://scripted');
    const isControl = url.pathname.startsWith('/__scripted/');
    const rec: RecordedRequest = {
      seq: seq++,
      method: req.method ?? 'GET',
      path: url.pathname,
      headers: req.headers,
      body: null,
      receivedAt: Date.now(),
      scriptedDelayMs: 0,
      clientClosed: false,
      done: false,
    };
    if (!isControl) {
      requests.push(rec);
      if (requests.length > maxRecorded) requests.splice(0, requests.length - maxRecorded);
    }
    const closedCtl = new AbortController();
    const ex: Exchange = { rec, res, closed: closedCtl.signal };
    res.on('close', () => {
      rec.clientClosed = !res.writableFinished;
      rec.done = true;
      rec.serviceMs = performance.now() - t0;
      // A hang "waits" for its whole life; count that as scripted time, not server overhead.
      if (rec.status === undefined) rec.scriptedDelayMs = rec.serviceMs;
      rec.overheadMs = Math.max(0, rec.serviceMs - rec.scriptedDelayMs);
      closedCtl.abort();
    });

    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(parts).toString('utf8');
      const run = async () => {
        if (isControl) return control(ex, req.method ?? 'GET', url, raw);
        if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return chat(ex, req, raw);
        if (req.method === 'GET' && url.pathname === '/v1/models') {
          const ids = ['scripted', ...scenarioNames().map((n) => `scripted:${n}`)];
          return sendJson(ex, 200, { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })) });
        }
        return sendError(ex, { type: 'error', status: 404, message: `Unknown request URL: ${req.method} ${url.pathname}.`, code: 'unknown_url' });
      };
      run().catch((e: unknown) => {
        if (!res.headersSent) sendError(ex, { type: 'error', status: 500, message: `scripted model crashed: ${(e as Error).message}` });
        else res.destroy();
      });
    });
  });
  // Streams may pause for long; Node's default request timeouts would cut hangs short.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 5000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://${host}:${port}/v1`,
    port,
    requests,
    chatRequests: () => requests.filter((r) => r.path === '/v1/chat/completions'),
    setScript,
    reset() {
      requests.length = 0;
      callIndex = 0;
      if (Array.isArray(script)) queue = [...script];
    },
    async waitFor(predicate, timeoutMs = 2000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`scripted model: condition not met within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

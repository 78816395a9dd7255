import { AppError, isAppError } from '../../core/errors';
import { PLACEHOLDER_API_KEY } from './client';

export interface LlmErrorContext {
  signal?: AbortSignal;
  /** Named in "model not found" messages. */
  model?: string;
  /** The MODELS_FILE profile the call ran on, named where the fix is in that file or in choosing another. */
  profile?: string;
  /** Only its host is ever shown. */
  baseURL?: string;
  /** Scrubbed from every message, even though upstream messages should not echo it. */
  apiKey?: string;
}

const UPSTREAM_MESSAGE_MAX = 300;

/**
 * What the OpenAI SDK threw, read from its shape. The SDK's error classes differ between bundles
 * (the production server builds the model clients in one module graph and maps their errors in
 * another), so `instanceof APIError` is false there for the SDK's own errors; its fields are not.
 */
export type UpstreamError =
  /** An HTTP answer with an error status. */
  | { kind: 'status'; status: number; body: unknown; code?: string; param?: unknown; message: string }
  /** An `{"error": ...}` object inside an otherwise healthy stream (no status). */
  | { kind: 'stream'; body: unknown; code?: string; message: string }
  /** The SDK's own deadline (APIConnectionTimeoutError). */
  | { kind: 'timeout'; message: string }
  /** The caller's signal ended the request (APIUserAbortError). */
  | { kind: 'abort'; message: string }
  /** No answer at all: refused, reset, DNS (APIConnectionError); the reason is in `cause`. */
  | { kind: 'connection'; message: string; cause: unknown };

// The messages the SDK gives these two when it throws them (it never passes one of its own).
const SDK_TIMEOUT_MESSAGE = 'Request timed out.';
const SDK_ABORT_MESSAGE = 'Request was aborted.';

/** The SDK class names on `e`'s prototype chain (absent when a bundler renamed the classes). */
function classNames(e: object): string[] {
  const names: string[] = [];
  for (let p = Object.getPrototypeOf(e); p && p !== Error.prototype && names.length < 8; p = Object.getPrototypeOf(p)) {
    const name = (p as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string') names.push(name);
  }
  return names;
}

/**
 * The one place an upstream model error is recognised: an APIError of any copy of the SDK (the
 * fields its constructor always sets: `status`, `headers`, `error`), else null.
 */
export function upstreamErrorOf(e: unknown): UpstreamError | null {
  if (!(e instanceof Error)) return null;
  const o = e as unknown as Record<string, unknown>;
  if (!Object.hasOwn(o, 'status') || !Object.hasOwn(o, 'headers') || !Object.hasOwn(o, 'error')) return null;
  const code = typeof o.code === 'string' ? o.code : undefined;
  if (typeof o.status === 'number') return { kind: 'status', status: o.status, body: o.error, code, param: o.param, message: e.message };
  if (o.headers !== undefined || o.error !== undefined) return { kind: 'stream', body: o.error, code, message: e.message };
  const names = classNames(e);
  if (names.includes('APIConnectionTimeoutError') || e.message === SDK_TIMEOUT_MESSAGE) return { kind: 'timeout', message: e.message };
  if (names.includes('APIUserAbortError') || e.message === SDK_ABORT_MESSAGE) return { kind: 'abort', message: e.message };
  return { kind: 'connection', message: e.message, cause: (e as { cause?: unknown }).cause };
}

/** True for aborts of any origin: DOM AbortError/TimeoutError, the SDK's user abort. */
export function isAbortError(e: unknown): boolean {
  if (upstreamErrorOf(e)?.kind === 'abort') return true;
  const name = (e as { name?: unknown } | null)?.name;
  return name === 'AbortError' || name === 'TimeoutError';
}

/** True when the signal was aborted by a deadline (reason is a DOMException named TimeoutError). */
export function isTimeoutSignal(signal: AbortSignal | undefined): boolean {
  return Boolean(signal?.aborted && (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError');
}

function hostOf(baseURL: string | undefined): string {
  if (!baseURL) return 'the model endpoint';
  try {
    // URL.host drops any user:password@ part, so credentials in the URL never leak.
    return new URL(baseURL).host || 'the model endpoint';
  } catch {
    return 'the model endpoint';
  }
}

/** Keys appear in upstream messages ("Incorrect API key provided: sk-ab***cd"); never pass them on. */
export function redact(text: string, apiKey?: string): string {
  let out = text;
  if (apiKey && apiKey !== PLACEHOLDER_API_KEY && apiKey.length >= 4) out = out.split(apiKey).join('[redacted]');
  return out
    .replace(/\b(sk|rk|pk)-[A-Za-z0-9_*-]{3,}/g, '[redacted]')
    .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]');
}

function upstreamMessage(e: { body: unknown; message: string }, apiKey?: string): string {
  const body = e.body as { message?: unknown } | undefined;
  let raw = typeof body?.message === 'string' ? body.message : '';
  if (!raw && typeof e.message === 'string') raw = e.message.replace(/^\d{3}\s*/, '');
  const clean = redact(raw.replace(/\s+/g, ' ').trim(), apiKey);
  return clean.length > UPSTREAM_MESSAGE_MAX ? `${clean.slice(0, UPSTREAM_MESSAGE_MAX)}…` : clean;
}

function causeCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; cur && depth < 6; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

const CONNECTION_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is the server running?)',
  ENOTFOUND: 'host name not found (DNS)',
  EAI_AGAIN: 'host name could not be resolved (DNS)',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'the connection was closed',
  CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its TLS certificate chain is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate could not be verified',
};

// How servers say a model cannot take `tools`: Ollama ("… does not support tools"), OpenAI
// ("tools is not supported in this model", param "tools"), vLLM ("auto" tool choice requires
// --enable-auto-tool-choice …), llama.cpp ("tools param requires --jinja flag"), others.
const NO_TOOLS =
  /does not support tools|tools? (?:is|are) not supported|(?:doesn't|does not|do not) support (?:tools|tool[ _-]?call|function[ _-]?call)|(?:tool|function)[ _-]?call(?:ing|s)? (?:is |are )?not (?:supported|enabled|available)|enable-auto-tool-choice|tool[ _-]?choice requires|tools param requires/i;

/** The clear error for a model that cannot call tools: which profile, which model, what to do. */
export function noToolsError(ctx: Pick<LlmErrorContext, 'profile' | 'model'>, why: string, details: Record<string, unknown> = {}): AppError {
  const who = `${ctx.profile ? `Profile "${ctx.profile}"` : 'The configured model'}${ctx.model ? ` (model "${ctx.model}")` : ''}`;
  return new AppError(
    'E_MODEL_NO_TOOLS',
    `${who} does not handle tool calls, which BMAD agents need to read and write files: ${why} Choose a profile whose model supports function calling (GET /api/models lists them).`,
    { ...details, ...(ctx.profile ? { profile: ctx.profile } : {}), ...(ctx.model ? { model: ctx.model } : {}) },
  );
}

/** A profile of a models file: the fix is there, not in the OPENAI_* variables. */
function fromFile(ctx: LlmErrorContext): boolean {
  return Boolean(ctx.profile);
}

function fromStatus(e: Extract<UpstreamError, { kind: 'status' }>, ctx: LlmErrorContext, host: string): AppError {
  const status = e.status;
  const upstream = upstreamMessage(e, ctx.apiKey);
  const details = { status, host, upstreamCode: e.code ?? undefined };
  const withUpstream = (msg: string) => (upstream ? `${msg} Upstream said: ${upstream}` : msg);
  const param = e.param;
  if (status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 429 && (NO_TOOLS.test(upstream) || param === 'tools')) {
    return noToolsError(ctx, `the endpoint at ${host} refused the request's tools (${status}).${upstream ? ` Upstream said: ${upstream}` : ''}`, details);
  }
  if (status === 401) {
    // The upstream text is dropped on purpose: OpenAI's 401 quotes part of the key.
    const missing = !ctx.apiKey || ctx.apiKey === PLACEHOLDER_API_KEY;
    return new AppError(
      'E_LLM_UPSTREAM',
      missing
        ? `The model endpoint at ${host} requires an API key (401) and none is configured. ${fromFile(ctx) ? `Set apiKeyEnv of profile "${ctx.profile}" in MODELS_FILE and that variable.` : 'Set OPENAI_API_KEY.'}`
        : `The model endpoint at ${host} rejected the API key (401): it is wrong, revoked or for another provider. ${fromFile(ctx) ? `Check the variable apiKeyEnv of profile "${ctx.profile}" names.` : 'Check OPENAI_API_KEY.'}`,
      details,
    );
  }
  if (status === 403) {
    return new AppError(
      'E_LLM_UPSTREAM',
      withUpstream(`The model endpoint at ${host} refused access (403): the API key lacks permission for this model or region.`),
      details,
    );
  }
  if (status === 404) {
    const model = ctx.model ? `Model "${ctx.model}"` : 'The model';
    return new AppError(
      'E_LLM_UPSTREAM',
      withUpstream(
        fromFile(ctx)
          ? `${model} was not found at ${host} (404). Check the model and baseURL (ending in /v1) of profile "${ctx.profile}" in MODELS_FILE.`
          : `${model} was not found at ${host} (404). Check OPENAI_MODEL, and that OPENAI_BASE_URL ends in /v1.`,
      ),
      details,
    );
  }
  if (status === 429) {
    const quota = e.code === 'insufficient_quota' || /quota|billing/i.test(upstream);
    return new AppError(
      'E_LLM_UPSTREAM',
      withUpstream(
        quota
          ? `The model endpoint at ${host} says the account is out of quota (429). Check the plan and billing.`
          : `The model endpoint at ${host} is rate limiting requests (429). Wait a moment and try again.`,
      ),
      details,
    );
  }
  if (status === 400 || status === 422) {
    return new AppError('E_LLM_UPSTREAM', withUpstream(`The model endpoint at ${host} rejected the request (${status}).`), details);
  }
  if (status >= 500) {
    return new AppError('E_LLM_UPSTREAM', withUpstream(`The model endpoint at ${host} failed (${status}). Try again later.`), details);
  }
  return new AppError('E_LLM_UPSTREAM', withUpstream(`The model endpoint at ${host} answered with HTTP ${status}.`), details);
}

/**
 * Turns anything a model call can throw into an AppError a user can act on: which host, which
 * model, what went wrong. Never includes the API key (redacted even when upstream echoes it).
 * Deadlines become E_LLM_TIMEOUT; everything else is E_LLM_UPSTREAM. The second argument may be
 * just the call's signal.
 */
export function mapLlmError(e: unknown, context?: AbortSignal | LlmErrorContext): AppError {
  if (isAppError(e)) return e;
  const ctx: LlmErrorContext = context instanceof AbortSignal ? { signal: context } : (context ?? {});
  const host = hostOf(ctx.baseURL);

  const upstream = upstreamErrorOf(e);

  if (isTimeoutSignal(ctx.signal) || upstream?.kind === 'timeout' || (e as { name?: unknown })?.name === 'TimeoutError') {
    return new AppError('E_LLM_TIMEOUT', `The model at ${host} did not answer in time.`, { host });
  }
  if (isAbortError(e) || ctx.signal?.aborted) {
    return new AppError('E_LLM_UPSTREAM', 'The model request was cancelled.', { host, aborted: true });
  }
  if (upstream?.kind === 'connection') {
    const code = causeCode(upstream.cause);
    const reason = (code && CONNECTION_REASONS[code]) ?? 'the connection failed';
    return new AppError('E_LLM_UPSTREAM', `Could not reach the model endpoint at ${host}: ${reason}. ${fromFile(ctx) ? `Check baseURL of profile "${ctx.profile}" in MODELS_FILE.` : 'Check OPENAI_BASE_URL.'}`, {
      host,
      cause: code,
    });
  }
  if (upstream?.kind === 'status') return fromStatus(upstream, ctx, host);
  if (upstream?.kind === 'stream') {
    const said = upstreamMessage(upstream, ctx.apiKey);
    return new AppError('E_LLM_UPSTREAM', `The model endpoint at ${host} reported an error mid-answer${said ? `: ${said}` : '.'}`, {
      host,
      upstreamCode: upstream.code ?? undefined,
    });
  }
  if (e instanceof SyntaxError) {
    return new AppError('E_LLM_UPSTREAM', `The model endpoint at ${host} sent a malformed streaming chunk (not JSON).`, { host });
  }
  const code = causeCode(e);
  const message = e instanceof Error ? e.message : String(e);
  if (code || /terminated|socket|other side closed/i.test(message)) {
    const reason = (code && CONNECTION_REASONS[code]) ?? 'the connection was lost';
    return new AppError('E_LLM_UPSTREAM', `The connection to the model endpoint at ${host} broke mid-answer: ${reason}.`, { host, cause: code });
  }
  return new AppError('E_LLM_UPSTREAM', `Calling the model at ${host} failed: ${redact(message, ctx.apiKey).slice(0, UPSTREAM_MESSAGE_MAX)}`, { host });
}

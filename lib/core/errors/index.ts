/** Error codes of the REST API (`{ success: false, error, code }`). */
export type ApiErrorCode =
  | 'E_VALIDATION'
  | 'E_UNAUTHENTICATED'
  | 'E_FORBIDDEN'
  | 'E_RATE_LIMITED'
  | 'E_CONFLICT'
  | 'E_NOT_HEADLESS'
  | 'E_NOT_FOUND'
  | 'E_AGENT_NOT_FOUND'
  | 'E_PROJECT_NOT_FOUND'
  | 'E_PROJECT_EXISTS'
  | 'E_INSTALL_FAILED'
  | 'E_CONVERSATION_NOT_FOUND'
  | 'E_FILE_NOT_FOUND'
  | 'E_CONVERSATION_BUSY'
  | 'E_TOO_LARGE'
  | 'E_SANDBOX_VIOLATION'
  | 'E_CRITICAL_ACTION'
  | 'E_CONTEXT_TOO_LARGE'
  | 'E_MODEL_NO_TOOLS'
  | 'E_LLM_UPSTREAM'
  | 'E_LLM_NOT_CONFIGURED'
  | 'E_LLM_TIMEOUT'
  | 'E_INTERNAL'
  | 'E_BUILD_DISABLED'
  | 'E_MERGE_CONFLICT'
  | 'E_BASE_DIRTY'
  | 'E_WORKSPACE_NOT_FOUND'
  | 'E_NOT_A_REPOSITORY'
  | 'E_STORY_NOT_FOUND'
  | 'E_SPRINT_STATUS_INVALID'
  | 'E_STORY_BUSY'
  | 'E_BUDGET'
  /** An OpenAI-compatible request named a model (an agent) the caller may not use, or none there is. */
  | 'E_MODEL_NOT_FOUND'
  | 'E_SECRETS_NOT_CONFIGURED'
  | 'E_REMOTE_URL'
  | 'E_REMOTE_AUTH'
  | 'E_REMOTE_NOT_FOUND'
  | 'E_REMOTE_UNREACHABLE'
  | 'E_REMOTE_REJECTED'
  | 'E_REMOTE_DIVERGED'
  | 'E_REMOTE_CONFIG'
  | 'E_GIT_LOCKED';

const STATUS: Record<ApiErrorCode, number> = {
  E_VALIDATION: 400,
  E_UNAUTHENTICATED: 401,
  E_FORBIDDEN: 403,
  E_RATE_LIMITED: 429,
  E_CONFLICT: 409,
  E_NOT_HEADLESS: 422,
  E_SANDBOX_VIOLATION: 400,
  E_NOT_FOUND: 404,
  E_AGENT_NOT_FOUND: 404,
  E_PROJECT_NOT_FOUND: 404,
  E_PROJECT_EXISTS: 409,
  E_INSTALL_FAILED: 500,
  E_CONVERSATION_NOT_FOUND: 404,
  E_FILE_NOT_FOUND: 404,
  E_CONVERSATION_BUSY: 409,
  E_TOO_LARGE: 413,
  E_CRITICAL_ACTION: 422,
  E_CONTEXT_TOO_LARGE: 422,
  E_MODEL_NO_TOOLS: 422,
  E_LLM_UPSTREAM: 502,
  E_LLM_NOT_CONFIGURED: 503,
  E_LLM_TIMEOUT: 504,
  E_INTERNAL: 500,
  E_BUILD_DISABLED: 409,
  E_MERGE_CONFLICT: 409,
  E_BASE_DIRTY: 409,
  E_WORKSPACE_NOT_FOUND: 404,
  // The project's state, not the request's shape: the same request works once it is a repository.
  E_NOT_A_REPOSITORY: 409,
  E_STORY_NOT_FOUND: 404,
  // The file on the base branch is broken or too big: fixed in the repository, not in the request.
  E_SPRINT_STATUS_INVALID: 409,
  // A run of the story is queued or running: one build of a story at a time.
  E_STORY_BUSY: 409,
  // A run refused or stopped because its budget, or its project's month, is spent.
  E_BUDGET: 402,
  E_MODEL_NOT_FOUND: 404,
  // The server's own configuration (SECRETS_KEY), as E_LLM_NOT_CONFIGURED.
  E_SECRETS_NOT_CONFIGURED: 503,
  // A remote URL the rule refuses (scheme, credentials in it, a private address not listed).
  E_REMOTE_URL: 400,
  // The remote refused the token: not 401, which tells a client that its own credentials to this
  // server failed (and to sign in again); the request was understood, the remote said no.
  E_REMOTE_AUTH: 422,
  E_REMOTE_NOT_FOUND: 404,
  // The remote could not be reached: a gateway's failure, as E_LLM_UPSTREAM.
  E_REMOTE_UNREACHABLE: 502,
  // A push the remote refused (protected, or it kept moving): the remote's state, not the request's.
  E_REMOTE_REJECTED: 409,
  E_REMOTE_DIVERGED: 409,
  // The project repository's own git config says something a remote call cannot run with (url rewrites, http settings).
  E_REMOTE_CONFIG: 409,
  // A lock file a crashed git left in the project repository: a person removes it, the request is fine.
  E_GIT_LOCKED: 409,
};

/**
 * A brand for a typed error class that survives separate bundles of its module. The production
 * server loads lib/ more than once (the instrumentation hook builds the runtime in one module
 * graph, each route handler imports its own copy), so an error thrown by the runtime is not an
 * `instanceof` the class a route handler sees. `Symbol.for` is one symbol per process, whichever
 * copy asks: errors are told apart by it, never by `instanceof`.
 */
export interface ErrorBrand {
  /** Marks an instance; call it in the constructor. */
  mark(e: object): void;
  /** Whether `e` was marked by any copy of the class. */
  has(e: unknown): boolean;
}

export function errorBrand(name: string): ErrorBrand {
  const key = Symbol.for(`bmad-orchestrator.${name}`);
  return {
    mark(e) {
      Object.defineProperty(e, key, { value: true, enumerable: false });
    },
    has(e) {
      return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[key] === true;
    },
  };
}

const APP_ERROR = errorBrand('app-error');

/** A failure that reaches the edge of the app; its message is safe to show (no absolute paths). */
export class AppError extends Error {
  readonly code: ApiErrorCode;
  readonly status: number;
  readonly details?: Record<string, unknown>;

  constructor(code: ApiErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = STATUS[code];
    this.details = details;
    APP_ERROR.mark(this);
  }
}

/**
 * True for an AppError made by any copy of this module (see errorBrand): the one way to recognise
 * one. The brand is checked with the fields every handler reads, so a marked object with no code
 * or status is not taken for one.
 */
export function isAppError(e: unknown): e is AppError {
  if (!APP_ERROR.has(e)) return false;
  const { code, status, message } = e as { code?: unknown; status?: unknown; message?: unknown };
  return typeof code === 'string' && /^E_[A-Z0-9_]+$/.test(code) && Number.isInteger(status) && typeof message === 'string';
}

export function statusOf(code: ApiErrorCode): number {
  return STATUS[code];
}

import { createHash } from 'node:crypto';

/**
 * The result vocabulary every room shares: tools return these values, and the sandbox, the audit
 * log and the workflow loader produce or read them. A leaf, so lower rooms never import tools.
 */

/** Codes a tool failure may carry (see the brief). */
export type ToolErrorCode =
  | 'ENOENT'
  | 'EISDIR'
  | 'ENOTDIR'
  | 'E_BINARY'
  | 'E_SANDBOX_VIOLATION'
  | 'E_READ_ONLY'
  | 'E_READ_LIMIT'
  | 'E_WRITE_LIMIT'
  | 'E_INVALID_ARGS'
  /** A call's arguments passed the cap on what a model may send in one call; it did not run. */
  | 'E_ARGS_TOO_LARGE'
  | 'E_UNKNOWN_TOOL'
  | 'E_NO_MATCH'
  | 'E_AMBIGUOUS_MATCH'
  | 'E_PRECONDITION_FAILED'
  /** A shared document changed outside this conversation since it last read or wrote it. */
  | 'E_STALE'
  | 'E_INVALID_FRONTMATTER'
  | 'E_INVALID_YAML'
  | 'E_UNRESOLVED_VARIABLE'
  | 'E_ABORTED'
  /** A subagent used up its model calls before it answered. */
  | 'E_SUBAGENT_LIMIT'
  /** A subagent's model call failed (upstream error). */
  | 'E_SUBAGENT_FAILED'
  /** The server lacks what the call needs (a sandbox, an interpreter, a package): the caller's fallback applies. */
  | 'E_UNAVAILABLE'
  /** A call ran past its time limit (an external tool's `timeoutMs`). */
  | 'E_TIMEOUT'
  /** An external (MCP) tool answered with an error of its own. */
  | 'E_EXTERNAL_TOOL'
  | 'E_INTERNAL';

export interface ToolFailure {
  ok: false;
  error: { code: ToolErrorCode; message: string; details?: Record<string, unknown> };
  /** Virtual path, when one is known. */
  path?: string;
}

export type ToolSuccess = { ok: true } & Record<string, unknown>;
export type ToolResult = ToolSuccess | ToolFailure;

export function fail(
  code: ToolErrorCode,
  message: string,
  extra?: { path?: string; details?: Record<string, unknown> },
): ToolFailure {
  const failure: ToolFailure = { ok: false, error: { code, message } };
  if (extra?.details) failure.error.details = extra.details;
  if (extra?.path) failure.path = extra.path;
  return failure;
}

export function isFailure(value: unknown): value is ToolFailure {
  return typeof value === 'object' && value !== null && (value as { ok?: unknown }).ok === false;
}

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * How much a builder's problem matters: `error` leaves an agent or a command unusable, `warning`
 * works but not as written (a value left unresolved, an optional file missing, a fallback used),
 * `note` is worth knowing and needs no fix (a value a workflow sets itself while it runs).
 */
export type Severity = 'error' | 'warning' | 'note';

/** One thing a builder should look at, in a file named relative to the folder checked. */
export interface Problem {
  file: string;
  severity: Severity;
  reason: string;
  /** The agent (and its menu command) the problem was found through, where there is one. */
  agent?: string;
  command?: string;
}

/** A problem as one line: `<file>: <severity>: <reason>`. */
export function problemLine(p: Problem): string {
  return `${p.file}: ${p.severity}: ${p.reason}`;
}

/**
 * Fields of a tool result kept for people only: stored with the result and shown in the browser,
 * never sent to the model nor counted as its tokens (run_command's `transcript`, its output in
 * the order it came, raw).
 */
export const DISPLAY_ONLY_FIELDS: readonly string[] = ['transcript'];

/** A tool result as the model gets it: without the display-only fields (the same object when it has none). */
export function modelView<T>(result: T): T {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return result;
  if (!DISPLAY_ONLY_FIELDS.some((k) => k in result)) return result;
  const out: Record<string, unknown> = { ...(result as Record<string, unknown>) };
  for (const k of DISPLAY_ONLY_FIELDS) delete out[k];
  return out as T;
}

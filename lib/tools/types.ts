import type { AuditLog } from '../audit';
import type { ToolLimits } from '../config';

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
  | 'E_UNKNOWN_TOOL'
  | 'E_NO_MATCH'
  | 'E_AMBIGUOUS_MATCH'
  | 'E_PRECONDITION_FAILED'
  | 'E_INVALID_FRONTMATTER'
  | 'E_INVALID_YAML'
  | 'E_UNRESOLVED_VARIABLE'
  | 'E_ABORTED'
  | 'E_INTERNAL';

export interface ToolFailure {
  ok: false;
  error: { code: ToolErrorCode; message: string; details?: Record<string, unknown> };
  /** Virtual path, when one is known. */
  path?: string;
}

export type ToolSuccess = { ok: true } & Record<string, unknown>;
export type ToolResult = ToolSuccess | ToolFailure;

/** Everything a tool may touch for one call. Absolute paths stay on the server side of this object. */
export interface ToolContext {
  conversationId: string;
  agentId: string;
  /** Absolute roots of the mounts. */
  bundleRoot: string;
  coreRoot: string;
  projectRoot: string;
  /** The conversation's output folder: OUTPUT_PATH/<conversationId>. */
  outputRoot: string;
  /** Variables from the agent's loaded config (user_name, ...), plus date. */
  variables: Record<string, string>;
  limits: ToolLimits;
  /** Folder for audit logs (one JSONL file per conversation); outside every mount. */
  auditDir?: string;
  /** The conversation's audit file held open for a turn; without it each line opens the file. */
  audit?: AuditLog;
  signal?: AbortSignal;
}

/** A tool call as the model sent it; `arguments` is the raw JSON text. */
export interface ToolCallRequest {
  id: string;
  name: string;
  arguments: string;
}

/** OpenAI function tool definition (chat completions `tools[]`). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

import type { AuditLog } from '../audit';
import type { ToolLimits } from '../config';
import type { PathContext } from '../paths';

/** Everything a tool may touch for one call. Absolute paths stay on the server side of this object. */
export interface ToolContext extends PathContext {
  conversationId: string;
  agentId: string;
  limits: ToolLimits;
  /** Folder for audit logs (one JSONL file per conversation); outside every mount. */
  auditDir?: string;
  /** The conversation's audit file held open for a turn; without it each line opens the file. */
  audit?: AuditLog;
  signal?: AbortSignal;
}

import type { AuditLog } from '../../store/audit';
import type { CommandSettings, ScriptSettings, ToolLimits } from '../../core/config';
import type { PathContext } from '../../core/paths';
import type { ToolFailure, ToolResult } from '../../core/results';

/** One successful write of a write tool, as `recordWrite` receives it. */
export interface WriteRecord {
  /** What results show, e.g. `{output_folder}/prd.md`. */
  virtualPath: string;
  /** The real absolute path written (server side only). */
  abs: string;
  /** The bytes now in the file. */
  content: Buffer;
  sha256: string;
  /** save_output, edit_file or apply_patch. */
  tool: string;
  /**
   * The file's bytes just before this write, read under the same lock: null when it did not
   * exist; undefined when unknown (larger than a write tool reads back). Lets a version store keep
   * a document it never saw written (put there by hand) before it is replaced.
   */
  previous?: Buffer | null;
}

/**
 * What a conversation last saw of the files it shares with others (a project's documents), so an
 * agent never silently overwrites a change made by a person or another conversation.
 */
export interface FileFreshness {
  /**
   * Called under the file's write lock before a write replaces an existing file, with the sha256
   * of the content about to be replaced: an `E_STALE` failure when that content changed outside
   * this conversation since it last read or wrote the file, null when the write may go ahead.
   */
  check(target: { abs: string; virtual: string }, currentSha256: string): Promise<ToolFailure | null>;
  /** The conversation now knows this content of the file: it read or wrote it. */
  saw(abs: string, sha256: string): void;
}

/** A focused sub-task for a subagent: what spawn_subagent asks of `ToolContext.subagent`. */
export interface SubagentRequest {
  /** What to do; the subagent's whole brief. */
  instructions: string;
  /** Material to work on (the subagent's first message). */
  input?: string;
  /** At most this many model calls; never more than the turn has left. */
  maxSteps?: number;
}

/**
 * Runs a subagent: a bounded nested loop with the same tools and sandbox, whose model calls and
 * tokens count in the turn's. Resolves with the tool result the model gets; never throws.
 */
export type SubagentRunner = (request: SubagentRequest, signal?: AbortSignal) => Promise<ToolResult>;

/**
 * A tool known only at run time (an MCP server's): its JSON schema comes from its owner, who also
 * validates the arguments. It runs through the same `runToolCall` as the static tools: abort, its
 * time limit, the result size cap, one audit line and one log line.
 */
export interface DynamicTool {
  /** The OpenAI function name (`^[a-zA-Z0-9_-]{1,64}$`). */
  name: string;
  description: string;
  /** JSON schema of the arguments, sent to the model as given. */
  parameters: Record<string, unknown>;
  /** The call's time limit: past it the call is aborted and the model gets an E_TIMEOUT naming it. */
  timeoutMs: number;
  /** Where it comes from, for log and audit lines (e.g. `{ server, serverTool }`); never argument values. */
  origin: Record<string, string>;
  /** Resolves with the tool's result; rejections become E_INTERNAL. `signal` aborts at a stop or the time limit. */
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolResult>;
}

/**
 * A turn in a workspace of a project with build enabled: what run_command needs. Set by the chat
 * service; without it run_command is neither offered nor run.
 */
export interface CommandContext {
  /** The workspace's checkout (the top of its repository); `{project-root}` is it or a folder in it. */
  checkout: string;
  /** COMMAND_* settings. */
  settings: CommandSettings;
  /** The project's build variables (never secrets). */
  env?: Record<string, string>;
  /** Author and committer of commits made by commands: the person the turn is for. */
  gitIdentity?: { name: string; email: string };
  /**
   * Called after every command that ran (e.g. the workspace's sync of its branch into the project
   * repository). A failure is logged and said in the result; the command's outcome stands.
   */
  afterCommand?(): Promise<void>;
}

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
  /** How run_script finds bubblewrap and python3, and its limits; the server's defaults when absent. */
  scripts?: ScriptSettings;
  /**
   * Called after each successful write of save_output, edit_file and apply_patch, awaited while
   * the file's write lock is still held, so records of one file arrive in the order the writes
   * happened. The write has already landed: a hook that throws or takes longer than a few seconds
   * is logged and the tool still succeeds (failing it would make the model redo a write that
   * happened); a version store keeps the gap visible by recording the next write's `previous`
   * as an untracked version.
   */
  recordWrite?(write: WriteRecord): Promise<void>;
  /** Set in a project: write tools refuse to replace a document that changed outside the conversation. */
  freshness?: FileFreshness;
  /**
   * Provided by the chat service, which owns the model and the loop (a tool never does). Absent
   * inside a subagent, so a subagent cannot spawn another.
   */
  subagent?: SubagentRunner;
  /** Set in a workspace of a project with build enabled: run_command is offered and runs there. */
  commands?: CommandContext;
  /** Tools of this conversation beyond the static ones (its MCP servers'), by function name. */
  dynamicTools?: ReadonlyMap<string, DynamicTool>;
  /**
   * Takes work that outlives the call's answer: a tool a stop stopped waiting for, which still
   * finishes its write and its version, or a version record past its time limit. The server's
   * close waits for it, so a shutdown never cuts a write in half nor leaves one behind it.
   */
  track?(work: Promise<unknown>): void;
}

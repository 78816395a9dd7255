import { log } from '../../core/log';
import { hashResolved, readResolved, resolvePath, withFileLock, writeFileAtomic, type ResolvedPath, type WriteOutcome } from '../../core/paths';
import { byteLength, fail, isFailure, sha256 } from '../../core/results';
import type { ToolFailure, ToolResult } from '../../core/results';
import type { ToolContext } from './types';

/** A hook slower than this no longer holds the file: the write is done, later writers must not queue behind it. */
const RECORD_TIMEOUT_MS = 10_000;
/** The largest previous content handed to `recordWrite`; a bigger file (a document the user put there) is passed as unknown. */
const MAX_PREVIOUS_BYTES = 16 * 1024 * 1024;
const MAX_RESOLVE_ATTEMPTS = 3;

/**
 * Runs one write tool's read-check-write alone on its file: two calls on one file (from one turn
 * or two conversations sharing a folder) never interleave, so an if-match check or an edit always
 * sees the content it replaces. The lock is keyed by the real path; the path is resolved again
 * once the lock is held, as the file may have appeared, vanished or been moved while waiting.
 */
export async function underWriteLock(filePath: string, ctx: ToolContext, body: (target: ResolvedPath) => Promise<ToolResult>): Promise<ToolResult> {
  for (let attempt = 0; attempt < MAX_RESOLVE_ATTEMPTS; attempt++) {
    const first = await resolvePath(filePath, ctx, 'write');
    if (!first.ok) return first;
    const result = await withFileLock(first.abs, async (): Promise<ToolResult | 'moved'> => {
      if (ctx.signal?.aborted) return fail('E_ABORTED', 'Stopped');
      const target = await resolvePath(filePath, ctx, 'write');
      if (!target.ok) return target;
      if (target.abs !== first.abs) return 'moved';
      return body(target);
    });
    if (result !== 'moved') return result;
  }
  return fail('E_INTERNAL', `${filePath} kept changing while waiting to be written; try again`);
}

/**
 * An existing file of the output folder, read whole for an in-place change. Files above the write
 * limit are refused: the change could never be written back.
 */
export async function readForEdit(target: ResolvedPath, ctx: ToolContext): Promise<Buffer | ToolFailure> {
  if (!target.exists) return fail('ENOENT', `Not found: ${target.virtual}; create it with save_output first`, { path: target.virtual });
  if (target.kind === 'directory') return fail('EISDIR', `${target.virtual} is a folder`, { path: target.virtual });
  const raw = await readResolved(target, ctx.limits.maxWriteBytes);
  if (isFailure(raw) && raw.error.code === 'E_READ_LIMIT') {
    return fail('E_WRITE_LIMIT', `${target.virtual} is larger than the write limit (${ctx.limits.maxWriteBytes} bytes)`, { path: target.virtual });
  }
  return raw;
}

/** The file's bytes before a replacing write, for `recordWrite` only: null when absent, undefined when too large to pass on. */
export async function readPrevious(target: ResolvedPath, ctx: ToolContext): Promise<Buffer | null | undefined | ToolFailure> {
  if (!ctx.recordWrite || !target.exists) return ctx.recordWrite ? null : undefined;
  if (target.kind === 'directory') return fail('EISDIR', `${target.virtual} is a folder, not a file`, { path: target.virtual });
  const raw = await readResolved(target, MAX_PREVIOUS_BYTES);
  if (!isFailure(raw)) return raw;
  if (raw.error.code === 'ENOENT') return null;
  if (raw.error.code === 'E_READ_LIMIT') return undefined;
  return raw;
}

/**
 * Refuses to replace a file that changed outside the conversation since it last read or wrote it
 * (`ToolContext.freshness`; E_STALE). `current` is the content about to be replaced when the
 * caller read it already (undefined: hashed here). A new file is always fine.
 */
export async function checkFresh(target: ResolvedPath, ctx: ToolContext, current: Buffer | null | undefined): Promise<ToolFailure | null> {
  if (!ctx.freshness || !target.exists || current === null) return null;
  const sha = current === undefined ? await hashResolved(target) : sha256(current);
  if (isFailure(sha)) return sha;
  if (sha === null) return null;
  return ctx.freshness.check({ abs: target.abs, virtual: target.virtual }, sha);
}

/**
 * Writes a file atomically and hands the write to `recordWrite`; runs under the file's write lock.
 * The hook's failure is logged, never returned: the bytes are on disk.
 */
export async function writeAndRecord(
  target: ResolvedPath,
  data: Buffer,
  ctx: ToolContext,
  tool: string,
  previous: Buffer | null | undefined,
): Promise<WriteOutcome | ToolFailure> {
  const written = await writeFileAtomic(target, data);
  if (!isFailure(written)) ctx.freshness?.saw(target.abs, written.sha256);
  if (isFailure(written) || !ctx.recordWrite) return written;
  let timer: NodeJS.Timeout | undefined;
  const recording = Promise.resolve().then(() =>
    ctx.recordWrite!({ virtualPath: target.virtual, abs: target.abs, content: data, sha256: written.sha256, tool, previous }),
  );
  ctx.track?.(recording);
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), RECORD_TIMEOUT_MS);
    timer.unref?.();
  });
  try {
    if ((await Promise.race([recording, timeout])) === 'timeout') {
      log.warn('tool.record_write_slow', { conversationId: ctx.conversationId, agent: ctx.agentId, tool, timeoutMs: RECORD_TIMEOUT_MS });
      recording.catch((e) => logRecordFailure(ctx, tool, e));
    }
  } catch (e) {
    logRecordFailure(ctx, tool, e);
  } finally {
    clearTimeout(timer);
  }
  return written;
}

function logRecordFailure(ctx: ToolContext, tool: string, e: unknown): void {
  log.error('tool.record_write_failed', {
    conversationId: ctx.conversationId,
    agent: ctx.agentId,
    tool,
    error: e instanceof Error ? e.name : 'unknown',
    code: typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : undefined,
  });
}

/** Writes an edited file back atomically, within the write limit. `what` names the change in the error. */
export async function writeBack(
  target: ResolvedPath,
  text: string,
  ctx: ToolContext,
  what: 'edited' | 'patched',
  tool: string,
  previous: Buffer,
): Promise<{ sha256: string } | ToolFailure> {
  const size = byteLength(text);
  if (size > ctx.limits.maxWriteBytes) {
    return fail('E_WRITE_LIMIT', `The ${what} file would be ${size} bytes; the write limit is ${ctx.limits.maxWriteBytes}`, { path: target.virtual });
  }
  if (ctx.signal?.aborted) return fail('E_ABORTED', 'Stopped');
  const stale = await checkFresh(target, ctx, previous);
  if (stale) return stale;
  return writeAndRecord(target, Buffer.from(text, 'utf8'), ctx, tool, previous);
}

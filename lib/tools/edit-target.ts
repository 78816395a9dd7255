import { readResolved, resolvePath, writeFileAtomic, type ResolvedPath } from '../paths';
import { byteLength, fail, isFailure } from '../results';
import type { ToolFailure } from '../results';
import type { ToolContext } from './types';

/**
 * An existing file of the output folder, read whole for an in-place change. Files above the write
 * limit are refused: the change could never be written back.
 */
export async function readForEdit(filePath: string, ctx: ToolContext): Promise<{ target: ResolvedPath; raw: Buffer } | ToolFailure> {
  const target = await resolvePath(filePath, ctx, 'write');
  if (!target.ok) return target;
  if (!target.exists) return fail('ENOENT', `Not found: ${target.virtual}; create it with save_output first`, { path: target.virtual });
  if (target.kind === 'directory') return fail('EISDIR', `${target.virtual} is a folder`, { path: target.virtual });
  const raw = await readResolved(target, ctx.limits.maxWriteBytes);
  if (isFailure(raw)) {
    if (raw.error.code === 'E_READ_LIMIT') {
      return fail('E_WRITE_LIMIT', `${target.virtual} is larger than the write limit (${ctx.limits.maxWriteBytes} bytes)`, { path: target.virtual });
    }
    return raw;
  }
  return { target, raw };
}

/** Writes an edited file back atomically, within the write limit. `what` names the change in the error. */
export async function writeBack(target: ResolvedPath, text: string, ctx: ToolContext, what: 'edited' | 'patched'): Promise<{ sha256: string } | ToolFailure> {
  const size = byteLength(text);
  if (size > ctx.limits.maxWriteBytes) {
    return fail('E_WRITE_LIMIT', `The ${what} file would be ${size} bytes; the write limit is ${ctx.limits.maxWriteBytes}`, { path: target.virtual });
  }
  if (ctx.signal?.aborted) return fail('E_ABORTED', 'Stopped');
  return writeFileAtomic(target, Buffer.from(text, 'utf8'));
}

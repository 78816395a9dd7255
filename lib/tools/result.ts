import { createHash } from 'node:crypto';
import type { ToolErrorCode, ToolFailure } from './types';

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

import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../core/errors';
import { isValidConversationId } from '../conversations/ids';
import { sha256, type ToolResult } from '../../core/results';

export interface AuditEntry {
  ts: string;
  kind: 'tool.exec';
  conversationId: string;
  toolCallId: string;
  toolName: string;
  agentId: string;
  input: unknown;
  output: Record<string, unknown>;
  durationMs: number;
  /** Sandbox rejections only: which mount, the normalised virtual path (when known) and why. */
  mount?: string;
  path?: string;
  reason?: string;
  /** With accounts: the person (or token) whose turn made the call. */
  by?: string;
}

const MAX_INLINE_CHARS = 200;
const PREVIEW_CHARS = 80;
const MAX_DEPTH = 3;
/** Keys that hold file text: summarised whatever their length, so the log never keeps a document. */
const CONTENT_KEYS = new Set(['content', 'diff', 'text', 'new_text', 'old_text', 'before', 'after', 'stdout', 'stderr']);

export function auditFile(auditDir: string, conversationId: string): string {
  if (!isValidConversationId(conversationId)) throw new AppError('E_VALIDATION', 'conversationId is not a safe identifier');
  return path.join(auditDir, `${conversationId}.jsonl`);
}

export interface TextSummary {
  length: number;
  sha256: string;
  preview: string;
}

export function summarizeText(text: string, previewChars = PREVIEW_CHARS): TextSummary {
  return { length: text.length, sha256: sha256(text), preview: text.length > previewChars ? `${text.slice(0, previewChars)}…` : text };
}

function summarize(value: unknown, key: string | undefined, depth: number): unknown {
  if (typeof value === 'string') {
    if ((key && CONTENT_KEYS.has(key)) || value.length > MAX_INLINE_CHARS) return summarizeText(value);
    return value;
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    if (depth >= 1) return { count: value.length };
    return value.length <= 10 && value.every((v) => typeof v !== 'object' || v === null)
      ? value.map((v) => summarize(v, key, depth + 1))
      : { count: value.length };
  }
  if (depth >= MAX_DEPTH) return { keys: Object.keys(value).length };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = summarize(v, k, depth + 1);
  return out;
}

/** Tool arguments as they can be kept: long strings become length + sha256 + a short preview. */
export function summarizeInput(input: unknown): unknown {
  return summarize(input, undefined, 0);
}

/** Outcome, sizes and hashes of a tool result; never whole file contents. */
export function summarizeOutput(result: ToolResult): Record<string, unknown> {
  if (!result.ok) {
    const out: Record<string, unknown> = {
      ok: false,
      code: result.error.code,
      message: result.error.message.length > 300 ? `${result.error.message.slice(0, 300)}…` : result.error.message,
    };
    if (result.path) out.path = result.path;
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result)) out[k] = summarize(v, k, 1);
  return out;
}

export interface AuditRecordInput {
  conversationId: string;
  toolCallId: string;
  toolName: string;
  agentId: string;
  input: unknown;
  result: ToolResult;
  durationMs: number;
  ts?: Date;
}

export function buildAuditEntry(rec: AuditRecordInput): AuditEntry {
  const entry: AuditEntry = {
    ts: (rec.ts ?? new Date()).toISOString(),
    kind: 'tool.exec',
    conversationId: rec.conversationId,
    toolCallId: rec.toolCallId,
    toolName: rec.toolName,
    agentId: rec.agentId,
    input: summarizeInput(rec.input),
    output: summarizeOutput(rec.result),
    durationMs: Math.round(rec.durationMs * 1000) / 1000,
  };
  if (!rec.result.ok) {
    const details = rec.result.error.details ?? {};
    if (typeof details.mount === 'string') entry.mount = details.mount;
    if (typeof details.reason === 'string') entry.reason = details.reason;
    const virtualPath = rec.result.path ?? (typeof details.virtual === 'string' ? details.virtual : undefined);
    if (virtualPath && (entry.mount || entry.reason)) entry.path = virtualPath;
  }
  return entry;
}

const readyDirs = new Set<string>();

async function ensureDir(auditDir: string): Promise<void> {
  if (readyDirs.has(auditDir)) return;
  await fs.mkdir(auditDir, { recursive: true });
  readyDirs.add(auditDir);
}

/** One line per call, written with a single append so parallel calls never interleave. */
export async function appendAudit(auditDir: string, entry: AuditEntry): Promise<void> {
  const file = auditFile(auditDir, entry.conversationId);
  await ensureDir(auditDir);
  const line = `${JSON.stringify(entry)}\n`;
  try {
    await fs.appendFile(file, line, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    readyDirs.delete(auditDir);
    await fs.mkdir(auditDir, { recursive: true });
    await fs.appendFile(file, line, 'utf8');
  }
}

/** A conversation's audit file, held open while a turn writes to it. */
export interface AuditLog {
  append(entry: AuditEntry): Promise<void>;
  /** Later appends still land (path by path); the open file is only given back. */
  close(): Promise<void>;
}

/**
 * Opens lazily, then writes each line with one O_APPEND write: a turn's calls cost one write each
 * instead of an open, a write and a close (three thread-pool round trips). Lines are written before
 * the call's result is returned, as with `appendAudit`; any failure of the open file falls back to it.
 */
export function openAuditLog(auditDir: string, conversationId: string, by?: string): AuditLog {
  const file = auditFile(auditDir, conversationId);
  let handle: Promise<FileHandle | null> | null = null;
  let closed = false;
  const open = async (): Promise<FileHandle | null> => {
    try {
      await ensureDir(auditDir);
      return await fs.open(file, 'a');
    } catch {
      return null;
    }
  };
  return {
    async append(stamped) {
      // Every line of a turn names who the turn is for.
      const entry = by && !stamped.by ? { ...stamped, by } : stamped;
      if (entry.conversationId !== conversationId) return appendAudit(auditDir, entry);
      if (!closed) handle ??= open();
      const h = closed ? null : await handle;
      if (!h) return appendAudit(auditDir, entry);
      try {
        await h.write(`${JSON.stringify(entry)}\n`, null, 'utf8');
      } catch {
        await appendAudit(auditDir, entry);
      }
    },
    async close() {
      closed = true;
      const h = await handle;
      handle = null;
      await h?.close().catch(() => undefined);
    },
  };
}

/** Entries oldest first; a torn last line (a crash mid-append) is skipped. */
export async function readAudit(auditDir: string, conversationId: string): Promise<AuditEntry[]> {
  const file = auditFile(auditDir, conversationId);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const entries: AuditEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      entries.push(JSON.parse(line) as AuditEntry);
    } catch {
      // torn or foreign line
    }
  }
  return entries;
}

export async function deleteAudit(auditDir: string, conversationId: string): Promise<void> {
  const file = auditFile(auditDir, conversationId);
  await fs.unlink(file).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
}
